"""Resolving the model's paths against the workspace, and showing them back.

Resolution follows symlinks (`Path.resolve`), so the policy judges where a call really lands:
a link inside the workspace that points outside it is outside. Displayed paths are relative
to the workspace when inside it. This module never checks permissions.
"""

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from magi_code.tools.base import ToolContext


def resolve(ctx: ToolContext, raw: str) -> Path:
    """The canonical absolute path `raw` names, relative paths taken from the workspace."""
    path = Path(raw)
    if not path.is_absolute():
        path = ctx.workspace / path
    return path.resolve(strict=False)


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def display(ctx: ToolContext, path: Path) -> str:
    if inside(path, ctx.workspace):
        return path.relative_to(ctx.workspace).as_posix() or "."
    return path.as_posix()


class NotRegularFile(OSError):
    """A FIFO, socket or device where a regular file was expected."""


def open_regular(path: Path, *, write: bool = False) -> BinaryIO:
    """Open a regular file without blocking on FIFOs or devices, which are refused.

    A worker thread blocked in open(2) on a FIFO could never be cancelled; O_NONBLOCK makes
    that open return at once, and fstat then turns anything irregular away.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC if write else os.O_RDONLY
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, 0o666)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.ENODEV, "not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "wb" if write else "rb")
    except BaseException:
        os.close(fd)
        raise


def os_error_code(error: OSError) -> str:
    """A stable word for the model instead of the exception's text."""
    if isinstance(error, NotRegularFile):
        return "not_a_regular_file"
    codes = {
        errno.ENOENT: "not_found",
        errno.EISDIR: "is_a_directory",
        errno.ENOTDIR: "not_a_directory",
        errno.EACCES: "permission_denied",
        errno.EPERM: "permission_denied",
        errno.EEXIST: "exists",
        errno.ENOSPC: "no_space",
        errno.EROFS: "read_only",
        errno.ENAMETOOLONG: "name_too_long",
        errno.ELOOP: "symlink_loop",
    }
    return codes.get(error.errno or 0, "io_error")
