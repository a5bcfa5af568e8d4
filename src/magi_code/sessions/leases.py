"""The writer and active leases that let one process at a time own a session.

Two advisory `flock` locks on files beside the session (`<id>.writer.lock`, `<id>.active.lock`,
0600): the writer lease guards appends, the active lease marks the session attached (retention
must not delete it). Both are taken together, without waiting, and held for an attachment's
life; `flock` belongs to the open file description, so even a second open in the same process
is refused. Lock files are deleted only by retention, while it holds both leases and after the
session's .jsonl is gone: anyone who then locks the unlinked file finds the session missing.
"""

import fcntl
import os
from pathlib import Path

from magi_code.sessions.errors import SessionError

_LEASES = ("writer", "active")


def _lock_path(directory: Path, session_id: str, lease: str) -> Path:
    return directory / f"{session_id}.{lease}.lock"


def _open_lock(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError:
        raise SessionError("session_invalid") from None


class Leases:
    """Both leases of one session, held until `release`."""

    def __init__(self, fds: list[int]) -> None:
        self._fds = fds

    @classmethod
    def acquire(cls, directory: Path, session_id: str) -> "Leases":
        """Take both leases now or raise session_busy (another owner) / session_invalid."""
        fds: list[int] = []
        try:
            for lease in _LEASES:
                fd = _open_lock(_lock_path(directory, session_id, lease))
                fds.append(fd)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _close_all(fds)
            raise SessionError("session_busy") from None
        except BaseException:
            _close_all(fds)
            raise
        return cls(fds)

    @property
    def held(self) -> bool:
        return bool(self._fds)

    def release(self) -> None:
        """Drop both leases; closing the descriptor releases its flock. Idempotent."""
        fds, self._fds = self._fds, []
        _close_all(fds)


def is_active(directory: Path, session_id: str) -> bool:
    """True while some attachment (any process) holds the session's active lease."""
    path = _lock_path(directory, session_id, "active")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)
