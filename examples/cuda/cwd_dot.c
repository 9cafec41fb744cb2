/* Preloaded into nvcc (LD_PRELOAD, with PWD=.) by build.sh and real/capture.sh: getcwd() answers ".",
 * so the compiler records a relative compilation directory. nvcc has no -fdebug-prefix-map, and cicc
 * writes the working directory as DW_AT_comp_dir and the line table's directory: with this, the
 * DWARF names `./lds_tiles.cu` and resolves from any clone. Build: cc -shared -fPIC -o cwd_dot.so cwd_dot.c */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
char *getcwd(char *buf, size_t size) {
    if (buf == NULL) {
        size = size ? size : 2;
        if ((buf = malloc(size)) == NULL)
            return NULL;
    }
    if (size < 2) {
        errno = ERANGE;
        return NULL;
    }
    strcpy(buf, ".");
    return buf;
}
