"""Resolving the model's paths against the workspace, and showing them back.

Resolution follows symlinks (`Path.resolve`), so the policy judges where a call really lands:
a link inside the workspace that points outside it is outside. Displayed paths are relative
to the workspace when inside it. This module never checks permissions; `Protected` names the
paths whose writes must always ask and the secrets no tool may read, for the policy to apply.
"""

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO, Literal

from magi_code.records import record
from magi_code.tools.base import ToolContext


def resolve(ctx: ToolContext, raw: str) -> Path:
    """The canonical absolute path `raw` names, relative paths taken from the workspace."""
    path = Path(raw)
    if not path.is_absolute():
        path = ctx.workspace / path
    return path.resolve(strict=False)


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


# Under the user's home: files and folders that hold credentials for other programs.
USER_CREDENTIALS = (
    ".ssh",
    ".netrc",
    ".git-credentials",
    ".aws",
    ".config/gh",
    ".docker",
    ".pypirc",
    ".npmrc",
    ".codex",
)
CREDENTIAL_STORE = "credentials.json"  # config/credentials.py keeps it in MC_HOME


@record
class Protected:
    """Writes inside `roots` (and in any `.git` folder) always ask; `secrets` are never read.
    All paths canonical, as the tools resolve theirs."""

    roots: tuple[Path, ...] = ()
    secrets: tuple[Path, ...] = ()

    @classmethod
    def for_homes(cls, mc_home: str, user_home: str | None) -> "Protected":
        """MC_HOME (settings, credential store, session store) and the user's credential files."""
        home = Path(mc_home).resolve()
        roots = [home]
        if user_home:
            roots += [Path(user_home, name).resolve() for name in USER_CREDENTIALS]
        return cls(tuple(roots), (home / CREDENTIAL_STORE,))

    def floor(self, kind: str, path: Path) -> Literal["allow", "ask", "deny"]:
        """The least strict decision a call of `kind` on canonical `path` may get."""
        if kind == "read":
            return "deny" if path in self.secrets else "allow"
        if kind == "write" and (".git" in path.parts or any(inside(path, r) for r in self.roots)):
            return "ask"
        return "allow"


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
