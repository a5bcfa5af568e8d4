"""Every history bound at its exact edge (N passes, N+1 is history_limit)."""

from pathlib import Path
from typing import Any

import pytest
from sessions_support import SID, header, line, pages, write_session

from magi_code.limits import (
    HISTORY_CHUNK_BYTES,
    HISTORY_SNAPSHOT_BYTES,
    HISTORY_SNAPSHOT_PARTS,
    STORED_HISTORY_BYTES,
    STORED_HISTORY_LINES,
)
from magi_code.sessions import SessionError, SessionStore
from magi_code.sessions.chunking import serialized_bytes
from magi_code.sessions.projection import Projector
from magi_code.sessions.snapshot import build

BLOCK = 1 << 20


def _internal(size: int) -> bytes:
    """One never-projected record line of exactly `size` bytes, LF included."""
    empty = line({"type": "internal", "text": ""})
    return line({"type": "internal", "text": "x" * (size - len(empty))})


def _write_bytes(store: SessionStore, cwd: Path, total: int) -> None:
    first = line(header(cwd))
    store.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = store.path_of(SID)
    with path.open("wb") as out:
        out.write(first)
        remaining = total - len(first)
        while remaining:
            size = remaining if remaining < 2 * BLOCK else BLOCK
            out.write(_internal(size))
            remaining -= size
    path.chmod(0o600)
    assert path.stat().st_size == total


def _write_lines(store: SessionStore, cwd: Path, count: int, tail: bytes = b"") -> None:
    body = line(header(cwd)) + _internal(80) * (count - 1) + tail
    write_session(store, [], tail=body)


def _opens(store: SessionStore, cwd: Path) -> bool:
    try:
        attachment, _ = store.open(SID, cwd)
    except SessionError as err:
        assert err.code == "history_limit"
        return False
    attachment.close()
    return True


@pytest.mark.parametrize(("extra", "ok"), [(0, True), (1, False)])
def test_stored_bytes_edge(store: SessionStore, cwd: Path, extra: int, ok: bool) -> None:
    _write_bytes(store, cwd, STORED_HISTORY_BYTES + extra)
    assert _opens(store, cwd) is ok


@pytest.mark.parametrize(("extra", "ok"), [(0, True), (1, False)])
def test_stored_lines_edge(store: SessionStore, cwd: Path, extra: int, ok: bool) -> None:
    _write_lines(store, cwd, STORED_HISTORY_LINES + extra)
    assert _opens(store, cwd) is ok


def test_a_torn_tail_counts_as_a_line(store: SessionStore, cwd: Path) -> None:
    _write_lines(store, cwd, STORED_HISTORY_LINES, tail=b'{"session_id"')
    assert _opens(store, cwd) is False


def _compactions(texts: list[str]) -> list[dict[str, Any]]:
    return [{"type": "compaction", "text": t} for t in texts]


def _projected_bytes(records: list[dict[str, Any]]) -> int:
    """The serialized projection of records, measured with the budgets lifted."""
    projector = Projector(max_bytes=1 << 40, max_parts=1 << 40)
    for record in records:
        projector.feed({"session_id": SID, **record})
    built = build(projector.finish(), max_bytes=1 << 40, max_parts=1 << 40)
    return sum(built.sizes)


@pytest.mark.parametrize(("extra", "ok"), [(0, True), (1, False)])
def test_snapshot_bytes_edge(store: SessionStore, cwd: Path, extra: int, ok: bool) -> None:
    body = "b" * (HISTORY_CHUNK_BYTES // 4)
    count = HISTORY_SNAPSHOT_BYTES // _projected_bytes(_compactions([body])) - 1
    texts = [body] * count + [""]
    # the last entry is plain ASCII in one part, so its size grows one byte per character
    texts[-1] = "e" * (HISTORY_SNAPSHOT_BYTES - _projected_bytes(_compactions(texts)) + extra)
    assert len(texts[-1]) < HISTORY_CHUNK_BYTES
    assert _projected_bytes(_compactions(texts)) == HISTORY_SNAPSHOT_BYTES + extra
    write_session(store, [header(cwd), *_compactions(texts)])
    assert _opens(store, cwd) is ok
    if ok:
        attachment, _ = store.open(SID, cwd)
        all_pages = pages(attachment.history)
        assert sum(serialized_bytes(e) for p in all_pages for e in p.entries) == (
            HISTORY_SNAPSHOT_BYTES
        )
        assert all_pages[-1].complete
        attachment.close()


@pytest.mark.parametrize(("extra", "ok"), [(0, True), (1, False)])
def test_snapshot_parts_edge_one_part_each(
    store: SessionStore, cwd: Path, extra: int, ok: bool
) -> None:
    write_session(store, [header(cwd), *_compactions(["c"] * (HISTORY_SNAPSHOT_PARTS + extra))])
    assert _opens(store, cwd) is ok


@pytest.mark.parametrize(("extra", "ok"), [(0, True), (1, False)])
def test_snapshot_parts_edge_with_a_split_message(
    store: SessionStore, cwd: Path, extra: int, ok: bool
) -> None:
    split = "s" * (HISTORY_CHUNK_BYTES + 1)  # two parts
    texts = ["c"] * (HISTORY_SNAPSHOT_PARTS - 2 + extra) + [split]
    write_session(store, [header(cwd), *_compactions(texts)])
    assert _opens(store, cwd) is ok
    if ok:
        attachment, _ = store.open(SID, cwd)
        assert attachment.history.part_count == HISTORY_SNAPSHOT_PARTS
        attachment.close()
