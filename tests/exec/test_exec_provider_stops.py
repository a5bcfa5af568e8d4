"""Provider stops told truthfully, over real processes: `magi-code exec --json` against a real
local HTTP server replaying each wire's recorded stream of a stop that is no finished answer.

A refusal or a content filter ends the run with a `diagnostic` naming the class (`refused`,
`content_filtered`); an output-limit stop with `output_limit`; a tool call the output limit cut
is named in that diagnostic and never runs (nor does any call of that answer). The run is
`failed` with `execution_failed` (the spec's run outcomes and error codes), its text kept.
"""

from pathlib import Path
from typing import Any

import pytest

from providers.local_server import LocalServer, Reply, sse
from support.exec import exec_run, json_lines, named
from support.settings import local_provider
from support.wires import typed

SSE_HEADERS = {"content-type": "text/event-stream"}
PATHS = {
    "anthropic": "/v1/messages",
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
}
CUT_ARGUMENTS = '{"path": "cut.txt", "content": "the first half of a lo'  # never closed

Events = tuple[tuple[str | None, object], ...]


# ---- recorded streams (the shapes the official SDKs' fixtures show) ----------------------


def anthropic_message(*blocks: Events, stop: str, output_tokens: int = 12) -> Events:
    message: dict[str, object] = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    }
    return (
        typed("message_start", message=message),
        typed("ping"),
        *[event for block in blocks for event in block],
        typed(
            "message_delta",
            delta={"stop_reason": stop, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        ),
        typed("message_stop"),
    )


def anthropic_text(index: int, text: str) -> Events:
    return (
        typed("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        typed("content_block_delta", index=index, delta={"type": "text_delta", "text": text}),
        typed("content_block_stop", index=index),
    )


def anthropic_tool(index: int, arguments: str, *, closed: bool = True) -> Events:
    block = {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "write_file"}
    half = len(arguments) // 2
    deltas = [
        typed("content_block_delta", index=index, delta={"type": "input_json_delta", **piece})
        for piece in ({"partial_json": arguments[:half]}, {"partial_json": arguments[half:]})
    ]
    stop = (typed("content_block_stop", index=index),) if closed else ()
    return (
        typed("content_block_start", index=index, content_block={**block, "input": {}}),
        *deltas,
        *stop,
    )


def chat_chunk(delta: dict[str, object], finish: str | None = None) -> tuple[None, object]:
    return (
        None,
        {
            "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
            "object": "chat.completion.chunk",
            "created": 1741569952,
            "model": "gpt-4.1-2025-04-14",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        },
    )


def chat_stream(*chunks: tuple[None, object]) -> Events:
    return (chat_chunk({"role": "assistant", "content": ""}), *chunks, (None, "[DONE]"))


def chat_tool_cut() -> Events:
    opened = {
        "index": 0,
        "id": "call_DdmO9pD3xa9XTPNJ32zg2hcA",
        "type": "function",
        "function": {"name": "write_file", "arguments": ""},
    }
    more = {"index": 0, "function": {"arguments": CUT_ARGUMENTS}}
    return chat_stream(
        chat_chunk({"tool_calls": [opened]}),
        chat_chunk({"tool_calls": [more]}),
        chat_chunk({}, "length"),
    )


def responses_stream(*events: tuple[str, object], end: tuple[str, object]) -> Events:
    response = {"id": "resp_67c9fdcecf488190bdd9a0409de3a1ec", "object": "response"}
    return (
        typed("response.created", response={**response, "status": "in_progress"}),
        *events,
        end,
    )


def responses_incomplete(reason: str) -> tuple[str, object]:
    response = {
        "status": "incomplete",
        "incomplete_details": {"reason": reason},
        "usage": {"input_tokens": 30, "output_tokens": 64},
    }
    return typed("response.incomplete", response=response)


def responses_text(text: str) -> tuple[str, object]:
    return typed("response.output_text.delta", item_id="msg_1", output_index=0, delta=text)


def responses_tool_cut() -> Events:
    item = {
        "type": "function_call",
        "id": "fc_12345xyz",
        "call_id": "call_12345xyz",
        "name": "write_file",
        "arguments": "",
        "status": "in_progress",
    }
    return responses_stream(
        typed("response.output_item.added", output_index=0, item=item),
        typed(
            "response.function_call_arguments.delta",
            item_id="fc_12345xyz",
            output_index=0,
            delta=CUT_ARGUMENTS,
        ),
        end=responses_incomplete("max_output_tokens"),
    )


def responses_refusal() -> Events:
    return responses_stream(
        typed("response.refusal.delta", item_id="msg_1", delta="I'm sorry, I can't help."),
        typed("response.refusal.done", item_id="msg_1", refusal="I'm sorry, I can't help."),
        end=typed("response.completed", response={"status": "completed"}),
    )


# wire, stream, the diagnostic's code, the text kept, a cut tool call named
STOPS: dict[str, tuple[str, Events, str, str, bool]] = {
    "anthropic-refusal": (
        "anthropic",
        anthropic_message(anthropic_text(0, "I can't help with that."), stop="refusal"),
        "refused",
        "I can't help with that.",
        False,
    ),
    "anthropic-max_tokens-mid-tool-call": (
        "anthropic",
        anthropic_message(
            anthropic_text(0, "Writing it."), anthropic_tool(1, CUT_ARGUMENTS), stop="max_tokens"
        ),
        "output_limit",
        "Writing it.",
        True,
    ),
    "anthropic-max_tokens-tool-block-left-open": (
        "anthropic",
        anthropic_message(anthropic_tool(0, CUT_ARGUMENTS, closed=False), stop="max_tokens"),
        "output_limit",
        "",
        True,
    ),
    "chat-content_filter": (
        "openai-chat",
        chat_stream(chat_chunk({"content": "Here is how"}), chat_chunk({}, "content_filter")),
        "content_filtered",
        "Here is how",
        False,
    ),
    "chat-length-mid-tool-call": ("openai-chat", chat_tool_cut(), "output_limit", "", True),
    "chat-length-text": (
        "openai-chat",
        chat_stream(chat_chunk({"content": "A long answer"}), chat_chunk({}, "length")),
        "output_limit",
        "A long answer",
        False,
    ),
    "chat-refusal": (
        "openai-chat",
        chat_stream(chat_chunk({"refusal": "I can't assist."}), chat_chunk({}, "stop")),
        "refused",
        "I can't assist.",
        False,
    ),
    "responses-incomplete-max_output_tokens-mid-tool-call": (
        "openai-responses",
        responses_tool_cut(),
        "output_limit",
        "",
        True,
    ),
    "responses-incomplete-content_filter": (
        "openai-responses",
        responses_stream(responses_text("Part of it"), end=responses_incomplete("content_filter")),
        "content_filtered",
        "Part of it",
        False,
    ),
    "responses-refusal": (
        "openai-responses",
        responses_refusal(),
        "refused",
        "I'm sorry, I can't help.",
        False,
    ),
}


def exec_json(workspace: Path, home: Path, prompt: str) -> tuple[int, list[dict[str, Any]]]:
    done = exec_run(["--json", "--approval-mode", "full", prompt], workspace, home, timeout=120)
    assert done.stdout.endswith(b"\n"), done.stderr
    return done.returncode, json_lines(done.stdout)


@pytest.mark.parametrize("stop", list(STOPS))
def test_a_stop_short_of_an_answer_is_told_and_its_calls_never_run(
    stop: str, workspace: Path, home: Path
) -> None:
    wire, events, code, text, cut_call = STOPS[stop]
    with LocalServer() as server:
        local_provider(home, server, wire)
        after = Reply(chunks=[b"data: never asked\n\n"], headers=SSE_HEADERS)
        server.script(PATHS[wire], Reply(chunks=[sse(*events)], headers=SSE_HEADERS), after)
        status, lines = exec_json(workspace, home, "write cut.txt")
        assert len(server.requests) == 1, "the turn ends at the stop: no second round"
    assert status == 1
    finished = lines[-1]
    assert finished["event"] == "run.finished"
    assert (finished["data"]["outcome"], finished["data"]["error_code"]) == (
        "failed",
        "execution_failed",
    )
    [diagnostic] = named(lines, "diagnostic")
    assert diagnostic["code"] == code
    assert ("write_file" in diagnostic["summary"]) == cut_call
    assert ("did not run" in diagnostic["summary"]) == cut_call
    assert not named(lines, "activity"), "no tool call of a cut answer runs"
    assert not (workspace / "cut.txt").exists()
    kept = "".join(r["text"] for r in named(lines, "message.reconcile"))
    assert kept == text
