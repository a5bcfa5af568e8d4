"""An immutable, bounded history snapshot and the pages cut from it.

A snapshot is built once from a `Projection` (`build`, or a `Builder` kept by an attachment
that reuses the parts of entries unchanged since its last build, and hands each snapshot
prefixes of its lists rather than copies, prefixes.py): every entry is chunked
(chunking.py) into parts, each part measured as serialized; more than HISTORY_SNAPSHOT_BYTES
of serialized parts or more than HISTORY_SNAPSHOT_PARTS parts is `history_limit`, never a
truncated projection. Parts are shared between snapshots and never mutated.

Pages are cut greedily from a cursor: at most HISTORY_PAGE_ENTRIES parts and at most
HISTORY_PAGE_BYTES for the whole serialized result object. Cursors are opaque, carry this
snapshot's random nonce and are only accepted if this snapshot issued them. Before each page
the owner's `is_current` check runs (file fingerprint, replay generation); once it fails the
snapshot is stale for good. A snapshot also keeps the projection's endings (projection.py),
which no page carries, for a face that draws the history itself. This module opens no files
itself.
"""

from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import compress, count
from operator import is_not
from typing import Any

from magi_code.ids import token_hex
from magi_code.limits import (
    HISTORY_PAGE_BYTES,
    HISTORY_PAGE_ENTRIES,
    HISTORY_SNAPSHOT_BYTES,
    HISTORY_SNAPSHOT_PARTS,
)
from magi_code.prefixes import Growing, Prefix
from magi_code.records import record
from magi_code.sessions.chunking import serialized_bytes, split_text
from magi_code.sessions.errors import SessionError
from magi_code.sessions.ids import valid_opaque_id
from magi_code.sessions.projection import Ending, Entry, Projection

Part = dict[str, Any]


@record
class Page:
    session_id: str
    revision: str
    entries: list[Part]
    next_cursor: str | None
    complete: bool

    def result(self) -> dict[str, Any]:
        """The `history.page` result object, exactly as it is measured."""
        return {
            "session_id": self.session_id,
            "revision": self.revision,
            "entries": self.entries,
            "next_cursor": self.next_cursor,
            "complete": self.complete,
        }


@record
class Built:
    """A projection chunked into parts, each with its serialized size."""

    parts: Sequence[Part]
    sizes: Sequence[int]
    complete: bool
    stored_ids: Mapping[str, str]  # stored user/assistant message_id -> projected message ID
    total: int  # sum of sizes
    endings: tuple[Ending, ...] = ()  # the projection's, by entry index


def fullness(built: Built) -> float:
    """The share of the tighter snapshot budget that `built` uses (1.0: exactly full)."""
    return max(len(built.parts) / HISTORY_SNAPSHOT_PARTS, built.total / HISTORY_SNAPSHOT_BYTES)


def build(
    projection: Projection,
    *,
    max_bytes: int = HISTORY_SNAPSHOT_BYTES,
    max_parts: int = HISTORY_SNAPSHOT_PARTS,
) -> Built:
    """Chunk every entry and measure each part; history_limit past the snapshot budget."""
    return Builder(max_bytes=max_bytes, max_parts=max_parts).build(projection)


class Builder:
    """`build`, reusing the parts of the leading entries that are the very same `Entry`
    objects as in its previous build (the projector hands out one object per unchanged
    entry), so a build after an append costs what changed, not the whole history."""

    def __init__(
        self, *, max_bytes: int = HISTORY_SNAPSHOT_BYTES, max_parts: int = HISTORY_SNAPSHOT_PARTS
    ) -> None:
        self._max_bytes, self._max_parts = max_bytes, max_parts
        self._source: Sequence[Entry] = ()  # the last build's entries, the first len(_ids) built
        self._ids: Growing[str] = Growing()  # projected message ID per entry
        self._ends: list[int] = []  # parts up to and including each entry
        self._totals: list[int] = []  # serialized bytes up to and including each entry
        self._parts: Growing[Part] = Growing()
        self._sizes: Growing[int] = Growing()
        self._used: set[str] = set()  # stored-ID based IDs taken

    def build(self, projection: Projection) -> Built:
        entries = projection.entries
        self._truncate(min(_common_prefix(entries, self._source), len(self._ids)))
        self._source = entries
        for index in range(len(self._ids), len(entries)):
            self._add(index, entries[index])
        return Built(
            self._parts.prefix(),
            self._sizes.prefix(),
            projection.complete,
            _StoredIds(entries, self._ids.prefix()),
            self._totals[-1] if self._totals else 0,
            projection.endings,
        )

    def _add(self, index: int, entry: Entry) -> None:
        """Chunk one entry; history_limit (leaving the entries before it) past the budget."""
        pieces = split_text(entry.text)
        projected = _message_id(index, entry, self._used)
        parts = [
            {
                "message_id": projected,
                "kind": entry.kind,
                "text": piece,
                "partial": entry.partial,
                "part": number,
                "last_part": number == len(pieces) - 1,
            }
            for number, piece in enumerate(pieces)
        ]
        sizes = [serialized_bytes(part) for part in parts]
        total = (self._totals[-1] if self._totals else 0) + sum(sizes)
        if total > self._max_bytes or len(self._parts) + len(parts) > self._max_parts:
            self._used.discard(projected)
            raise SessionError("history_limit")
        self._ids.append(projected)
        self._parts.extend(parts)
        self._sizes.extend(sizes)
        self._ends.append(len(self._parts))
        self._totals.append(total)

    def _truncate(self, keep: int) -> None:
        if keep == len(self._ids):
            return
        self._used.difference_update(self._ids[keep:])  # fallback IDs were never in it
        self._ids.truncate(keep)
        del self._ends[keep:], self._totals[keep:]
        cut = self._ends[-1] if self._ends else 0
        self._parts.truncate(cut)
        self._sizes.truncate(cut)


def _common_prefix(new: Sequence[Entry], old: Sequence[Entry]) -> int:
    """How many leading entries are the very same objects, compared in C.

    Two projections of one projector share its list, so the usual case (entries added after
    the old ones) looks only at what was added (prefixes.py).
    """
    if isinstance(new, Prefix):
        return new.common_prefix(old)
    differing = compress(count(), map(is_not, new, old))
    return next(differing, min(len(new), len(old)))


class _StoredIds(Mapping[str, str]):
    """stored message_id -> projected ID (the last entry wins), made on first use."""

    def __init__(self, entries: Sequence[Entry], ids: Sequence[str]) -> None:
        self._entries, self._ids = entries, ids
        self._made: dict[str, str] | None = None

    def _mapping(self) -> dict[str, str]:
        if self._made is None:
            pairs = zip(self._entries, self._ids, strict=True)
            self._made = {e.stored_id: i for e, i in pairs if e.stored_id is not None}
        return self._made

    def __getitem__(self, key: str) -> str:
        return self._mapping()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())


def projected_message_id(kind: str, stored_id: str) -> str:
    """The ID a user/assistant message gets from its stored message_id when that is usable.

    "u." or "a." plus the stored ID; `build` falls back to "m<index>" when the result breaks
    the ID grammar or repeats, so the runner should store unique grammar-safe IDs (uuid hex).
    """
    return f"{kind[0]}.{stored_id}"


def _message_id(index: int, entry: Entry, used: set[str]) -> str:
    """Stored-ID based when possible (stable for the runner's acknowledgements), else m<index>.

    The two forms cannot collide: fallbacks start with "m", stored-ID forms with "u." / "a.".
    """
    if entry.stored_id is not None:
        preferred = projected_message_id(entry.kind, entry.stored_id)
        if valid_opaque_id(preferred) and preferred not in used:
            used.add(preferred)
            return preferred
    return f"m{index}"


class HistorySnapshot:
    """One revision of a session's projection; `page` serves it until it goes stale."""

    def __init__(
        self,
        session_id: str,
        revision: str,
        built: Built,
        is_current: Callable[[], bool],
    ) -> None:
        self.session_id = session_id
        self.revision = revision
        self.complete = built.complete
        self._parts, self._sizes = built.parts, built.sizes
        self._stored_ids = built.stored_ids
        self.endings = built.endings  # how runs that did not complete ended (never paged)
        self._is_current = is_current
        self._nonce = token_hex(8)
        self._cursors: dict[str, int] = {}
        self._stale = False

    @property
    def part_count(self) -> int:
        return len(self._parts)

    def message_id_for(self, stored_message_id: str) -> str | None:
        """The projected ID of a stored user/assistant message_id, if it is in this snapshot."""
        return self._stored_ids.get(stored_message_id)

    def invalidate(self) -> None:
        self._stale = True

    def page(self, revision: str, cursor: str | None) -> Page:
        if self._stale or revision != self.revision:
            raise SessionError("stale_revision")
        if not self._is_current():
            self._stale = True
            raise SessionError("stale_revision")
        start = 0 if cursor is None else self._cursors.get(cursor)
        if start is None:
            raise SessionError("stale_revision")
        end = self._page_end(start)
        next_cursor = self._issue(end) if end < len(self._parts) else None
        page = Page(
            self.session_id,
            self.revision,
            list(self._parts[start:end]),
            next_cursor,
            self.complete and next_cursor is None,
        )
        if serialized_bytes(page.result()) > HISTORY_PAGE_BYTES:
            raise SessionError("content_limit")  # chunking keeps this unreachable
        return page

    def _page_end(self, start: int) -> int:
        widest_cursor = self._cursor_text(len(self._parts))
        envelope = serialized_bytes(
            Page(self.session_id, self.revision, [], widest_cursor, False).result()
        )
        size, end = envelope, start
        while end < len(self._parts) and end - start < HISTORY_PAGE_ENTRIES:
            grown = size + self._sizes[end] + (1 if end > start else 0)
            if grown > HISTORY_PAGE_BYTES:
                break
            size, end = grown, end + 1
        if end == start and start < len(self._parts):
            raise SessionError("content_limit")
        return end

    def _cursor_text(self, index: int) -> str:
        return f"{self._nonce}.{index}"

    def _issue(self, index: int) -> str:
        cursor = self._cursor_text(index)
        self._cursors[cursor] = index
        return cursor
