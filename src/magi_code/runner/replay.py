"""Provider replay: stored records -> the items a model is shown. Pure; no I/O.

Replay is backend-owned and distinct from the history projection a face sees: it keeps raw
tool results (which the projection never shows) and drops what the model never said.
A segment's complete `assistant` record wins over its chunks; a tool call that never
finished (a crash mid-tool) is left out together with its call.

`Replayer` is the incremental form: feed records in stored order, ask for the items at any
point; `replay` feeds it a whole sequence. A `compaction` record replaces everything before
the prompt it names (`keep_from`) with its summary.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from magi_code.providers.base import AssistantText, Item, ToolCall, ToolResult, UserText
from magi_code.runner.compaction import summary_item
from magi_code.runner.peers import peer_text


class Replayer:
    def __init__(self) -> None:
        self._items: list[Item] = []
        self._chunks: dict[str, list[str]] = {}
        self._slots: dict[str, int] = {}  # assistant message_id -> index in items
        self._prompts: dict[str, int] = {}  # user message_id -> index in items

    def feed(self, record: Mapping[str, Any]) -> None:
        kind = record.get("type")
        if kind == "user":
            self._prompts[str(record.get("message_id", ""))] = len(self._items)
            self._items.append(UserText(str(record["text"])))
        elif kind == "peer":  # labelled as a peer's, never as the user's
            who, sort, text = (str(record[k]) for k in ("who", "sort", "text"))
            self._items.append(UserText(peer_text(who, sort, text)))
        elif kind == "compaction":
            self._compact(str(record["text"]), str(record.get("keep_from", "")))
        elif kind == "assistant_chunk":
            mid = str(record["message_id"])
            chunks = self._chunks.setdefault(mid, [])
            chunks.append(str(record["text"]))
            self._place(mid, "".join(chunks))
        elif kind == "assistant":
            self._place(str(record["message_id"]), str(record["text"]))
        elif kind == "tool" and record.get("state") in ("completed", "failed"):
            call_id = str(record.get("call_id", record.get("activity_id", "")))
            arguments = str(record.get("arguments", "{}"))
            self._items.append(ToolCall(call_id, str(record["name"]), arguments))
            self._items.append(
                ToolResult(call_id, str(record.get("result", "")), record.get("state") == "failed")
            )

    def items(self) -> list[Item]:
        """The items so far, as a new list the caller may extend."""
        return self._items.copy()

    def _compact(self, summary: str, keep_from: str) -> None:
        start = self._prompts.get(keep_from, len(self._items))
        self._items = [summary_item(summary), *self._items[start:]]
        shift = start - 1
        self._slots = {m: i - shift for m, i in self._slots.items() if i >= start}
        self._prompts = {m: i - shift for m, i in self._prompts.items() if i >= start}

    def _place(self, message_id: str, text: str) -> None:
        if message_id in self._slots:
            self._items[self._slots[message_id]] = AssistantText(text)
        else:
            self._slots[message_id] = len(self._items)
            self._items.append(AssistantText(text))


def replay(records: Iterable[Mapping[str, Any]]) -> list[Item]:
    replayer = Replayer()
    for record in records:
        replayer.feed(record)
    return replayer.items()
