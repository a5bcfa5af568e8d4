"""Tool-call arguments bounded as each wire's stream state machine assembles them (chat,
Anthropic, Responses), fed the event data a server sends: a call keeps ARGUMENTS_BYTES and
drops the byte past it (and everything after, so memory stays bounded); a response whose
arguments pass the run's content budget ends at that piece, its open calls handed on dropped;
arguments a provider gives whole are measured the same way and counted once."""

import json
import tracemalloc
from collections.abc import Callable

import pytest

from magi_code.limits import RUN_CONTENT_BYTES
from magi_code.providers.anthropic import MessagesStreamState
from magi_code.providers.base import Completed, ProviderEvent, ToolCall, ToolCallDone
from magi_code.providers.openai_chat import ChatStreamState
from magi_code.providers.openai_responses import ResponsesStreamState
from magi_code.tools.limits import ARGUMENTS_BYTES

PIECE = 4096

Calls = list[str]  # each call's arguments, streamed in PIECE pieces, one call after another


def pieces(arguments: str) -> list[str]:
    return [arguments[i : i + PIECE] for i in range(0, len(arguments), PIECE)]


def chat_stream(calls: Calls) -> list[str]:
    def delta(value: dict[str, object]) -> str:
        return json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [value]}}]})

    out = []
    for n, arguments in enumerate(calls):
        out.append(delta({"index": n, "id": f"c{n}", "function": {"name": "w", "arguments": ""}}))
        out += [delta({"index": n, "function": {"arguments": p}}) for p in pieces(arguments)]
    out.append(json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
    return [*out, "[DONE]"]


def anthropic_stream(calls: Calls) -> list[str]:
    out: list[dict[str, object]] = []
    for n, arguments in enumerate(calls):
        block = {"type": "tool_use", "id": f"c{n}", "name": "w", "input": {}}
        out.append({"type": "content_block_start", "index": n, "content_block": block})
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(arguments)]
        out += [{"type": "content_block_delta", "index": n, "delta": d} for d in deltas]
        out.append({"type": "content_block_stop", "index": n})
    out += [
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    return [json.dumps(value) for value in out]


def responses_stream(calls: Calls, *, repeated: bool = True) -> list[str]:
    """The done item repeats the arguments whole, as OpenAI's does (unless not `repeated`)."""
    out: list[dict[str, object]] = []
    for n, arguments in enumerate(calls):
        item = {"type": "function_call", "id": f"fc{n}", "call_id": f"c{n}", "name": "w"}
        out.append({"type": "response.output_item.added", "item": item})
        kind = "response.function_call_arguments.delta"
        out += [{"type": kind, "item_id": f"fc{n}", "delta": p} for p in pieces(arguments)]
        done = {**item, "arguments": arguments} if repeated else item
        out.append({"type": "response.output_item.done", "item": done})
    out.append({"type": "response.completed", "response": {}})
    return [json.dumps(value) for value in out]


def run_chat(stream: list[str]) -> tuple[list[ProviderEvent], int]:
    """The events a wire hands on, and how many of the stream's events it read."""
    state = ChatStreamState()
    for read, data in enumerate(stream, 1):
        state.chunk(data)
        if state.done:
            return state.finish_events(), read
    raise AssertionError("the stream did not end")


def run_typed(
    state: MessagesStreamState | ResponsesStreamState, stream: list[str]
) -> tuple[list[ProviderEvent], int]:
    out: list[ProviderEvent] = []
    for read, data in enumerate(stream, 1):
        out += state.event(data)
        if state.finished:
            return out, read
    raise AssertionError("the stream did not end")


Wire = tuple[Callable[[Calls], list[str]], Callable[[list[str]], tuple[list[ProviderEvent], int]]]
WIRES: dict[str, Wire] = {
    "chat": (chat_stream, run_chat),
    "anthropic": (anthropic_stream, lambda s: run_typed(MessagesStreamState(), s)),
    "responses": (responses_stream, lambda s: run_typed(ResponsesStreamState(), s)),
}


def calls_of(events: list[ProviderEvent]) -> list[ToolCall]:
    return [e.call for e in events if isinstance(e, ToolCallDone)]


def arguments(size: int) -> str:
    """JSON arguments of exactly `size` bytes, two of them multi-byte."""
    frame = json.dumps({"content": "éé"}, ensure_ascii=False)
    text = json.dumps({"content": "éé" + "x" * (size - len(frame.encode()))}, ensure_ascii=False)
    assert len(text.encode()) == size
    return text


@pytest.mark.parametrize("wire", list(WIRES))
def test_a_call_keeps_arguments_bytes_and_drops_one_byte_more(wire: str) -> None:
    stream, run = WIRES[wire]
    fits, over = arguments(ARGUMENTS_BYTES), arguments(ARGUMENTS_BYTES + 1)
    events, _ = run(stream([fits, "{}"]))
    assert calls_of(events) == [ToolCall("c0", "w", fits), ToolCall("c1", "w", "{}")]
    events, _ = run(stream([over, "{}"]))
    dropped = ToolCall("c0", "w", "", dropped_bytes=ARGUMENTS_BYTES + 1)
    assert calls_of(events) == [dropped, ToolCall("c1", "w", "{}")]
    assert events[-1] == Completed("tool_use")


@pytest.mark.parametrize("wire", list(WIRES))
def test_what_passes_the_bound_is_dropped_as_it_arrives(wire: str) -> None:
    """A call of RUN_CONTENT_BYTES (the most a response streams before it is ended) holds no
    more than ARGUMENTS_BYTES at any time: the rest is counted, never kept. (Responses' done
    item is left without its repeat here: one event's whole text is the SSE layer's bound.)"""
    stream, run = WIRES[wire]
    calls = ["x" * RUN_CONTENT_BYTES]
    data = responses_stream(calls, repeated=False) if wire == "responses" else stream(calls)
    tracemalloc.start()
    try:
        events, _ = run(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert calls_of(events) == [ToolCall("c0", "w", "", dropped_bytes=RUN_CONTENT_BYTES)]
    assert peak < ARGUMENTS_BYTES + RUN_CONTENT_BYTES // 4


@pytest.mark.parametrize("wire", list(WIRES))
def test_a_response_ends_at_the_piece_past_the_run_content_budget(wire: str) -> None:
    stream, run = WIRES[wire]
    two = [arguments(ARGUMENTS_BYTES), arguments(RUN_CONTENT_BYTES - ARGUMENTS_BYTES)]
    events, _ = run(stream(two))  # RUN_CONTENT_BYTES exactly: the response is whole
    assert calls_of(events) == [ToolCall("c0", "w", two[0]), ToolCall("c1", "w", two[1])]
    full = stream([*two, "x" * 10 * PIECE])
    events, read = run(full)
    assert read < len(full) - 5  # the rest of the stream was never read
    if wire == "chat":  # chat calls end with the response: all of them were open at the cut
        sizes = [len(a.encode()) for a in two]
        whole = [ToolCall(f"c{n}", "w", "", dropped_bytes=size) for n, size in enumerate(sizes)]
    else:
        whole = [ToolCall("c0", "w", two[0]), ToolCall("c1", "w", two[1])]
    # The piece that passed the budget was counted, and nothing of it kept.
    assert calls_of(events) == [*whole, ToolCall("c2", "w", "", dropped_bytes=PIECE)]
    assert events[-1] == Completed("tool_use")


def test_responses_arguments_given_again_when_done_are_counted_once() -> None:
    half = arguments(RUN_CONTENT_BYTES // 2)  # streamed, then repeated: the budget, not twice
    events, _ = run_typed(ResponsesStreamState(), responses_stream([half, half]))
    assert [c.arguments for c in calls_of(events)] == [half, half]
    over = arguments(ARGUMENTS_BYTES + 1)
    item = {"type": "function_call", "id": "f", "call_id": "c", "name": "w", "arguments": over}
    done = json.dumps({"type": "response.output_item.done", "item": item})
    events, _ = run_typed(ResponsesStreamState(), [done, *responses_stream([])])
    assert calls_of(events) == [ToolCall("c", "w", "", dropped_bytes=ARGUMENTS_BYTES + 1)]


def test_anthropic_input_given_whole_is_bounded_too() -> None:
    for size in (ARGUMENTS_BYTES, ARGUMENTS_BYTES + 1):
        text = arguments(size)
        block = {"type": "tool_use", "id": "t", "name": "w", "input": json.loads(text)}
        state = MessagesStreamState()
        state.event(json.dumps({"type": "content_block_start", "index": 0, "content_block": block}))
        [done] = state.event(json.dumps({"type": "content_block_stop", "index": 0}))
        assert isinstance(done, ToolCallDone)
        kept = size <= ARGUMENTS_BYTES
        assert done.call == ToolCall(
            "t", "w", text if kept else "", dropped_bytes=0 if kept else size
        )
