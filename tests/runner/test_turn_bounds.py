"""The runner's bounds on what a model asks for, in process on real session files: a call
whose arguments passed ARGUMENTS_BYTES (dropped by the wire, or whole from a provider that
does not bound them) is answered with an error and kept as a stub in the history and every
later request; argument bytes, kept or dropped, count in the run's content budget; an answer
with more tool calls than the run has activity identities runs none and says so."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from magi_code import limits
from magi_code.providers.base import (
    Completed,
    ModelRequest,
    ProviderEvent,
    TextDelta,
    ToolCall,
    ToolCallDone,
    ToolResult,
)
from magi_code.runner.turn import OVERSIZE_STUB, OVERSIZE_SUMMARY, OVERSIZE_TOLD
from magi_code.tools.limits import ARGUMENTS_BYTES
from runner.turn_world import Recorder, World

pytestmark = pytest.mark.anyio


class Scripted:
    """A provider answering from scripted rounds and keeping every request."""

    id = "scripted"

    def __init__(self, *rounds: list[ProviderEvent]) -> None:
        self.rounds = list(rounds)
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        for event in self.rounds.pop(0):
            yield event


def calls(*calls: ToolCall) -> list[ProviderEvent]:
    return [*(ToolCallDone(call) for call in calls), Completed("tool_use")]


def said(text: str) -> list[ProviderEvent]:
    return [TextDelta(text), Completed()]


def write(size: int) -> str:
    head = '{"path": "big.txt", "content": "'
    return head + "x" * (size - len(head) - 2) + '"}'


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


@pytest.mark.parametrize(
    "call",
    [
        ToolCall("c1", "write_file", write(ARGUMENTS_BYTES + 1)),  # whole: an unbounded provider
        ToolCall("c1", "write_file", "", dropped_bytes=ARGUMENTS_BYTES + 1),  # a wire dropped it
    ],
    ids=["whole", "dropped"],
)
async def test_a_call_at_the_bound_runs_and_past_it_is_a_stub(world: World, call: ToolCall) -> None:
    world.settings(  # 4 MiB of history is not compacted away here
        '[providers.fixture]\nwire_api = "fixture"\nmodels = ["fixture-model"]\n'
        "context_window = 100_000_000\n"
    )
    at_bound = ToolCall("c0", "write_file", write(ARGUMENTS_BYTES))
    provider = Scripted(calls(at_bound), said("ok"), calls(call), said("split it"), said("again"))
    finished, emit = await world.turn("write", Recorder(allow=True), provider=provider)
    assert finished.outcome == "completed"
    assert [a.state for a in emit.activities()] == ["started", "completed"]
    assert (world.workspace / "big.txt").stat().st_size == ARGUMENTS_BYTES - 34
    (world.workspace / "big.txt").unlink()

    finished, emit = await world.turn("write more", Recorder(allow=True), provider=provider)
    assert finished.outcome == "completed"
    assert not (world.workspace / "big.txt").exists()
    assert [(a.state, a.summary) for a in emit.activities()][-1] == ("failed", OVERSIZE_SUMMARY)
    stub = ToolCall("c1", "write_file", OVERSIZE_STUB)
    told = provider.requests[3].items[-2:]
    assert told[0] == stub
    assert isinstance(told[1], ToolResult) and OVERSIZE_TOLD in told[1].output
    assert told[1].is_error
    [record] = [r for r in world.records() if r.get("call_id") == "c1" and "result" in r]
    assert (record["arguments"], record["arguments_bytes"]) == (OVERSIZE_STUB, ARGUMENTS_BYTES + 1)
    await world.turn("and now?", provider=provider)  # replayed from the session: the stub
    assert stub in provider.requests[4].items


async def test_argument_bytes_count_in_the_run_content_budget(world: World) -> None:
    """Kept or dropped, they count: text and an oversize call fill the budget exactly (the
    call is answered), and the next call's two bytes pass it."""
    text = "t" * (limits.RUN_CONTENT_BYTES - ARGUMENTS_BYTES - 1)
    fits = ToolCall("c1", "write_file", "", dropped_bytes=ARGUMENTS_BYTES + 1)
    provider = Scripted([TextDelta(text), *calls(fits)], calls(ToolCall("c2", "list_dir", "{}")))
    finished, emit = await world.turn("go", provider=provider)
    assert (finished.outcome, finished.error_code) == ("failed", "content_limit")
    assert [d.code for d in emit.diagnostics()] == ["content_limit"]
    assert len(provider.requests) == 2  # the budget held exactly until the second call


async def test_more_calls_than_activity_identities_left_run_none(world: World) -> None:
    many = [ToolCall(f"c{n}", "list_dir", "{}") for n in range(limits.RUN_ACTIVITY_IDS + 1)]
    provider = Scripted([TextDelta("listing"), *calls(*many)])
    finished, emit = await world.turn("list", provider=provider)
    assert (finished.outcome, finished.error_code) == ("failed", "execution_failed")
    assert not emit.activities()
    [diagnostic] = emit.diagnostics()
    assert diagnostic.code == "activity_limit"
    assert f"{limits.RUN_ACTIVITY_IDS + 1} tool calls" in diagnostic.summary
    provider = Scripted(calls(*many[:-1]), said("done"))  # the bound exactly: all of them run
    finished, emit = await world.turn("list", provider=provider)
    assert finished.outcome == "completed"
    assert len(emit.activities()) == 2 * limits.RUN_ACTIVITY_IDS
