"""Primary auto-compaction: when what the model would be shown outgrows a share of its
context window, the conversation before the current prompt is replaced by a summary the
model writes, recorded as a `compaction` record so later turns replay from it.

Token counts come from the provider's last usage figure plus a bytes/4 estimate of what was
added since; without a usage figure, the whole request is estimated at bytes/4. A replay hands
its items over as `SizedItems`, which know the size of what was replayed, so that estimate
costs what a turn added, not the whole history, at every turn's first model call; they share
the replay's list rather than copy it (prefixes.py), and so does each request made of them.
"""

from collections.abc import Iterator, Sequence
from typing import overload

from magi_code.prefixes import Prefix
from magi_code.providers.base import AssistantText, Item, ToolCall, ToolResult, Usage, UserText

COMPACT_AT = 0.8  # share of the context window that triggers a compaction
DEFAULT_CONTEXT_WINDOW = 128_000  # tokens, when the provider's settings name none
SUMMARY_INSTRUCTIONS = (
    "Summarize the conversation so far for your own later use: the user's goals, decisions "
    "taken, files touched, commands run and their outcomes, and what remains to do. Be "
    "complete but brief; do not address the user."
)
SUMMARY_PREFIX = "[Summary of the earlier conversation]\n"
SUMMARY_REQUEST = "Summarize the conversation above."


def summary_request(focus: str = "") -> str:
    """The last message of a summary request; `focus` is the person's own instructions for
    it (`/compact TEXT`)."""
    if not focus.strip():
        return SUMMARY_REQUEST
    return f"{SUMMARY_REQUEST} The user's instructions for this summary:\n{focus.strip()}"


def item_bytes(item: Item) -> int:
    if isinstance(item, UserText | AssistantText):
        return len(item.text.encode("utf-8", "surrogatepass"))
    if isinstance(item, ToolCall):
        return len(item.arguments) + len(item.name)
    if isinstance(item, ToolResult):
        return len(item.output.encode("utf-8", "surrogatepass"))
    return 0


class SizedItems(Sequence[Item]):
    """Items that know the total `item_bytes` (`size`) of their first `sized` ones, which are
    never replaced; a run appends what it adds after them."""

    def __init__(self, items: Sequence[Item], size: int) -> None:
        self._head = items if isinstance(items, Prefix) else Prefix(list(items), len(items))
        self._added: list[Item] = []
        self.sized, self.size = len(items), size

    @classmethod
    def measured(cls, items: Sequence[Item]) -> "SizedItems":
        return cls(items, sum(map(item_bytes, items)))

    def append(self, item: Item) -> None:
        self._added.append(item)

    def frozen(self) -> Prefix[Item]:
        """The items now, immutable (a request's), at the cost of what the run added."""
        return self._head.extended(self._added)

    def __len__(self) -> int:
        return self.sized + len(self._added)

    @overload
    def __getitem__(self, index: int) -> Item: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Item, ...]: ...
    def __getitem__(self, index: int | slice) -> Item | tuple[Item, ...]:
        if isinstance(index, slice):
            return self.frozen()[index]
        position = index + len(self) if index < 0 else index
        if 0 <= position < self.sized:
            return self._head[position]
        if position < 0:
            raise IndexError("item index out of range")
        return self._added[position - self.sized]

    def __iter__(self) -> Iterator[Item]:
        return iter(self.frozen())


def total_bytes(items: Sequence[Item]) -> int:
    if isinstance(items, SizedItems) and len(items) >= items.sized:
        return items.size + sum(map(item_bytes, items[items.sized :]))
    return sum(map(item_bytes, items))


def estimate_tokens(items: Sequence[Item], usage: Usage | None, counted: int) -> int:
    """`counted` items were part of the request `usage` reports on."""
    if usage is None:
        return total_bytes(items) // 4
    return usage.input_tokens + usage.output_tokens + sum(map(item_bytes, items[counted:])) // 4


def due(items: Sequence[Item], usage: Usage | None, counted: int, window: int) -> bool:
    return estimate_tokens(items, usage, counted) > window * COMPACT_AT


def summary_item(summary: str) -> UserText:
    return UserText(SUMMARY_PREFIX + summary)
