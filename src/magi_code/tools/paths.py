"""Resolving the model's paths against the workspace, and showing them back.

Resolution follows symlinks (`Path.resolve`), so the policy judges where a call really lands:
a link inside the workspace that points outside it is outside. Displayed paths are relative
to the workspace when inside it. This module never checks permissions.
"""

import errno
from pathlib import Path

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


def os_error_code(error: OSError) -> str:
    """A stable word for the model instead of the exception's text."""
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
