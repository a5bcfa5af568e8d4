"""Streaming read of one stored session file into a validated projection.

The file is read in fixed blocks and split on b"\\n" (never str.splitlines); only the current
line is held, so memory follows the projection, not the file. Reading enforces
STORED_HISTORY_BYTES and STORED_HISTORY_LINES (a torn tail counts as a line), the record
schema, and the workspace rule: every nonempty recorded cwd must be absolute, exist, and
canonicalize to the child's canonical cwd. It also fingerprints what it read (stat identity,
a content digest and the last bytes) so a snapshot can tell later whether the file changed.
`SessionReader` is the resumable state of one read: an attachment feeds it its own appends.
Never writes.

Folding at a compaction. A `compaction` record that names the prompt it keeps (``keep_from``)
folds the projection there (projection.py: the entries before that prompt are dropped, the
compaction entry stands for them) when, with that record fed, the exact snapshot measure
(snapshot.py) holds at least HISTORY_NEAR_SHARE of the parts or bytes budget, or breaks it.
Below that the whole history stays visible, as it always was. The decision depends only on
the records before it, so a fresh read and an attachment's live reader fold at the same
records and agree. Why the spec (local-agent-protocol.md, "history.page") allows it: message
IDs "scope to session + revision, not forever across compaction/history replacement", i.e. a
compaction may replace history in the projection; "no silent truncation" holds because the
compaction entry marks the replacement in the projection itself; and the alternative, a
projection past its budget, is a session that answers `history_limit` to every open. The
stored-read bounds (STORED_HISTORY_BYTES, STORED_HISTORY_LINES) count the whole file and no
fold can lower them: the runner warns as they near (runner/journal.py).
"""

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

import jiter

from magi_code.limits import HISTORY_NEAR_SHARE, STORED_HISTORY_BYTES, STORED_HISTORY_LINES
from magi_code.records import record
from magi_code.sessions.errors import SessionError
from magi_code.sessions.projection import Projection, Projector
from magi_code.sessions.records import Record, check_record
from magi_code.sessions.snapshot import build, fullness

BLOCK_BYTES = 1 << 20
TAIL_BYTES = 4096
DIGEST_HEX = 40  # of SHA-256 (hardware-accelerated where it matters); fits a revision


@record
class Fingerprint:
    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    tail: bytes  # the file's last bytes (at most TAIL_BYTES) as read


@record
class ReadResult:
    projection: Projection
    digest: str  # hex content digest of every byte read
    durable_hash: "hashlib._Hash"  # running digest of the bytes up to the last LF
    fingerprint: Fingerprint
    durable_size: int  # bytes up to and including the last LF
    has_header: bool  # some "session" record was read
    cwd_verified: bool  # some record carried a nonempty cwd (all of them matched)
    selection: object  # the last "selection" value read, or None
    reader: "SessionReader"  # the reader's state after the last byte, to be fed further


def new_hash() -> "hashlib._Hash":
    return hashlib.sha256()


def hex_digest(running: "hashlib._Hash") -> str:
    return running.hexdigest()[:DIGEST_HEX]


def _open_safe(path: Path) -> int:
    """A read descriptor on a regular, own, not group/world-writable file, not via symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise SessionError("session_missing") from None
    except OSError:
        raise SessionError("session_invalid") from None
    info = os.fstat(fd)
    if (
        not stat.S_ISREG(info.st_mode)
        or info.st_uid != os.geteuid()
        or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    ):
        os.close(fd)
        raise SessionError("session_invalid")
    return fd


def fingerprint_of(path: Path, tail_size: int) -> Fingerprint | None:
    """The file's current fingerprint (None when it is missing or unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        tail = os.pread(fd, tail_size, max(0, info.st_size - tail_size)) if tail_size else b""
    except OSError:
        return None
    finally:
        os.close(fd)
    return Fingerprint(
        info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, tail
    )


def decode_record(raw: bytes, session_id: str) -> Record:
    """One stored line as the reader sees it: a valid record of `session_id`, or
    session_invalid."""
    try:
        # jiter rejects invalid UTF-8, lone surrogate escapes, raw control characters in
        # strings, trailing data and nesting deeper than its recursion guard.
        decoded: Any = jiter.from_json(raw, cache_mode="keys")
    except ValueError:
        raise SessionError("session_invalid") from None
    return check_record(decoded, session_id)


class _Session:
    """Per-read state: the projector plus what the session records said about themselves."""

    def __init__(self, session_id: str, canonical_cwd: str) -> None:
        self.session_id = session_id
        self.canonical_cwd = canonical_cwd
        self.projector = Projector()
        self.has_header = False
        self.cwd_verified = False
        self.selection: object = None
        self._checked_cwds: set[str] = set()

    def line(self, raw: bytes) -> None:
        record = decode_record(raw, self.session_id)
        if record["type"] == "session":
            self._session_record(record)
        self.projector.feed(record)
        if record["type"] == "compaction":
            self._fold_if_full(record.get("keep_from"))

    def _fold_if_full(self, keep_from: object) -> None:
        if not isinstance(keep_from, str) or not self.projector.can_fold(keep_from):
            return
        try:
            full = fullness(build(self.projector.finish()))
        except SessionError:  # history_limit: past the budget already
            full = 1.0
        if full >= HISTORY_NEAR_SHARE:
            self.projector.fold(keep_from)

    def _session_record(self, record: dict[str, Any]) -> None:
        self.has_header = True
        if "selection" in record:
            self.selection = record["selection"]
        cwd = record.get("cwd")
        if not cwd or cwd in self._checked_cwds:
            return
        if (
            not os.path.isabs(cwd)
            or not os.path.exists(cwd)
            or os.path.realpath(cwd) != self.canonical_cwd
        ):
            raise SessionError("cwd_mismatch")
        self._checked_cwds.add(cwd)
        self.cwd_verified = True

    def verify_cwds(self) -> None:
        for cwd in self._checked_cwds:
            if not os.path.exists(cwd) or os.path.realpath(cwd) != self.canonical_cwd:
                raise SessionError("cwd_mismatch")


class SessionReader:
    """Validates and projects a session's bytes fed in stored order, and can be fed more.

    `read_session` feeds it the file block by block; an attachment keeps feeding it what it
    appends, so a later projection needs no re-read. After any error it must be dropped.
    """

    def __init__(self, session_id: str, canonical_cwd: str) -> None:
        self.session = _Session(session_id, canonical_cwd)
        self.durable_hash = new_hash()  # whole lines only; the pending line is hashed once whole
        self._pending: list[bytes] = []  # the current unterminated line, in pieces
        self.total = self.lines = self.durable = 0
        self.tail = b""

    @property
    def torn(self) -> bool:
        return self.total > self.durable

    def feed(self, block: bytes) -> None:
        """Account and project `block`; history_limit past the stored bounds."""
        self.total += len(block)
        if self.total > STORED_HISTORY_BYTES:
            raise SessionError("history_limit")
        self.tail = (self.tail + block[-TAIL_BYTES:])[-TAIL_BYTES:]
        pieces = block.split(b"\n")
        if len(pieces) == 1:
            self._pending.append(block)
            return
        for piece in self._pending:
            self.durable_hash.update(piece)
        self.durable_hash.update(memoryview(block)[: len(block) - len(pieces[-1])])
        pieces[0] = b"".join([*self._pending, pieces[0]])
        self._pending = [pieces.pop()]
        self.lines += len(pieces)
        if self.lines > STORED_HISTORY_LINES:
            raise SessionError("history_limit")
        for raw in pieces:
            self.session.line(raw)
        self.durable = self.total - len(self._pending[0])

    def digest(self) -> str:
        """Hex digest of every byte fed, the torn tail included."""
        running = self.durable_hash.copy()
        for piece in self._pending:
            running.update(piece)
        return hex_digest(running)

    def projection(self) -> Projection:
        """The projection of what was fed so far (a torn tail shown as a diagnostic)."""
        if self.torn and self.lines + 1 > STORED_HISTORY_LINES:
            raise SessionError("history_limit")
        return self.session.projector.finish(torn=self.torn)

    def verify_cwds(self) -> None:
        """Check the recorded workspaces again, as a fresh read would (cwd_mismatch)."""
        self.session.verify_cwds()


def read_session(path: Path, session_id: str, canonical_cwd: str) -> ReadResult:
    """Validate and project the stored file; SessionError on any rule it breaks."""
    fd = _open_safe(path)
    try:
        return _read(fd, SessionReader(session_id, canonical_cwd))
    finally:
        os.close(fd)


def _read(fd: int, reader: SessionReader) -> ReadResult:
    if os.fstat(fd).st_size > STORED_HISTORY_BYTES:
        raise SessionError("history_limit")
    while block := _read_block(fd):
        reader.feed(block)
    projection = reader.projection()
    info = os.fstat(fd)
    fingerprint = Fingerprint(
        info.st_dev, info.st_ino, reader.total, info.st_mtime_ns, info.st_ctime_ns, reader.tail
    )
    session = reader.session
    return ReadResult(
        projection=projection,
        digest=reader.digest(),
        durable_hash=reader.durable_hash.copy(),
        fingerprint=fingerprint,
        durable_size=reader.durable,
        has_header=session.has_header,
        cwd_verified=session.cwd_verified,
        selection=session.selection,
        reader=reader,
    )


def _read_block(fd: int) -> bytes:
    try:
        return os.read(fd, BLOCK_BYTES)
    except OSError:
        raise SessionError("session_invalid") from None
