"""Session files and attachments: create, open, append, snapshot, close.

`SessionStore(root)` keeps sessions in ``root/"sessions"`` (root is MC_HOME). An `Attachment`
is one process's ownership of one session: it holds both leases (leases.py) from create/open
until `close`, appends records, and keeps one history snapshot. It keeps the reader of its
open live and feeds it every record it appends, so a snapshot after its own appends costs
what they added; any sign that someone else touched the file sends it back to a full read.
Synchronous and guarded by locks, so the protocol server may call it from a worker thread;
one operation at a time per attachment is still the caller's rule.

What it must never do: write anything on create or open (the session file appears with the
first append; lock files are the only exception), follow symlinks, return paths or record
content in errors, or hand one session to two owners. Append failures surface as `OSError`
(the runner maps them to persistence codes); schema violations by the caller as `ValueError`.
"""

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from magi_code.limits import STORED_HISTORY_BYTES, STORED_HISTORY_LINES
from magi_code.records import record, replace
from magi_code.sessions.chunking import dumps
from magi_code.sessions.errors import SessionError
from magi_code.sessions.ids import new_session_id, valid_session_id
from magi_code.sessions.leases import Leases
from magi_code.sessions.projection import Projection
from magi_code.sessions.reader import (
    TAIL_BYTES,
    Fingerprint,
    ReadResult,
    SessionReader,
    decode_record,
    fingerprint_of,
    hex_digest,
    new_hash,
    read_session,
)
from magi_code.sessions.records import Record
from magi_code.sessions.snapshot import Builder, Built, HistorySnapshot, Page, fullness

RECORDS_BLOCK_BYTES = 1 << 20  # read size when the runner replays a file
CHECKPOINTS_SUFFIX = ".checkpoints"
Available = Callable[[str, str], bool]


@record
class Fullness:
    """How much of its history bounds a session used at its last snapshot (1.0: all of it,
    or past it): the projection against the snapshot budget, the file against the stored-read
    bounds. Only a compaction can lower the first; nothing lowers the second."""

    projection: float
    stored: float


def _stored_fullness(reader: SessionReader) -> float:
    return max(reader.total / STORED_HISTORY_BYTES, reader.lines / STORED_HISTORY_LINES)


@record
class Selection:
    provider: str
    model: str
    thinking: str | None

    def to_record(self) -> dict[str, str | None]:
        return {"provider": self.provider, "model": self.model, "thinking": self.thinking}

    @classmethod
    def parse(cls, value: object) -> "Selection | None":
        """The stored selection, or None when it is absent or malformed."""
        if not isinstance(value, dict):
            return None
        provider, model, thinking = (value.get(k) for k in ("provider", "model", "thinking"))
        if not (isinstance(provider, str) and isinstance(model, str)):
            return None
        if thinking is not None and not isinstance(thinking, str):
            return None
        return cls(provider, model, thinking)


class SessionStore:
    """All sessions under one MC_HOME, and the attachments this process holds."""

    def __init__(self, root: Path) -> None:
        self.directory = root / "sessions"
        self._lock = threading.Lock()
        self._held: dict[str, Attachment] = {}

    @staticmethod
    def new_id() -> str:
        return new_session_id()

    def path_of(self, session_id: str) -> Path:
        if not valid_session_id(session_id):
            raise ValueError("malformed session id")
        return self.directory / f"{session_id}.jsonl"

    def checkpoints_of(self, session_id: str) -> Path:
        """The folder of the session's workspace checkpoints (checkpoints/store.py: their
        manifests; the content is shared by the workspace's sessions), beside its file, so
        that pruning the session prunes them (retention.py)."""
        return self.path_of(session_id).with_name(f"{session_id}{CHECKPOINTS_SUFFIX}")

    def create(self, cwd: str | Path, selection: Selection | None) -> "Attachment":
        """A new lazy session (no file until the first append) with its leases taken."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        while True:
            session_id = self.new_id()
            leases = Leases.acquire(self.directory, session_id)
            if not self.path_of(session_id).exists():
                break
            leases.release()
        attachment = Attachment(
            self, session_id, os.path.realpath(cwd), leases, _State.lazy(selection)
        )
        with self._lock:
            self._held[session_id] = attachment
        return attachment

    def open(
        self, session_id: str, cwd: str | Path, available: Available | None = None
    ) -> tuple["Attachment", list[str]]:
        """Attach an existing session (or this process's own lazy one); returns notices.

        Raises session_missing, session_busy, session_invalid, history_limit or cwd_mismatch.
        A failed open leaves any previous attachment of this process intact.
        """
        path = self.path_of(session_id)
        canonical = os.path.realpath(cwd)
        with self._lock:
            previous = self._held.get(session_id)
        if previous is not None:
            return self._reopen(previous, canonical, available)
        if not path.exists():
            raise SessionError("session_missing")
        leases = Leases.acquire(self.directory, session_id)
        try:
            state, notices = _State.from_read(read_session(path, session_id, canonical), available)
        except BaseException:
            leases.release()
            raise
        attachment = Attachment(self, session_id, canonical, leases, state)
        with self._lock:
            self._held[session_id] = attachment
        return attachment, notices

    def _reopen(
        self, previous: "Attachment", canonical: str, available: Available | None
    ) -> tuple["Attachment", list[str]]:
        """Same-process reopen: validate afresh, then move the leases to a new attachment."""
        if canonical != previous.cwd:
            raise SessionError("cwd_mismatch")
        path = self.path_of(previous.session_id)
        if path.exists():
            state, notices = _State.from_read(
                read_session(path, previous.session_id, canonical), available
            )
        elif previous.durable:
            raise SessionError("session_missing")
        else:
            state, notices = _State.lazy(previous.selection), []
        leases = previous.hand_over()
        attachment = Attachment(self, previous.session_id, canonical, leases, state)
        with self._lock:
            self._held[previous.session_id] = attachment
        return attachment, notices

    def _forget(self, attachment: "Attachment") -> None:
        with self._lock:
            if self._held.get(attachment.session_id) is attachment:
                del self._held[attachment.session_id]


@record(frozen=False)
class _State:
    """What an attachment starts from: a read of the file, or nothing yet."""

    durable: bool
    selection: Selection | None
    read: ReadResult | None
    builder: Builder
    built: Built

    @classmethod
    def lazy(cls, selection: Selection | None) -> "_State":
        builder = Builder()
        return cls(False, selection, None, builder, builder.build(Projection([], True)))

    @classmethod
    def from_read(cls, read: ReadResult, available: Available | None) -> tuple["_State", list[str]]:
        notices = [] if read.cwd_verified else ["cwd_unverified"]
        selection = Selection.parse(read.selection)
        if read.selection is not None and selection is None:
            notices.append("saved_selection_notice")
        elif (
            selection is not None
            and available is not None
            and not available(selection.provider, selection.model)
        ):
            notices.append("saved_selection_unavailable")
        builder = Builder()
        return cls(True, selection, read, builder, builder.build(read.projection)), notices


class Attachment:
    """One process's ownership of one session, from create/open until `close`."""

    def __init__(
        self, store: SessionStore, session_id: str, cwd: str, leases: Leases, state: _State
    ) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.durable = state.durable
        self.selection = state.selection
        self._store = store
        self._path = store.path_of(session_id)
        self._leases = leases
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._attempted = b""  # the bytes of an append that failed part-way
        self._generation = 0
        self._busy: str | None = None
        self._builder = state.builder
        self._adopt(state.read)
        stored = 0.0 if state.read is None else _stored_fullness(state.read.reader)
        self.fullness = Fullness(fullness(state.built), stored)
        self._snapshot = self._make_snapshot(
            self._digest(state.read), state.built, 0, self._expected
        )
        self._revision = self._snapshot.revision
        # The runner's own, kept here because they live as long as the attachment: its replay
        # of the records (runner/journal.py; opaque to this package), and whether a run
        # started on this attachment.
        self.replay: object = None
        self.ran = False

    def _adopt(self, read: ReadResult | None) -> None:
        """Continue writing after what `read` found on disk (nothing, for a lazy session).

        The live reader goes on projecting this attachment's own appends; `_expected` is the
        fingerprint the file has while nobody else touched it (None: no file, or unknown).
        """
        self._needs_header = read is None or (read.durable_size == 0 and not read.has_header)
        self._beyond_stored = False  # the live reader met a stored-read bound (see _follow)
        self._good_size = 0 if read is None else read.durable_size
        self._hash = new_hash() if read is None else read.durable_hash.copy()
        self._live: SessionReader | None
        if read is None:
            self._live, self._expected = SessionReader(self.session_id, self.cwd), None
        else:
            self._live, self._expected = read.reader, read.fingerprint

    @staticmethod
    def _digest(read: ReadResult | None) -> str:
        return hex_digest(new_hash()) if read is None else read.digest

    @property
    def revision(self) -> str:
        """The revision of what is on disk now, without re-reading it.

        Equals the revision a fresh `snapshot()` would report; after an append it is the
        revision to acknowledge the persisted input with.
        """
        return self._revision

    # ---- history -------------------------------------------------------------------------

    @property
    def history(self) -> HistorySnapshot:
        """The one current snapshot (taken at create/open, or by the last `snapshot()`)."""
        return self._snapshot

    def snapshot(self) -> HistorySnapshot:
        """Replace the current snapshot (the old one goes stale) with one of the file now.

        While the file is exactly as this attachment last read or wrote it, the live
        projection is used and only what changed is chunked again; otherwise the file is
        read afresh, as `SessionStore.open` does. Either way the result, errors included,
        is what a fresh read would give. Raises busy during a turn or another history
        operation, stale_session once detached, and the read errors of `SessionStore.open`.
        """
        with self._activity("history"):
            live = self._live_projection()
            if live is not None:
                generation, projection, digest, expected = live
                built = self._build(projection)
                with self._lock:
                    self._snapshot.invalidate()
                    self._snapshot = self._make_snapshot(digest, built, generation, expected)
                    return self._snapshot
            return self._reread()

    def _live_projection(self) -> tuple[int, Projection, str, Fingerprint | None] | None:
        """The live projection, when the live reader can vouch for the file.

        Past a budget this answers history_limit without reading the file: the live reader
        keeps projecting (a later fold can bring it back), and a stored-read bound, once met
        by our own appends, stays met while nobody else touches the file. So a turn past a
        budget costs what a turn below it does."""
        with self._lock:
            live = self._live
            if self.durable and not self._intact():
                return None
            if live is None:
                if self._beyond_stored:
                    self.fullness = replace(self.fullness, stored=1.0)
                    raise SessionError("history_limit")
                return None
            live.verify_cwds()
            self.fullness = replace(self.fullness, stored=_stored_fullness(live))
            try:
                projection = live.projection()
            except SessionError as error:
                self._note_limit(error)
                raise
            return self._generation, projection, live.digest(), self._expected

    def _build(self, projection: Projection) -> Built:
        """Chunk `projection` for a snapshot, recording how full it is."""
        try:
            built = self._builder.build(projection)
        except SessionError as error:
            self._note_limit(error)
            raise
        self.fullness = replace(self.fullness, projection=fullness(built))
        return built

    def _note_limit(self, error: SessionError) -> None:
        if error.code == "history_limit":
            self.fullness = replace(self.fullness, projection=1.0)

    def _intact(self) -> bool:
        tail = 0 if self._expected is None else len(self._expected.tail)
        return fingerprint_of(self._path, tail) == self._expected

    def _reread(self) -> HistorySnapshot:
        generation = self._generation
        durable = self.durable
        read = read_session(self._path, self.session_id, self.cwd) if durable else None
        projection = Projection([], True) if read is None else read.projection
        built = self._build(projection)
        stored = 0.0 if read is None else _stored_fullness(read.reader)
        self.fullness = replace(self.fullness, stored=stored)
        with self._lock:
            self._snapshot.invalidate()
            print_ = None if read is None else read.fingerprint
            self._snapshot = self._make_snapshot(self._digest(read), built, generation, print_)
            if generation == self._generation:
                self._adopt(read)
                self._revision = self._snapshot.revision
            return self._snapshot

    def intact(self) -> bool:
        """True while the file is exactly as this attachment last read or wrote it, so state
        derived from its reads and appends (a replay, the live projection) still holds."""
        with self._lock:
            return self._expected is not None and self._intact()

    def records(self) -> Iterator[Record]:
        """Every whole record of the file, checked as a reader checks it (session_invalid
        otherwise); a torn tail is not a record. For a replay that must start from the file."""
        with open(self._path, "rb") as handle:
            pending = b""
            while block := handle.read(RECORDS_BLOCK_BYTES):
                lines = (pending + block).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if line:
                        yield decode_record(line, self.session_id)

    def page(self, session_id: str, revision: str, cursor: str | None) -> Page:
        """One page of the current snapshot: stale_session for another session's ID."""
        if session_id != self.session_id:
            raise SessionError("stale_session")
        with self._activity("history"):
            return self._snapshot.page(revision, cursor)

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Mark a run in progress: history operations answer busy until it ends."""
        with self._activity("turn"):
            yield

    @contextmanager
    def _activity(self, kind: str) -> Iterator[None]:
        with self._lock:
            self._check_attached()
            if self._busy is not None:
                raise SessionError("busy")
            self._busy = kind
        try:
            yield
        finally:
            with self._lock:
                self._busy = None

    def _make_snapshot(
        self,
        digest: str,
        built: Built,
        generation: int,
        print_: Fingerprint | None = None,
    ) -> HistorySnapshot:
        return HistorySnapshot(
            self.session_id,
            _revision(generation, digest),
            built,
            lambda: self._unchanged(generation, print_),
        )

    def _unchanged(self, generation: int, expected: Fingerprint | None) -> bool:
        if generation != self._generation:
            return False
        tail = 0 if expected is None else len(expected.tail)
        return fingerprint_of(self._path, tail) == expected

    # ---- writing -------------------------------------------------------------------------

    def append(self, record: Mapping[str, Any], *, fsync: bool) -> Record:
        """Append one record (and the session header first, if the file has none yet).

        Returns the record as a reader of the file will see it (JSON types). A record the
        reader would refuse is a ValueError and is not written.
        """
        line = {"session_id": self.session_id, **record}
        try:
            data = (dumps(line) + "\n").encode("utf-8")
            stored = decode_record(data[:-1], self.session_id)
        except (SessionError, TypeError, ValueError):  # ValueError covers lone surrogates
            raise ValueError("record does not follow the session schema") from None
        with self._lock:
            self._check_attached()
            if self._needs_header:
                data = (dumps(self._header()) + "\n").encode("utf-8") + data
            self._write(data, fsync=fsync)
            self._needs_header = False
            self.durable = True
            self._generation += 1
            self._snapshot.invalidate()
            self._revision = _revision(self._generation, hex_digest(self._hash))
            self._follow(data)
        return stored

    def _follow(self, data: bytes) -> None:
        """Feed what was just written to the live reader; on any error drop it, so the next
        snapshot reads the file afresh and meets that error exactly as a fresh read would."""
        if self._live is None:
            return
        try:
            self._live.feed(data)
        except SessionError as error:
            self._live = None
            self._beyond_stored = error.code == "history_limit"

    def _header(self) -> dict[str, Any]:
        header: dict[str, Any] = {
            "session_id": self.session_id,
            "type": "session",
            "cwd": self.cwd,
            "created_at": utc_now(),
        }
        if self.selection is not None:
            header["selection"] = self.selection.to_record()
        return header

    def _write(self, data: bytes, *, fsync: bool) -> None:
        created = not self.durable  # also after a failed first append: the entry needs syncing
        fd = self._open_for_append()
        self._check_unchanged(fd)
        known = created or self._as_expected(fd)
        view = memoryview(data)
        self._attempted = data  # until it is all written: what a torn tail can hold
        while view:
            view = view[os.write(fd, view) :]
        self._attempted = b""
        if fsync:
            os.fsync(fd)
            if created:
                _fsync_directory(self._path.parent)
        self._good_size += len(data)
        self._hash.update(data)
        self._expected = self._after(os.fstat(fd), data) if known else None

    def _as_expected(self, fd: int) -> bool:
        """Whether the file is exactly as this attachment last read or wrote it. Our own
        write is about to refresh its times, which would hide an earlier change by someone
        else: when one happened, state derived from the file is dropped for good, and the
        next snapshot reads the file afresh."""
        expected = self._expected
        if expected is not None:
            info = os.fstat(fd)
            tail = os.pread(fd, len(expected.tail), max(0, info.st_size - len(expected.tail)))
            found = Fingerprint(
                info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, tail
            )
            if found == expected:
                return True
        self._live = None
        return False

    def _after(self, info: os.stat_result, data: bytes) -> Fingerprint:
        """The fingerprint the file has after this write, while nobody else touches it."""
        tail = (b"" if self._expected is None else self._expected.tail) + data[-TAIL_BYTES:]
        return Fingerprint(
            info.st_dev,
            info.st_ino,
            info.st_size,
            info.st_mtime_ns,
            info.st_ctime_ns,
            tail[-TAIL_BYTES:],
        )

    def _check_unchanged(self, fd: int) -> None:
        """Only this attachment writes the file. Bytes past the last whole record with no LF
        are a write that never finished (a crash, or a failed write here): they are dropped so
        the new record starts on its own line. So are bytes that begin what this attachment
        last tried and failed to write (a full disk can cut an append after its header's LF).
        Anything else (the file replaced, shortened, or holding records someone else
        appended) refuses the append rather than destroy them."""
        info = os.fstat(fd)
        try:
            same_file = os.stat(self._path).st_ino == info.st_ino
        except OSError:
            same_file = False
        if not same_file or info.st_size < self._good_size:
            raise OSError("the session file changed under its writer")
        if info.st_size > self._good_size:
            extra = os.pread(fd, info.st_size - self._good_size, self._good_size)
            if b"\n" in extra and not self._attempted.startswith(extra):
                raise OSError("records were appended by another writer")
            os.ftruncate(fd, self._good_size)
            self._live = self._expected = None  # they described the torn bytes too

    def _open_for_append(self) -> int:
        if self._fd is None:
            flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
            if not self.durable:
                flags |= os.O_CREAT | os.O_EXCL
            self._fd = os.open(self._path, flags, 0o600)
        return self._fd

    # ---- ownership -----------------------------------------------------------------------

    def _check_attached(self) -> None:
        if not self._leases.held:
            raise SessionError("stale_session")

    def hand_over(self) -> Leases:
        """Give this attachment's leases to its successor; this one becomes stale."""
        with self._lock:
            self._check_attached()
            if self._busy is not None:
                raise SessionError("busy")
            leases, self._leases = self._leases, Leases([])
            self._close_fd()
            self._snapshot.invalidate()
            return leases

    def close(self) -> None:
        """Release the leases (idempotent); the snapshot goes stale."""
        with self._lock:
            self._close_fd()
            self._snapshot.invalidate()
            self._leases.release()
        self._store._forget(self)

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _revision(generation: int, digest: str) -> str:
    return f"r{generation}.{digest}"


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def utc_now() -> str:
    """Now in UTC, ISO 8601 to the millisecond (`2026-12-01T11:26:47.315+00:00`, as
    `datetime.isoformat` writes it), without importing `datetime` on a session's first step."""
    ns = time.time_ns()
    second = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 1_000_000_000))
    return f"{second}.{ns // 1_000_000 % 1000:03d}+00:00"
