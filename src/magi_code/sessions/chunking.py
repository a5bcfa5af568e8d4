"""Splitting projected text into parts that fit both the raw and the serialized page bounds.

Rules: a part holds at most HISTORY_CHUNK_BYTES of UTF-8, and its JSON-escaped form must leave
room for one whole page envelope within HISTORY_PAGE_BYTES (``TEXT_ESCAPED_BYTES``). Parts are
cut between code points, so never inside a UTF-8 sequence; Python strings hold astral
characters as one code point and ``ensure_ascii=False`` writes them raw, so no surrogate pair
is ever split either. Pure: no files, no clock.
"""

import json
from typing import Any

from magi_code.limits import (
    HISTORY_CHUNK_BYTES,
    HISTORY_PAGE_BYTES,
    HISTORY_SNAPSHOT_PARTS,
    ID_BYTES,
    SESSION_ID_BYTES,
)

ENTRY_KINDS = ("user", "assistant", "reasoning_summary", "activity", "compaction", "diagnostic")


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(value: Any) -> str:
    """The one wire serialization every size in this package is measured with."""
    return _ENCODER.encode(value)


def serialized_bytes(value: Any) -> int:
    return len(dumps(value).encode("utf-8"))


def escaped_bytes(text: str) -> int:
    """UTF-8 bytes of `text` inside a JSON string, quotes excluded."""
    return serialized_bytes(text) - 2


def _largest_single_entry_page() -> int:
    """Serialized bytes of a page with one empty-text entry and every field at its widest."""
    widest = "x" * ID_BYTES
    entry = {
        "message_id": widest,
        "kind": max(ENTRY_KINDS, key=len),
        "text": "",
        "partial": False,
        "part": HISTORY_SNAPSHOT_PARTS,
        "last_part": False,
    }
    page = {
        "session_id": "x" * SESSION_ID_BYTES,
        "revision": widest,
        "entries": [entry],
        "next_cursor": widest,
        "complete": False,
    }
    return serialized_bytes(page)


TEXT_ESCAPED_BYTES = HISTORY_PAGE_BYTES - _largest_single_entry_page()


def fits(piece: str) -> bool:
    return (
        len(piece.encode("utf-8")) <= HISTORY_CHUNK_BYTES
        and escaped_bytes(piece) <= TEXT_ESCAPED_BYTES
    )


def split_text(text: str) -> list[str]:
    """Cut `text` into the fewest greedy parts that each `fits`; "" gives one empty part."""
    parts: list[str] = []
    start, end = 0, len(text)
    while start < end:
        # A code point is at least one byte, so no part has more code points than raw bytes.
        hi = min(end - start, HISTORY_CHUNK_BYTES)
        if not fits(text[start : start + hi]):
            lo = 1  # one code point (≤ 4 raw, ≤ 6 escaped bytes) always fits
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if fits(text[start : start + mid]):
                    lo = mid
                else:
                    hi = mid - 1
        parts.append(text[start : start + hi])
        start += hi
    return parts or [""]
