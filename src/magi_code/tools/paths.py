"""Resolving the model's paths against the workspace, and showing them back.

Resolution follows symlinks (`Path.resolve`), so the policy judges where a call really lands:
a link inside the workspace that points outside it is outside. Displayed paths are relative
to the workspace when inside it. This module never checks permissions; `Protected` names the
paths whose writes must always ask and the secrets no tool may read, for the policy to apply.
"""

import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Literal

from magi_code.records import record
from magi_code.tools.base import ToolContext
from magi_code.tools.limits import LINK_CHECK_ENTRIES


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
SESSION_STORE = "sessions"  # sessions/store.py keeps the session files there, in MC_HOME

Identity = tuple[int, int]  # a file's device and inode: what every hard link to it shares


@record
class Protected:
    """Writes inside `roots` (and in any `.git` folder) always ask; nothing inside `secrets`
    (the credential store, the session files) is ever read. All paths canonical, as the tools
    resolve theirs. A hard link is no door: `guard` knows a linked file for the one it is."""

    roots: tuple[Path, ...] = ()
    secrets: tuple[Path, ...] = ()

    @classmethod
    def for_homes(cls, mc_home: str, user_home: str | None) -> "Protected":
        """MC_HOME (settings, credential store, session store) and the user's credential files."""
        home = Path(mc_home).resolve()
        roots = [home]
        if user_home:
            roots += [Path(user_home, name).resolve() for name in USER_CREDENTIALS]
        return cls(tuple(roots), (home / CREDENTIAL_STORE, home / SESSION_STORE))

    def floor(self, kind: str, path: Path) -> Literal["allow", "ask", "deny"]:
        """The least strict decision a call of `kind` on canonical `path` may get."""
        if kind == "read":
            return "deny" if any(inside(path, s) for s in self.secrets) else "allow"
        if kind == "write" and (".git" in path.parts or any(inside(path, r) for r in self.roots)):
            return "ask"
        return "allow"

    def identities(self, kind: str) -> frozenset[Identity]:
        """The files a hard link may not stand in for: under `secrets` for a read, under
        `roots` and `secrets` for a write (at most LINK_CHECK_ENTRIES of them)."""
        places = self.secrets if kind == "read" else (*self.roots, *self.secrets)
        found: set[Identity] = set()
        for identity in _files_under(places):
            if len(found) >= LINK_CHECK_ENTRIES:
                break
            found.add(identity)
        return frozenset(found)

    def guard(self, kind: str) -> "Callable[[os.stat_result], bool]":
        """For `open_regular`: whether an open file is a hard link to one of `identities`.
        Only a file with more than one link is looked up, so an ordinary open costs nothing."""

        def refused(st: os.stat_result) -> bool:
            return st.st_nlink > 1 and (st.st_dev, st.st_ino) in self.identities(kind)

        return refused


def _files_under(places: Iterable[Path]) -> Iterator[Identity]:
    for place in places:
        try:
            st = os.stat(place, follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            yield st.st_dev, st.st_ino
            continue
        for folder, _, names in os.walk(place):
            for name in names:
                try:
                    found = os.stat(os.path.join(folder, name), follow_symlinks=False)
                except OSError:
                    continue
                yield found.st_dev, found.st_ino


class ProtectedFile(OSError):
    """A hard link to a file no tool may read (or write): refused like the file itself."""


def display(ctx: ToolContext, path: Path) -> str:
    if inside(path, ctx.workspace):
        return path.relative_to(ctx.workspace).as_posix() or "."
    return path.as_posix()


class NotRegularFile(OSError):
    """A FIFO, socket or device where a regular file was expected."""


def open_regular(
    path: Path,
    *,
    write: bool = False,
    refused: "Callable[[os.stat_result], bool] | None" = None,
) -> BinaryIO:
    """Open a regular file without blocking on FIFOs or devices, which are refused.

    A worker thread blocked in open(2) on a FIFO could never be cancelled; O_NONBLOCK makes
    that open return at once, and fstat then turns anything irregular away, and a file
    `refused` says is a link to a protected one (ProtectedFile). A refused write leaves the
    file as it was (it is opened without O_TRUNC, and truncated only once allowed).
    """
    flags = os.O_WRONLY | os.O_CREAT if write else os.O_RDONLY
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, 0o666)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.ENODEV, "not a regular file")
        if refused is not None and refused(st):
            raise ProtectedFile(errno.EACCES, "a link to a protected file")
        if write:
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "wb" if write else "rb")
    except BaseException:
        os.close(fd)
        raise


def os_error_code(error: OSError) -> str:
    """A stable word for the model instead of the exception's text."""
    if isinstance(error, NotRegularFile):
        return "not_a_regular_file"
    if isinstance(error, ProtectedFile):
        return "protected_file"
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
