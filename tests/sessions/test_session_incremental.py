"""The live snapshot path: after an attachment's own appends, `snapshot()` answers from the
projection it kept, and must say exactly what a fresh read of the file says (pages, revision,
completeness, errors), notice any change made by someone else, and hit every bound at the
same edge."""

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sessions_support import SID, header, line, pages, user, write_session

from magi_code.limits import (
    HISTORY_CHUNK_BYTES,
    HISTORY_SNAPSHOT_BYTES,
    HISTORY_SNAPSHOT_PARTS,
    STORED_HISTORY_BYTES,
    STORED_HISTORY_LINES,
)
from magi_code.sessions import Attachment, SessionError, SessionStore, reader
from magi_code.sessions import store as store_module
from magi_code.sessions.chunking import dumps, serialized_bytes
from magi_code.sessions.snapshot import Built, build

RUNS = ["r0", "r1", "r2"]
IDS = ["a0", "a1", "same"]
KINDS = [
    "user",
    "assistant_chunk",
    "assistant",
    "legacy_assistant",
    "tool",
    "reasoning_summary",
    "run_finished",
    "compaction",
    "internal",
    "selection",
]


def _record(kind: str, run: str, mid: str, n: int, text: str) -> dict[str, Any]:
    base: dict[str, Any] = {"type": kind, "run_id": run}
    if kind == "user":
        return {**base, "message_id": mid, "text": text}
    if kind == "assistant_chunk":
        return {**base, "message_id": mid, "index": n, "text": text}
    if kind == "assistant":
        return {**base, "message_id": mid, "text": text}
    if kind == "legacy_assistant":
        return {"type": "assistant", "run_id": run, "message_id": mid, "text": None}
    if kind == "tool":
        state = ["started", "completed", "failed"][n % 3]
        return {**base, "activity_id": mid, "name": "t", "state": state, "summary": text}
    if kind == "reasoning_summary":
        return {**base, "item_id": mid, "text": text, "provider_summary": n % 2 == 0}
    if kind == "run_finished":
        return {**base, "outcome": ["completed", "failed", "cancelled"][n % 3]}
    if kind == "compaction":
        return {"type": "compaction", "text": text}
    if kind == "selection":
        return {"type": "session", "selection": {"provider": "p", "model": text, "thinking": None}}
    return {"type": "internal", "text": text}


TEXTS = st.sampled_from(["", "hi", "token=abcdefgh1234", "é\n😀", "x" * (HISTORY_CHUNK_BYTES + 5)])
RECORD = st.builds(
    _record,
    st.sampled_from(KINDS),
    st.sampled_from(RUNS),
    st.sampled_from(IDS),
    st.integers(0, 5),
    TEXTS,
)
# a step appends a record, or (None) takes a snapshot
STEPS = st.lists(st.one_of(RECORD, st.none()), max_size=30)


def _fresh(path: Path, cwd: Path, session_id: str = SID) -> tuple[str, Built] | str:
    """What a fresh open computes: the revision digest and the built snapshot, or the error."""
    try:
        read = reader.read_session(path, session_id, os.path.realpath(cwd))
        return read.digest, build(read.projection)
    except SessionError as err:
        return err.code


def _live(attachment: Attachment) -> tuple[str, Built] | str:
    try:
        snapshot = attachment.snapshot()
    except SessionError as err:
        return err.code
    parts = []
    cursor = None
    while True:
        page = snapshot.page(snapshot.revision, cursor)
        parts += page.entries
        cursor = page.next_cursor
        if cursor is None:
            break
    built = Built(parts, [], page.complete, {}, 0)
    return snapshot.revision.split(".", 1)[1], built


def _same(live: tuple[str, Built] | str, fresh: tuple[str, Built] | str) -> None:
    if isinstance(fresh, str) or isinstance(live, str):
        assert live == fresh
        return
    assert live[0] == fresh[0]
    assert live[1].parts == fresh[1].parts
    assert live[1].complete == fresh[1].complete


def _compare(attachment: Attachment, store: SessionStore, cwd: Path) -> None:
    path = store.path_of(attachment.session_id)
    live = _live(attachment)
    if not path.exists():
        assert not isinstance(live, str) and live[1].parts == [] and live[1].complete
        return
    _same(live, _fresh(path, cwd, attachment.session_id))
    if not isinstance(live, str):
        snapshot = attachment.history
        read = reader.read_session(path, attachment.session_id, os.path.realpath(cwd))
        fresh = build(read.projection)
        for stored in IDS:
            assert snapshot.message_id_for(stored) == fresh.stored_ids.get(stored)


class _CountReads:
    """Counts the attachment's full reads of its file (the live path makes none)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, path: Path, session_id: str, canonical_cwd: str) -> reader.ReadResult:
        self.count += 1
        return reader.read_session(path, session_id, canonical_cwd)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> _CountReads:
    counter = _CountReads()
    monkeypatch.setattr(store_module, "read_session", counter)
    return counter


_CHUNK = _record("assistant_chunk", "r0", "a0", 0, "hi")
_DONE = _record("run_finished", "r0", "", 0, "")
_STARTED = _record("tool", "r0", "a1", 0, "x" * (HISTORY_CHUNK_BYTES + 5))
_COMPLETED = _record("tool", "r0", "a1", 1, "done")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(RECORD, max_size=8), STEPS, st.booleans())
@example([], [_CHUNK, None, _DONE, None], True)  # a finish changes an earlier entry's partial
@example([_STARTED], [None, _CHUNK, None, _COMPLETED, None], False)  # an early entry shrinks
def test_live_snapshots_equal_fresh_reads(
    before: list[dict[str, Any]], steps: list[dict[str, Any] | None], lazy: bool
) -> None:
    counter = _CountReads()
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        cwd = Path(tmp) / "work"
        cwd.mkdir()
        store = SessionStore(Path(tmp) / "home")
        if lazy:
            attachment = store.create(cwd, None)
        else:
            write_session(store, [header(cwd), *before])
            attachment, _ = store.open(SID, cwd)
        patch.setattr(store_module, "read_session", counter)
        for step in [*steps, None]:
            if step is None:
                _compare(attachment, store, cwd)
            else:
                attachment.append(step, fsync=False)
        attachment.close()
    assert counter.count == 0


# ---- outside changes -------------------------------------------------------------------------


def _own(store: SessionStore, cwd: Path) -> Attachment:
    write_session(store, [header(cwd), user("r0", "q" * 5000), user("r0", "tail")])
    attachment, _ = store.open(SID, cwd)
    for n in range(3):
        attachment.append(user(f"r{n + 1}", f"own {n}"), fsync=False)
    attachment.snapshot()  # from the live projection
    return attachment


@pytest.mark.parametrize("where", ["early", "late"])
@pytest.mark.parametrize("then_append", [False, True])
def test_a_rewrite_by_someone_else_is_read_afresh(
    store: SessionStore, cwd: Path, reads: _CountReads, where: str, then_append: bool
) -> None:
    attachment = _own(store, cwd)
    assert reads.count == 1  # the open; the snapshot after own appends was live
    path = store.path_of(SID)
    data = path.read_bytes()
    target = b"q" * 5000 if where == "early" else b"own 2"
    spot = data.index(target)
    with path.open("r+b") as out:  # same size, so only times and bytes tell
        out.seek(spot)
        out.write(b"Z")
    if then_append:  # our own write refreshes the times: the change must not be hidden
        attachment.append(user("r9", "after"), fsync=False)
    assert not attachment.intact()
    _same(_live(attachment), _fresh(path, cwd))
    assert reads.count == 2
    assert attachment.intact()  # the re-read adopted the file as it is
    attachment.close()


def test_records_appended_by_someone_else_are_read_afresh(
    store: SessionStore, cwd: Path, reads: _CountReads
) -> None:
    attachment = _own(store, cwd)
    path = store.path_of(SID)
    with path.open("ab") as out:
        out.write(line(user("rX", "foreign")))
    assert not attachment.intact()
    _same(_live(attachment), _fresh(path, cwd))
    assert reads.count == 2
    attachment.append(user("r9", "mine again"), fsync=False)  # adopted by the re-read
    _same(_live(attachment), _fresh(path, cwd))
    assert reads.count == 2  # live again
    attachment.close()


def test_a_replaced_file_is_read_afresh(store: SessionStore, cwd: Path) -> None:
    attachment = _own(store, cwd)
    path = store.path_of(SID)
    replacement = path.with_suffix(".new")
    replacement.write_bytes(path.read_bytes().replace(b"own 1", b"OWN 1"))
    replacement.chmod(0o600)
    replacement.replace(path)
    assert not attachment.intact()
    live = _live(attachment)
    assert not isinstance(live, str) and any(p["text"] == "OWN 1" for p in live[1].parts)
    _same(live, _fresh(path, cwd))
    attachment.close()


def test_previous_snapshot_stays_stale_after_a_live_one(store: SessionStore, cwd: Path) -> None:
    attachment = _own(store, cwd)
    old = attachment.history
    new = attachment.snapshot()
    assert new.revision == old.revision  # nothing changed
    with pytest.raises(SessionError, match=r"^stale_revision$"):
        old.page(old.revision, None)
    attachment.append(user("r7", "more"), fsync=False)
    with pytest.raises(SessionError, match=r"^stale_revision$"):
        new.page(new.revision, None)
    attachment.close()


def test_a_record_no_reader_would_accept_is_refused(store: SessionStore, cwd: Path) -> None:
    attachment = store.create(cwd, None)
    attachment.append(user("r1", "fine"), fsync=False)
    size = store.path_of(attachment.session_id).stat().st_size
    deep: list[Any] = []
    for _ in range(300):  # the encoder writes it; the reader's parser refuses such nesting
        deep = [deep]
    with pytest.raises(ValueError):
        attachment.append({"type": "internal", "value": deep}, fsync=False)
    assert store.path_of(attachment.session_id).stat().st_size == size
    stored = attachment.append({"type": "internal", "value": (1, 2)}, fsync=False)
    assert stored["value"] == [1, 2]  # as a reader sees it
    attachment.close()


# ---- bounds through the live path ------------------------------------------------------------


@pytest.mark.parametrize(("extra", "ok"), [(0, True), (1, False)])
def test_snapshot_bytes_edge_after_appends(
    store: SessionStore, cwd: Path, extra: int, ok: bool
) -> None:
    # The bulk is written as a file (redacting 8 MiB twice more would make this test slow);
    # the append that reaches the budget goes through the live path.
    body = "0" * (HISTORY_CHUNK_BYTES // 4)
    count = HISTORY_SNAPSHOT_BYTES // (len(body) + 100)
    write_session(store, [header(cwd), *[{"type": "compaction", "text": body}] * count])
    attachment, _ = store.open(SID, cwd)
    used = sum(serialized_bytes(e) for p in pages(attachment.history) for e in p.entries)
    last = {"message_id": f"m{count}", "kind": "compaction", "text": "", "partial": False}
    room = HISTORY_SNAPSHOT_BYTES - used - serialized_bytes({**last, "part": 0, "last_part": True})
    assert 0 < room < HISTORY_CHUNK_BYTES  # one plain ASCII part: one byte per character
    attachment.append({"type": "compaction", "text": "e" * (room + extra)}, fsync=False)
    live = _live(attachment)
    if ok:
        assert not isinstance(live, str)
        assert sum(map(serialized_bytes, live[1].parts)) == HISTORY_SNAPSHOT_BYTES
    else:
        assert live == "history_limit"
    attachment.close()


@pytest.mark.parametrize(("extra", "ok"), [(0, True), (1, False)])
def test_snapshot_parts_edge_after_appends(
    store: SessionStore, cwd: Path, extra: int, ok: bool
) -> None:
    write_session(store, [header(cwd)])
    attachment, _ = store.open(SID, cwd)
    for _ in range(HISTORY_SNAPSHOT_PARTS - 1):
        attachment.append({"type": "compaction", "text": "c"}, fsync=False)
    assert not isinstance(_live(attachment), str)  # a live build before the edge
    for _ in range(1 + extra):
        attachment.append({"type": "compaction", "text": "c"}, fsync=False)
    live = _live(attachment)
    _same(live, _fresh(store.path_of(SID), cwd))
    assert (live == "history_limit") is not ok
    if ok:
        assert attachment.history.part_count == HISTORY_SNAPSHOT_PARTS
    attachment.close()


def _internal_line(size: int) -> bytes:
    empty = line({"type": "internal", "text": ""})
    return line({"type": "internal", "text": "x" * (size - len(empty))})


@pytest.mark.parametrize(("extra", "ok"), [(0, True), (1, False)])
def test_stored_bytes_edge_after_appends(
    store: SessionStore, cwd: Path, extra: int, ok: bool
) -> None:
    start = line(header(cwd))
    filler = STORED_HISTORY_BYTES - len(start) - (1 << 20)
    write_session(store, [], tail=start + _internal_line(filler))
    attachment, _ = store.open(SID, cwd)
    assert not isinstance(_live(attachment), str)
    empty = len(dumps({"session_id": SID, "type": "internal", "text": ""})) + 1
    attachment.append({"type": "internal", "text": "x" * ((1 << 20) - empty + extra)}, fsync=False)
    assert store.path_of(SID).stat().st_size == STORED_HISTORY_BYTES + extra
    live = _live(attachment)
    assert (live == "history_limit") is not ok
    _same(live, _fresh(store.path_of(SID), cwd))
    attachment.close()


@pytest.mark.parametrize(("extra", "ok"), [(0, True), (1, False)])
def test_stored_lines_edge_after_appends(
    store: SessionStore, cwd: Path, extra: int, ok: bool
) -> None:
    body = line(header(cwd)) + _internal_line(80) * (STORED_HISTORY_LINES - 3)
    write_session(store, [], tail=body)
    attachment, _ = store.open(SID, cwd)
    for _ in range(2 + extra):
        attachment.append({"type": "internal", "text": "i"}, fsync=False)
    live = _live(attachment)
    assert (live == "history_limit") is not ok
    _same(live, _fresh(store.path_of(SID), cwd))
    attachment.close()
