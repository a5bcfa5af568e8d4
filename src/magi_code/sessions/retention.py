"""Session retention: what is stored under MC_HOME/sessions, and deleting what has expired.

A session's age is its file's mtime (the last append). `prune` deletes each `<id>.jsonl` at
least `days` old, taking the session's writer and active leases first (without waiting), so a
session attached by any process is skipped and a concurrent open cannot race the deletion:
under the leases the file is checked again, unlinked, then its workspace checkpoints
(`<id>.checkpoints/`, never followed through a link) and its lock files, then the leases are
released. Whoever later locks an unlinked lock file finds the session missing. Once sessions
were deleted, the objects their workspaces' sessions share that no remaining checkpoint names
are collected (checkpoints/shared.py; a workspace whose lock a checkpoint holds then is left
for the next prune).
`scan` reads what a person needs to see (`sessions list`); its prompt text is redacted.
`latest_for` finds the session last active in a workspace (`exec --continue`) by the `cwd` of
each file's header, newest first, and reads nothing past a header.

What it must never do: delete or follow a symlink, delete a non-regular file, another user's
file, or a file whose name is not `<valid session id>.jsonl`; create the sessions directory;
read more of a file than the first user prompt needs. `sessions.retention_days` is read from
the admitted settings (config validates it); 0 disables the automatic sweep.
"""

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from magi_code.checkpoints.shared import collect
from magi_code.limits import DEFAULT_RETENTION_DAYS
from magi_code.records import record
from magi_code.redact import redact
from magi_code.sessions.errors import SessionError
from magi_code.sessions.ids import valid_session_id
from magi_code.sessions.leases import _LEASES, Leases, _lock_path, is_active
from magi_code.sessions.reader import decode_record
from magi_code.sessions.store import CHECKPOINTS_SUFFIX

DAY_NS = 86_400 * 1_000_000_000
PROMPT_CHARS = 80  # what `sessions list` shows of the first prompt's first line
SCAN_BYTES = 1 << 20  # how far `scan` reads into a file looking for the first prompt
SUFFIX = ".jsonl"


@record
class StoredSession:
    session_id: str
    mtime_ns: int  # last activity: the last append
    size: int
    attached: bool  # some process holds its active lease
    first_prompt: str | None  # first line of the first user prompt, redacted and truncated
    invalid: bool = False  # a record read before the first prompt is session_invalid
    cwd: str | None = None  # the workspace its header names, controls replaced

    @property
    def durable(self) -> bool:
        """False for an empty file (it opens, but holds nothing yet)."""
        return self.size > 0


def retention_days(settings: Mapping[str, Any]) -> int:
    """The configured retention (settings.validate has checked its type and sign)."""
    table = settings.get("sessions", {})
    days: int = table.get("retention_days", DEFAULT_RETENTION_DAYS)
    return days


def _session_files(directory: Path) -> Iterator[tuple[str, os.stat_result]]:
    """(id, lstat) of each regular, own file named `<valid id>.jsonl`; nothing else."""
    try:
        entries = list(os.scandir(directory))
    except OSError:  # no sessions directory yet, or an unreadable one: nothing to see
        return
    for entry in entries:
        session_id = entry.name.removesuffix(SUFFIX)
        if not entry.name.endswith(SUFFIX) or not valid_session_id(session_id):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if _own_regular(info):
            yield session_id, info


def _own_regular(info: os.stat_result) -> bool:
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid()


def _attached(directory: Path, session_id: str) -> bool:
    """Whether some process holds the active lease; an unusable lock file counts as held."""
    try:
        return is_active(directory, session_id)
    except OSError:
        return True


def expired(directory: Path, days: int, now_ns: int) -> list[str]:
    """IDs of the stored sessions at least `days` old and not attached, oldest first."""
    cutoff = now_ns - days * DAY_NS
    found = [
        (info.st_mtime_ns, session_id)
        for session_id, info in _session_files(directory)
        if info.st_mtime_ns <= cutoff and not _attached(directory, session_id)
    ]
    return [session_id for _, session_id in sorted(found)]


def prune(directory: Path, days: int, now_ns: int, *, dry_run: bool = False) -> list[str]:
    """Delete the sessions at least `days` old that nobody holds; returns the deleted IDs
    (with `dry_run`, the IDs that would be deleted now, deleting nothing)."""
    candidates = expired(directory, days, now_ns)
    if dry_run:
        return candidates
    cutoff = now_ns - days * DAY_NS
    deleted = [sid for sid in candidates if _delete(directory, sid, cutoff)]
    if deleted:
        collect(directory.parent)
    return deleted


def _delete(directory: Path, session_id: str, cutoff_ns: int) -> bool:
    try:
        leases = Leases.acquire(directory, session_id)
    except SessionError:  # attached by someone (session_busy) or an unusable lock file
        return False
    try:
        path = directory / f"{session_id}{SUFFIX}"
        try:
            info = os.lstat(path)
        except FileNotFoundError:  # someone else pruned it: drop the lock files we made
            _unlink_locks(directory, session_id)
            return False
        # Checked again under the leases: an append may have landed since the scan.
        if not _own_regular(info) or info.st_mtime_ns > cutoff_ns:
            return False
        os.unlink(path)
        shutil.rmtree(directory / f"{session_id}{CHECKPOINTS_SUFFIX}", ignore_errors=True)
        _unlink_locks(directory, session_id)
        return True
    except OSError:
        return False
    finally:
        leases.release()


def _unlink_locks(directory: Path, session_id: str) -> None:
    for lease in _LEASES:
        with contextlib.suppress(OSError):  # an orphan lock file is harmless
            os.unlink(_lock_path(directory, session_id, lease))


def auto_prune(home: str, settings: Mapping[str, Any], now_ns: int) -> list[str]:
    """The startup sweep of an interactive face: nothing when retention is 0."""
    days = retention_days(settings)
    if days == 0:
        return []
    return prune(Path(home) / "sessions", days, now_ns)


def scan(directory: Path) -> list[StoredSession]:
    """Every stored session, most recent activity first."""
    found = [
        StoredSession(
            session_id,
            info.st_mtime_ns,
            info.st_size,
            _attached(directory, session_id),
            *_head(directory / f"{session_id}{SUFFIX}", session_id),
        )
        for session_id, info in _session_files(directory)
    ]
    return sorted(found, key=lambda s: (-s.mtime_ns, s.session_id))


def latest_for(directory: Path, cwd: str) -> str | None:
    """The ID of the nonempty stored session last active in canonical `cwd` (as its header
    names it); None when there is none."""
    for stored in scan(directory):  # most recent first
        if stored.durable and stored.cwd is not None and os.path.realpath(stored.cwd) == cwd:
            return stored.session_id
    return None


def _head(path: Path, session_id: str) -> tuple[str | None, bool, str | None]:
    """The first user prompt's first line, shown safely (None when none is readable), whether
    a record before it is session_invalid, and the cwd its header names (controls replaced)."""
    cwd: str | None = None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None, False, cwd
    with os.fdopen(fd, "rb") as stored:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, False, cwd
        budget = SCAN_BYTES
        while budget > 0:
            raw = stored.readline(budget)  # binary readline splits on b"\n" only
            budget -= len(raw)
            if not raw.endswith(b"\n"):
                return None, False, cwd  # end of file, a torn tail, or past the budget
            try:
                record = decode_record(raw[:-1], session_id)
            except SessionError:
                return None, True, cwd
            if record["type"] == "session" and cwd is None and isinstance(record.get("cwd"), str):
                cwd = _printable(record["cwd"])
            if record["type"] == "user":
                return display_line(record["text"]), False, cwd
    return None, False, cwd


def _printable(text: str) -> str:
    return "".join(" " if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 else c for c in text)


def display_line(text: str) -> str:
    """First line, redacted before it is cut (a cut could hide a secret's shape from the
    redactor), control characters replaced, at most PROMPT_CHARS characters."""
    shown = _printable(redact(text.split("\n", 1)[0]))
    if len(shown) > PROMPT_CHARS:
        shown = shown[: PROMPT_CHARS - 1] + "…"
    return shown
