"""The built-in `fixture` provider: a scripted model with no network and no credentials.

Without a script it answers one fixed line. A user prompt that starts with `fixture:` is
followed by a JSON script: a list of rounds, one per model call in the turn (the first call
after the prompt is round 0, the call after its tool results round 1, ...). A round:

    {"text": "hello", "deltas": 3,           # the reply, split into 3 deltas (default 1)
     "repeat": 10000,                        # or: send `text` as 10000 deltas
     "delay_ms": 5,                          # sleep before each delta
     "reasoning": "a summary",               # a provider-marked reasoning summary
     "tools": [{"name": "read_file", "arguments": {"path": "x"}}],
     "hang": true,                           # after the deltas, wait until cancelled
     "error": "server_error",                # fail the call with that ProviderError code
     "stop": "refused",                      # end the answer with that stop (StopReason)
     "times": 600}                           # this round stands for 600 identical rounds

Once the script is exhausted, a call answers "done.". A malformed script fails the call with
`refused`, as a real provider refuses a request it cannot parse. A call that ends reports a
usage figure: its request's characters / 4 in, its reply's (every delta of it) / 4 out.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast, get_args

from magi_code.prefixes import Prefix
from magi_code.providers.base import (
    Completed,
    Item,
    ModelRequest,
    ProviderError,
    ProviderErrorCode,
    ProviderEvent,
    ReasoningSummary,
    StopReason,
    TextDelta,
    ToolCall,
    ToolCallDone,
    Usage,
    UserText,
)

if TYPE_CHECKING:
    from magi_code.config.credentials import CredentialStore
    from magi_code.providers.policy import HttpPolicy

DEFAULT_REPLY = "Hello from the fixture model."
PREFIX = "fixture:"


def script_and_round(request: ModelRequest) -> tuple[list[dict[str, Any]] | None, int]:
    items = request.items
    # from the end: a turn's own items follow its prompt, the history before it is not looked at
    last_user = next(
        (i for i in range(len(items) - 1, -1, -1) if isinstance(items[i], UserText)), -1
    )
    if last_user < 0:
        return None, 0
    # This provider names its calls "call-<round>-<n>": the rounds answered so far are one
    # more than the highest round among the calls since the prompt.
    rounds = 1 + max(
        (
            int(item.call_id.split("-")[1])
            for item in items[last_user + 1 :]
            if isinstance(item, ToolCall) and item.call_id.startswith("call-")
        ),
        default=-1,
    )
    prompt = cast(UserText, items[last_user]).text
    if not prompt.startswith(PREFIX):
        return None, rounds
    try:
        script = json.loads(prompt[len(PREFIX) :])
    except ValueError as exc:
        raise ProviderError("refused") from exc
    if not isinstance(script, list) or not all(isinstance(r, dict) for r in script):
        raise ProviderError("refused")
    expanded = [r for r in script for _ in range(int(r.get("times", 1)))]
    return expanded, rounds


def item_chars(item: Item) -> int:
    """The characters of an item's text, arguments or output."""
    return len(
        getattr(item, "text", "") or getattr(item, "arguments", "") or getattr(item, "output", "")
    )


class RequestChars:
    """A cheap size of a request (`item_chars` of every item) for its usage figure, kept for
    the last request: a runner's next request is the same item objects plus a turn's, in a
    shared list (prefixes.py), so it is measured by what it added. Items are frozen, so the
    same object has the same size."""

    def __init__(self) -> None:
        self._items: Sequence[Item] = ()
        self._sums = [0]  # characters of the first n items of `_items`, at index n

    def __call__(self, items: Sequence[Item]) -> int:
        kept = items.common_prefix(self._items) if isinstance(items, Prefix) else 0
        del self._sums[kept + 1 :]
        for item in items[kept:]:
            self._sums.append(self._sums[-1] + item_chars(item))
        self._items = items
        return self._sums[-1]


def split_text(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, parts)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class FixtureProvider:
    id = "fixture"

    def __init__(self) -> None:
        self._request_chars = RequestChars()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        import anyio

        if request.purpose == "compaction":
            yield TextDelta(f"Summary of {len(request.items)} earlier items.")
            yield Completed()
            return
        script, index = script_and_round(request)
        if script is None:
            step: dict[str, Any] = {"text": DEFAULT_REPLY} if index == 0 else {"text": "done."}
        else:
            step = script[index] if index < len(script) else {"text": "done."}
        if "error" in step:
            raise ProviderError(cast(ProviderErrorCode, step["error"]), retryable=False)
        if step.get("stop") not in (None, *get_args(StopReason)):
            raise ProviderError("refused")  # a script naming no stop, as for any malformed one
        if "reasoning" in step:
            yield ReasoningSummary(item_id=f"rs{index}", text=str(step["reasoning"]))
        text = str(step.get("text", ""))
        pieces = (
            [text] * int(step["repeat"])
            if "repeat" in step
            else split_text(text, int(step.get("deltas", 1)))
        )
        delay = float(step.get("delay_ms", 0)) / 1000
        for piece in pieces:
            if delay:
                await anyio.sleep(delay)
            if piece:
                yield TextDelta(piece)
        for n, call in enumerate(step.get("tools", [])):
            yield ToolCallDone(
                ToolCall(
                    f"call-{index}-{n}", str(call["name"]), json.dumps(call.get("arguments", {}))
                )
            )
        if step.get("hang"):
            await anyio.sleep_forever()
        input_chars = self._request_chars(request.items)
        output_chars = sum(map(len, pieces))  # a `repeat` reply is all its deltas
        yield Usage(input_tokens=input_chars // 4, output_tokens=output_chars // 4)
        yield Completed(step.get("stop") or ("tool_use" if step.get("tools") else "end_turn"))


def build(
    provider_id: str,
    conf: Mapping[str, object],
    credentials: CredentialStore,
    env: Mapping[str, str],
    policy: HttpPolicy | None,
) -> FixtureProvider:
    """The registry's row for `fixture` (providers/registry.py): no URL, no credential."""
    return FixtureProvider()
