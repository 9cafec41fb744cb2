"""The TCP server's secret: made at start, printed, and kept in a file only its user can read.

Every process on the machine can connect to a loopback port; on a shared login node that is every
other user. A TCP server therefore serves only clients that present its secret (the argument
`secret` of launch, attach or initialize; see Dispatcher.require_secret). The secret is new at
each start; the file (default ~/.aspace-dap/port-PORT.secret) is where configurations read it:
written owner-only (0600) into a folder only its owner may change, replaced atomically, removed
when the server exits.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from ..tempfiles import remove_at_exit

SECRET_FOLDER = "~/.aspace-dap"


class SecretFileError(Exception):
    """The secret cannot be kept where only the user can read it: the server does not start."""


def new_secret() -> str:
    return secrets.token_hex(24)


def default_secret_file(port: int) -> Path:
    return Path(os.path.expanduser(SECRET_FOLDER)) / f"port-{port}.secret"


def _private_folder(folder: Path, create: bool) -> None:
    """`folder` exists (made 0700 if `create`), is ours and no one else may change what is in it."""
    if create:
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise SecretFileError(f"cannot make {folder}: {exc.strerror or exc}") from None
    try:
        info = os.stat(folder)
    except OSError as exc:
        raise SecretFileError(f"cannot use {folder}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise SecretFileError(f"{folder} is not a folder")
    if info.st_uid != os.geteuid():
        raise SecretFileError(f"{folder} belongs to another user")
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise SecretFileError(f"{folder} may be changed by other users (mode {stat.S_IMODE(info.st_mode):o}); "
                              "the secret would not stay yours")


def write_secret_file(path: Path, secret: str, *, default_place: bool) -> None:
    """Write `secret` to `path`, readable by this user only, replacing what was there in one rename."""
    _private_folder(path.parent, create=default_place)
    partial = path.parent / f".{path.name}.{os.getpid()}.partial"
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
            os.write(fd, (secret + "\n").encode())
        finally:
            os.close(fd)
        os.replace(partial, path)
    except OSError as exc:
        try:
            os.unlink(partial)
        except OSError:
            pass
        raise SecretFileError(f"cannot write {path}: {exc.strerror or exc}") from None
    remove_at_exit(str(path))
