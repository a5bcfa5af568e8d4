"""The fixture provider's work per request does not grow with the history (issue 19.8): it
finds its script from the end of the request (the prompt and the calls after it), and sizes
the request for its usage figure by what was added since the last request."""

import json
from collections.abc import Sequence
from typing import overload

import pytest

from magi_code.prefixes import Growing
from magi_code.providers import fixture
from magi_code.providers.base import (
    AssistantText,
    Item,
    ModelRequest,
    ToolCall,
    ToolResult,
    UserText,
)
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


def test_a_request_is_measured_by_what_it_added_to_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    history: Growing[Item] = Growing()
    measured: list[Item] = []
    plain = fixture.item_chars

    def counted(item: Item) -> int:
        measured.append(item)
        return plain(item)

    monkeypatch.setattr(fixture, "item_chars", counted)
    request_chars = fixture.RequestChars()
    for turn in range(300):
        history.append(UserText(f"question {turn}"))
        reply = [AssistantText("é" * turn), ToolCall("c", "t", "{}"), ToolResult("c", "out")]
        items = history.prefix(reply)
        measured.clear()
        assert request_chars(items) == sum(map(plain, items))
        assert len(measured) <= 2 + len(reply)  # the last answer, then this turn: no more
        history.append(AssistantText(f"answer {turn}"))
    history[0] = UserText("changed")  # a changed item (a new list): measured afresh from it
    assert request_chars(history.prefix()) == sum(map(plain, history))
    assert request_chars((UserText("ab"),)) == 2  # a plain tuple is measured whole
