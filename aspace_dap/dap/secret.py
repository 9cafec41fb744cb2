"""The TCP server's secret: made at start, printed, and kept in a file only its user can read.

Every process on the machine can connect to a loopback port; on a shared login node that is every
other user. A TCP server therefore serves only clients that present its secret (the argument
`secret` of launch, attach or initialize; see Dispatcher.require_secret). The secret is new at
each start; the file (default ~/.aspace-dap/port-PORT.secret) is where configurations read it:
written owner-only (0600) into a folder only its owner may change (not a symbolic link, not a sticky
shared folder), replaced atomically, removed when the server exits; one left by a server that was
killed is removed by the next server to start.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import stat
import time
from pathlib import Path

from ..tempfiles import MAKING_GRACE_SECONDS, remove_at_exit

SECRET_FOLDER = "~/.aspace-dap"


class SecretFileError(Exception):
    """The secret cannot be kept where only the user can read it: the server does not start."""


def new_secret() -> str:
    return secrets.token_hex(24)


def default_secret_file(port: int) -> Path:
    return Path(os.path.expanduser(SECRET_FOLDER)) / f"port-{port}.secret"


def _private_folder(folder: Path, create: bool) -> None:
    """`folder` exists (made 0700 if `create`), is a folder itself (not a symbolic link), is ours and no
    one else may change what is in it. A sticky folder others may write (/tmp) is refused as well:
    another user could make the secret file's name there first, and the server could not start."""
    if create:
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise SecretFileError(f"cannot make {folder}: {exc.strerror or exc}") from None
    try:
        info = os.lstat(folder)
    except OSError as exc:
        raise SecretFileError(f"cannot use {folder}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise SecretFileError(f"{folder} is a symbolic link; the secret is kept only in a folder of your own")
    if not stat.S_ISDIR(info.st_mode):
        raise SecretFileError(f"{folder} is not a folder")
    if info.st_uid != os.geteuid():
        raise SecretFileError(f"{folder} belongs to another user")
    if info.st_mode & 0o022:
        raise SecretFileError(f"{folder} may be changed by other users (mode {stat.S_IMODE(info.st_mode):o}); "
                              "the secret would not stay yours")


_held: list[int] = []  # descriptors of this server's secret files, locked while it lives


def write_secret_file(path: Path, secret: str, *, default_place: bool) -> None:
    """Write `secret` to `path`, readable by this user only, replacing what was there in one rename. The
    file stays locked (flock) while the server lives: the next server to write one removes those of
    servers that died without removing theirs (SIGKILL)."""
    _private_folder(path.parent, create=default_place)
    remove_stale_secret_files(path.parent)
    partial = path.parent / f".{path.name}.{os.getpid()}.partial"
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # before it has a name a sweeper looks at
            os.fchmod(fd, 0o600)  # whatever the umask
            os.write(fd, (secret + "\n").encode())
            os.replace(partial, path)
        except OSError:
            os.close(fd)
            raise
        _held.append(fd)
    except OSError as exc:
        try:
            os.unlink(partial)
        except OSError:
            pass
        raise SecretFileError(f"cannot write {path}: {exc.strerror or exc}") from None
    remove_at_exit(str(path))


def remove_stale_secret_files(folder: Path) -> list[str]:
    """Remove the secret files (and half-written ones) in `folder` whose server is gone: no process holds
    their lock. Returns their names."""
    removed = []
    try:
        names = [e.name for e in os.scandir(folder) if e.name.endswith((".secret", ".partial"))
                 and e.is_file(follow_symlinks=False)]
    except OSError:
        return removed
    for name in names:
        full = folder / name
        try:
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            mine = os.fstat(fd)
            now = os.lstat(full)
            if name.endswith(".partial") and time.time() - mine.st_mtime < MAKING_GRACE_SECONDS:
                continue  # maybe being made right now, not locked yet
            if (mine.st_dev, mine.st_ino) == (now.st_dev, now.st_ino) and mine.st_uid == os.geteuid():
                os.unlink(full)  # (still the file whose lock was free: no server replaced it meanwhile)
                removed.append(name)
        except OSError:
            pass  # its server lives (the lock is held), or the file went
        finally:
            os.close(fd)
    return removed
