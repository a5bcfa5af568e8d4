"""The fixture provider finds its script from the end of the request: a turn's prompt and the
calls after it, never the history before the prompt (issue 19.8: that scan grew every turn)."""

import json
from collections.abc import Sequence
from typing import overload

from magi_code.providers.base import AssistantText, Item, ModelRequest, ToolCall, UserText
from magi_code.providers.fixture import script_and_round


class Watched(Sequence[Item]):
    """A request's items that remember which positions were read."""

    def __init__(self, items: list[Item]) -> None:
        self._items = items
        self.read: set[int] = set()

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Item: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Item, ...]: ...
    def __getitem__(self, index: int | slice) -> Item | tuple[Item, ...]:
        positions = range(len(self))[index]
        if isinstance(positions, int):
            self.read.add(positions)
            return self._items[positions]
        self.read.update(positions)
        return tuple(self._items[i] for i in positions)


def test_the_script_is_found_without_reading_the_history_before_the_prompt() -> None:
    history: list[Item] = [UserText("fixture:[]"), AssistantText("old")] * 500
    script = [{"text": "a", "tools": [{"name": "t"}]}, {"text": "b"}]
    prompt = len(history)
    turn: list[Item] = [UserText("fixture:" + json.dumps(script)), ToolCall("call-0-0", "t", "{}")]
    items = Watched([*history, *turn])
    found, rounds = script_and_round(ModelRequest("m", "", items))
    assert found == script and rounds == 1
    assert items.read == {prompt, prompt + 1}
