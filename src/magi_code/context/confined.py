"""Opening the files context reads (AGENTS.md, `instructions` paths, profiles, SKILL.md): only
a regular file whose canonical path stays inside its root.

- The path is resolved first (os.path.realpath: every link on the way, folders included). When
  it lands outside the root, the file is refused: an untrusted clone's
  `AGENTS.md -> ~/.ssh/id_ed25519` is, `AGENTS.md -> docs/agents.md` is read. A root of None
  means the user named this very path (the global settings do), so only the next rules apply.
- The canonical path is opened with O_NOFOLLOW (a link swapped in since is not followed) and
  O_NONBLOCK (a FIFO's open returns at once instead of blocking startup forever); fstat must
  then say regular. FIFOs, sockets and devices are refused, and so are the kernel's pseudo-files
  under /proc and /sys, which fstat calls regular (`/proc/self/environ` holds the environment).
`Refused.problem` is a fixed phrase (and the root) for the notice that names the file; it never
holds file text. Windows has no O_NOFOLLOW or O_NONBLOCK: there the link check alone applies.
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import BinaryIO

NOT_REGULAR = "not a regular file"
PSEUDO_FILE_SYSTEMS = ("/proc", "/sys")
_FLAGS = os.O_RDONLY
for _flag in ("O_NOFOLLOW", "O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC", "O_BINARY"):
    _FLAGS |= getattr(os, _flag, 0)


class Refused(OSError):
    """A file context may not read: outside its root, or not a regular file."""

    def __init__(self, problem: str) -> None:
        super().__init__(errno.EPERM, problem)
        self.problem = problem


def inside(path: str, root: str) -> bool:
    """Whether canonical `path` is canonical `root` or below it."""
    return path == root or path.startswith(os.path.join(root, ""))


def check(path: str, root: str | None) -> str:
    """The canonical path of `path`; Refused when it leads outside `root`."""
    canonical = os.path.realpath(path)
    if root is not None and not inside(canonical, os.path.realpath(root)):
        raise Refused(f"leads outside {root}")
    return canonical


def open_confined(path: str, root: str | None) -> BinaryIO:
    """`path` open for reading: a regular file inside `root` (see the module's rules).
    Refused, or any OSError of the open (FileNotFoundError, IsADirectoryError, ...)."""
    canonical = check(path, root)
    if any(inside(canonical, pseudo) for pseudo in PSEUDO_FILE_SYSTEMS):
        raise Refused(NOT_REGULAR)
    fd = os.open(canonical, _FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if not stat.S_ISREG(mode):
            raise Refused(NOT_REGULAR)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
