"""Why a path cannot be read, as the one line the user reads (what, why, what to do)."""

from __future__ import annotations

import errno
import os
import stat


def unreachable(shown: str, path: str, error: OSError) -> str:
    """The sentence for a failed `stat` (or `open`) of ``path``, shown as ``shown``."""
    code = error.errno
    if code == errno.ENOENT and os.path.islink(path):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return f"{shown}: a broken symbolic link (to {target}); fix or remove the link"
    if code == errno.ELOOP:
        return f"{shown}: a symbolic link loop; fix or remove the link"
    if code == errno.ENOENT:
        return f"{shown}: no such file or folder; check the path"
    if code == errno.ENOTDIR:
        return f"{shown}: no such file or folder (a part of the path is a file); check the path"
    if code == errno.ENAMETOOLONG:
        return f"{shown}: the name is too long for the file system; check the path"
    if code in (errno.EACCES, errno.EPERM):
        return (
            f"{shown}: cannot read it ({error.strerror}); check its permissions and those of "
            "the folders above it"
        )
    return f"{shown}: cannot read it ({error.strerror or error}); check the path"


def kind_of(mode: int) -> str:
    """What a file that is neither regular nor a folder is, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "an unusual file"


def not_regular(shown: str, mode: int, advice: str = "name a Python file or a folder") -> str:
    """A FIFO, socket or device where a source file was expected."""
    return f"{shown}: not a regular file ({kind_of(mode)}); {advice}"
