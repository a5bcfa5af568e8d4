"""Provider replay: stored records -> the items a model is shown. Pure; no I/O.

Replay is backend-owned and distinct from the history projection a face sees: it keeps raw
tool results (which the projection never shows) and drops what the model never said.
A segment's complete `assistant` record wins over its chunks exactly as in the history
projection (sessions/projection.py): segments are keyed by run and message, chunks are joined
in stored order, chunks after the reconciled copy change nothing, and a legacy `assistant`
record without text (absent or null) leaves the chunks standing. A tool call that never
finished (a crash mid-tool) is left out together with its call.

`Replayer` is the incremental form: feed records in stored order, ask for the items at any
point (they share its list, prefixes.py, so asking costs nothing however long the history);
`replay` feeds it a whole sequence. A `compaction` record replaces everything before
the prompt it names (`keep_from`) with its summary. An `activity` record (a hook run, a Code
Mode call) is no tool call of the model's: only a hook's `context` is replayed (as user text
where the hook ran), and a prompt a hook blocked (`drops_prompt`) is taken out. A prompt's and
a tool result's stored `images` come back with them, as the model was first sent them. A
`rewind` record takes out the prompt it names (`drop_from`) and everything after it, as the
history projection does.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from magi_code.prefixes import Growing
from magi_code.providers.base import (
    AssistantText,
    ImagePart,
    Item,
    ToolCall,
    ToolResult,
    UserText,
)
from magi_code.runner.compaction import SizedItems, item_bytes, summary_item
from magi_code.runner.peers import peer_text


class Replayer:
    def __init__(self) -> None:
        self._items: Growing[Item] = Growing()
        self._chunks: dict[tuple[str, str], list[str] | None] = {}  # None once reconciled
        self._slots: dict[tuple[str, str], int] = {}  # assistant (run_id, message_id) -> index
        self._prompts: dict[str, int] = {}  # user message_id -> index in items
        self._bytes = 0  # item_bytes of all items, kept as they change

    def feed(self, record: Mapping[str, Any]) -> None:
        kind = record.get("type")
        if kind == "user":
            self._prompts[str(record.get("message_id", ""))] = len(self._items)
            self._append(UserText(str(record["text"]), stored_images(record)))
        elif kind == "peer":  # labelled as a peer's, never as the user's
            who, sort, body = (str(record[k]) for k in ("who", "sort", "text"))
            self._append(UserText(peer_text(who, sort, body)))
        elif kind == "compaction":
            self._compact(str(record["text"]), str(record.get("keep_from", "")))
        elif kind == "rewind":
            self._rewind(str(record["drop_from"]))
        elif kind == "assistant_chunk":
            segment = _segment(record)
            chunks = self._chunks.setdefault(segment, [])
            if chunks is not None:
                chunks.append(str(record["text"]))
                self._place(segment, "".join(chunks))
        elif kind == "assistant":
            text = record.get("text")
            if text is not None:  # a legacy record without text leaves its chunks standing
                self._chunks[_segment(record)] = None
                self._place(_segment(record), str(text))
        elif kind == "activity":
            self._activity(record)
        elif kind == "tool" and record.get("state") in ("completed", "failed"):
            call_id = str(record.get("call_id", record.get("activity_id", "")))
            arguments = str(record.get("arguments", "{}"))
            self._append(ToolCall(call_id, str(record["name"]), arguments))
            result, failed = str(record.get("result", "")), record.get("state") == "failed"
            self._append(ToolResult(call_id, result, failed, stored_images(record)))

    def items(self) -> SizedItems:
        """The items so far, which later records do not change; the caller may add to them."""
        return SizedItems(self._items.prefix(), self._bytes)

    def _append(self, item: Item) -> None:
        self._items.append(item)
        self._bytes += item_bytes(item)

    def _activity(self, record: Mapping[str, Any]) -> None:
        context = record.get("context")
        if isinstance(context, str):
            self._append(UserText(context))
        dropped = self._prompts.pop(str(record.get("drops_prompt")), None)
        if dropped is not None:
            self._bytes -= item_bytes(self._items.pop_at(dropped))
            self._slots = {m: i - (i > dropped) for m, i in self._slots.items()}
            self._prompts = {m: i - (i > dropped) for m, i in self._prompts.items()}

    def _compact(self, summary: str, keep_from: str) -> None:
        start = self._prompts.get(keep_from, len(self._items))
        self._items = Growing([summary_item(summary), *self._items[start:]])
        self._bytes = sum(map(item_bytes, self._items))
        shift = start - 1
        self._slots = {m: i - shift for m, i in self._slots.items() if i >= start}
        self._prompts = {m: i - shift for m, i in self._prompts.items() if i >= start}
        self._chunks = {s: c for s, c in self._chunks.items() if s in self._slots}

    def _rewind(self, drop_from: str) -> None:
        cut = self._prompts.get(drop_from)
        if cut is None:  # compacted away, or dropped already
            return
        self._items.truncate(cut)
        self._bytes = sum(map(item_bytes, self._items))
        self._slots = {m: i for m, i in self._slots.items() if i < cut}
        self._prompts = {m: i for m, i in self._prompts.items() if i < cut}
        self._chunks = {s: c for s, c in self._chunks.items() if s in self._slots}

    def _place(self, segment: tuple[str, str], text: str) -> None:
        if segment in self._slots:
            index = self._slots[segment]
            self._bytes -= item_bytes(self._items[index])
            self._items[index] = AssistantText(text)
            self._bytes += item_bytes(self._items[index])
        else:
            self._slots[segment] = len(self._items)
            self._append(AssistantText(text))


def stored_images(record: Mapping[str, Any]) -> tuple[ImagePart, ...]:
    """A record's `images` (sessions/records.py checked their shape)."""
    images = record.get("images") or ()
    return tuple(ImagePart(i["media_type"], i["data"], i["description"]) for i in images)


def _segment(record: Mapping[str, Any]) -> tuple[str, str]:
    return str(record.get("run_id", "")), str(record["message_id"])


def replay(records: Iterable[Mapping[str, Any]]) -> list[Item]:
    replayer = Replayer()
    for record in records:
        replayer.feed(record)
    return list(replayer.items())
