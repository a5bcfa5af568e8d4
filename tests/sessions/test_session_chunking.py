"""Chunking and paging: raw and serialized bounds, heavy JSON escaping, exact reassembly."""

import json
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sessions_support import messages, page_json

from magi_code.limits import (
    HISTORY_CHUNK_BYTES,
    HISTORY_PAGE_BYTES,
    HISTORY_PAGE_ENTRIES,
    SESSION_ID_BYTES,
)
from magi_code.sessions import HistorySnapshot, Page, redact
from magi_code.sessions.chunking import TEXT_ESCAPED_BYTES, escaped_bytes, split_text
from magi_code.sessions.projection import Projector
from magi_code.sessions.snapshot import build

WIDEST_SESSION = "s" * SESSION_ID_BYTES

# Characters that cost the most per raw byte when escaped, plus multibyte and astral ones.
HEAVY = ["\x00", "\x01", "\x1f", "\n", "\t", '"', "\\", "😀", "𝄞", "é", "中", "\u2028", "a", " "]
SECRET = "sk-" + "Q" * 24


@st.composite
def heavy_text(draw: st.DrawFn, max_runs: int = 12, max_run: int = 6000) -> str:
    runs = draw(
        st.lists(
            st.tuples(st.sampled_from([*HEAVY, SECRET, "ab"]), st.integers(1, max_run)),
            max_size=max_runs,
        )
    )
    return "".join(piece * count for piece, count in runs)


def _snapshot(texts: list[str], session_id: str = WIDEST_SESSION) -> HistorySnapshot:
    projector = Projector()
    for number, text in enumerate(texts):
        projector.feed(
            {"type": "user", "message_id": f"u{number}", "run_id": f"r{number}", "text": text}
        )
        projector.feed({"type": "run_finished", "run_id": f"r{number}", "outcome": "completed"})
    return HistorySnapshot(session_id, "r0." + "f" * 40, build(projector.finish()), lambda: True)


def _all(snapshot: HistorySnapshot) -> list[Page]:
    out = [snapshot.page(snapshot.revision, None)]
    while out[-1].next_cursor is not None:
        out.append(snapshot.page(snapshot.revision, out[-1].next_cursor))
    return out


def _check_bounds(all_pages: list[Page]) -> None:
    for page in all_pages:
        raw = page_json(page)
        assert len(raw) <= HISTORY_PAGE_BYTES
        assert 1 <= len(page.entries) <= HISTORY_PAGE_ENTRIES or len(all_pages) == 1
        assert json.loads(raw) == page.result()
        for entry in page.entries:
            assert len(entry["text"].encode("utf-8")) <= HISTORY_CHUNK_BYTES


@settings(max_examples=60, deadline=None)
@given(heavy_text())
def test_split_text_reassembles_within_both_bounds(text: str) -> None:
    parts = split_text(text)
    assert "".join(parts) == text
    assert all(parts) or parts == [""]
    for part in parts:
        assert len(part.encode("utf-8")) <= HISTORY_CHUNK_BYTES
        assert escaped_bytes(part) <= TEXT_ESCAPED_BYTES
    # greedy: adding the next code point to any part but the last would break a bound
    for part, following in pairwise(parts):
        grown = part + following[0]
        assert (
            len(grown.encode("utf-8")) > HISTORY_CHUNK_BYTES
            or escaped_bytes(grown) > TEXT_ESCAPED_BYTES
        )


@settings(max_examples=25, deadline=None)
@given(st.lists(heavy_text(max_runs=6, max_run=4000), min_size=1, max_size=6))
def test_pages_fit_and_messages_reassemble_to_redacted_text(texts: list[str]) -> None:
    all_pages = _all(_snapshot(texts))
    _check_bounds(all_pages)
    assert messages(all_pages) == [("user", redact(t), False) for t in texts]
    assert all_pages[-1].complete and not any(p.complete for p in all_pages[:-1])


@pytest.mark.parametrize(
    ("piece", "count"),
    [
        pytest.param("\x01", 40_000, id="control-chars-6-bytes-each"),
        pytest.param('"', 40_000, id="quotes"),
        pytest.param("\\", 40_000, id="backslashes"),
        pytest.param("😀", 20_000, id="astral-emoji"),
        pytest.param('\x00😀"\\\n', 9_000, id="mixed"),
    ],
)
def test_heavily_escaping_text_fills_pages_without_overflow(piece: str, count: int) -> None:
    text = piece * count
    all_pages = _all(_snapshot([text]))
    _check_bounds(all_pages)
    assert messages(all_pages) == [("user", text, False)]
    # the bound is used, not wasted: every page but the last is over half full
    assert all(len(page_json(p)) > HISTORY_PAGE_BYTES // 2 for p in all_pages[:-1])


def test_chunk_edge_raw_bytes() -> None:
    assert split_text("a" * HISTORY_CHUNK_BYTES) == ["a" * HISTORY_CHUNK_BYTES]
    assert split_text("a" * (HISTORY_CHUNK_BYTES + 1)) == ["a" * HISTORY_CHUNK_BYTES, "a"]


def test_chunk_edge_escaped_bytes() -> None:
    # quotes cost 2 escaped bytes for 1 raw byte: hit both bounds exactly at once
    quotes = TEXT_ESCAPED_BYTES - HISTORY_CHUNK_BYTES
    exact = '"' * quotes + "a" * (HISTORY_CHUNK_BYTES - quotes)
    assert escaped_bytes(exact) == TEXT_ESCAPED_BYTES
    assert len(exact.encode()) == HISTORY_CHUNK_BYTES
    assert split_text(exact) == [exact]
    over = '"' + exact[:-1]  # same raw size, one escaped byte more
    assert len(split_text(over)) == 2


def test_entries_per_page_edge() -> None:
    all_pages = _all(_snapshot(["x"] * (HISTORY_PAGE_ENTRIES + 1)))
    assert [len(p.entries) for p in all_pages] == [HISTORY_PAGE_ENTRIES, 1]


def test_astral_characters_are_never_split() -> None:
    text = "a" + "😀" * (HISTORY_CHUNK_BYTES // 4)  # 4-byte characters straddle the raw bound
    parts = split_text(text)
    assert len(parts) == 2 and "".join(parts) == text
    for part in parts:
        assert part.encode("utf-8").decode("utf-8") == part
    assert len(parts[0].encode()) == HISTORY_CHUNK_BYTES - 3


def test_serialized_page_is_what_the_wire_would_carry() -> None:
    (page,) = _all(_snapshot(["hi"]))
    wire: dict[str, Any] = json.loads(page_json(page))
    assert set(wire) == {"session_id", "revision", "entries", "next_cursor", "complete"}
    assert set(wire["entries"][0]) == {"message_id", "kind", "text", "partial", "part", "last_part"}
