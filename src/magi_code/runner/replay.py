"""Provider replay: stored records -> the items a model is shown. Pure; no I/O.

Replay is backend-owned and distinct from the history projection a face sees: it keeps raw
tool results (which the projection never shows) and drops what the model never said.
A segment's complete `assistant` record wins over its chunks; a tool call that never
finished (a crash mid-tool) is left out together with its call.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from magi_code.providers.base import AssistantText, Item, ToolCall, ToolResult, UserText


def replay(records: Iterable[Mapping[str, Any]]) -> list[Item]:
    items: list[Item] = []
    chunks: dict[str, list[str]] = {}
    slots: dict[str, int] = {}  # assistant message_id -> index in items
    for record in records:
        kind = record.get("type")
        if kind == "user":
            items.append(UserText(str(record["text"])))
        elif kind == "assistant_chunk":
            mid = str(record["message_id"])
            chunks.setdefault(mid, []).append(str(record["text"]))
            _place(items, slots, mid, "".join(chunks[mid]))
        elif kind == "assistant":
            _place(items, slots, str(record["message_id"]), str(record["text"]))
        elif kind == "tool" and record.get("state") in ("completed", "failed"):
            call_id = str(record.get("call_id", record.get("activity_id", "")))
            items.append(ToolCall(call_id, str(record["name"]), str(record.get("arguments", "{}"))))
            items.append(
                ToolResult(call_id, str(record.get("result", "")), record.get("state") == "failed")
            )
    return items


def _place(items: list[Item], slots: dict[str, int], message_id: str, text: str) -> None:
    if message_id in slots:
        items[slots[message_id]] = AssistantText(text)
    else:
        slots[message_id] = len(items)
        items.append(AssistantText(text))
