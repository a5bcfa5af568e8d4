"""Tool-call bounds over real processes: `magi-code exec --json` (and `serve --stdio`)
against a real local HTTP server speaking each wire API. A call's arguments are kept up to
ARGUMENTS_BYTES and dropped past it as they stream (the model is told to split the change; the
history and the next request keep a stub); a model repeating a 10 MiB call ends the run with
`content_limit` while the child stays small; an answer asking for more tool calls than the run
has activity identities runs none of them and says so in a diagnostic."""

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from magi_code import limits
from magi_code.client import LocalAgentClient, environment
from magi_code.runner.turn import OVERSIZE_SUMMARY, OVERSIZE_TOLD
from magi_code.tools.limits import ARGUMENTS_BYTES
from providers.local_server import LocalServer, Reply, sse
from support.exec import exec_run, json_lines, named
from support.sessions import records
from support.settings import local_provider
from support.wires import typed

SSE_HEADERS = {"content-type": "text/event-stream"}
PIECE = 1024  # argument bytes per streamed delta: a model sends them in small pieces
MIB = 1024 * 1024
PEAK_RSS_BOUND = 150 * MIB

Events = tuple[tuple[str | None, object], ...]


def pieces(arguments: str) -> list[str]:
    return [arguments[i : i + PIECE] for i in range(0, len(arguments), PIECE)]


def write_call(size: int) -> str:
    """write_file arguments of exactly `size` bytes (ASCII), writing big.txt."""
    frame = json.dumps({"path": "big.txt", "content": ""})
    arguments = json.dumps({"path": "big.txt", "content": "x" * (size - len(frame))})
    assert len(arguments) == size
    return arguments


# ---- each wire's stream of one tool call, and of a closing text --------------------------


def chat_call(arguments: str, calls: int = 1, name: str = "write_file") -> Events:
    def delta(value: dict[str, Any]) -> tuple[None, object]:
        return (None, {"choices": [{"index": 0, "delta": {"tool_calls": [value]}}]})

    opened = [
        delta({"index": n, "id": f"call_{n}", "function": {"name": name, "arguments": ""}})
        for n in range(calls)
    ]
    streamed = [
        delta({"index": n, "function": {"arguments": piece}})
        for n in range(calls)
        for piece in pieces(arguments)
    ]
    end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    return (*opened, *streamed, (None, end), (None, "[DONE]"))


def chat_text(text: str) -> Events:
    end = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}
    return ((None, end), (None, "[DONE]"))


def anthropic_blocks(
    block: Mapping[str, object], *deltas: Mapping[str, object], stop: str
) -> Events:
    return (
        typed("message_start", message={"usage": {"input_tokens": 1}}),
        typed("content_block_start", index=0, content_block=block),
        *[typed("content_block_delta", index=0, delta=delta) for delta in deltas],
        typed("content_block_stop", index=0),
        typed("message_delta", delta={"stop_reason": stop}),
        typed("message_stop"),
    )


def anthropic_call(arguments: str) -> Events:
    block = {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}}
    deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces(arguments)]
    return anthropic_blocks(block, *deltas, stop="tool_use")


def anthropic_text(text: str) -> Events:
    delta = {"type": "text_delta", "text": text}
    return anthropic_blocks({"type": "text", "text": ""}, delta, stop="end_turn")


def responses_call(arguments: str) -> Events:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "write_file"}
    kind = "response.function_call_arguments.delta"
    deltas = [typed(kind, item_id="fc_1", delta=piece) for piece in pieces(arguments)]
    done = {**item, "arguments": arguments}  # the done item repeats the arguments whole
    return (
        typed("response.output_item.added", item=item),
        *deltas,
        typed("response.output_item.done", item=done),
        typed("response.completed", response={}),
    )


def responses_text(text: str) -> Events:
    return (
        typed("response.output_text.delta", delta=text),
        typed("response.completed", response={}),
    )


Wire = tuple[str, str, Callable[[str], Events], Callable[[str], Events]]
WIRES: dict[str, Wire] = {
    "openai-chat": ("openai-chat", "/v1/chat/completions", chat_call, chat_text),
    "anthropic": ("anthropic", "/v1/messages", anthropic_call, anthropic_text),
    "openai-responses": ("openai-responses", "/v1/responses", responses_call, responses_text),
}


def reply(events: Events) -> Reply:
    return Reply(chunks=[sse(*events)], headers=SSE_HEADERS)


def exec_json(
    workspace: Path, home: Path, prompt: str, *args: str
) -> tuple[int, list[dict[str, Any]]]:
    """Run `magi-code exec --json`: its exit code and its JSON lines."""
    done = exec_run(
        ["--json", "--approval-mode", "edits", *args, prompt], workspace, home, timeout=120
    )
    assert done.stdout.endswith(b"\n"), done.stderr
    return done.returncode, json_lines(done.stdout)


def peak_rss(pid: int) -> int:
    """The process's resident high-water mark in bytes (VmHWM: this program's alone, since
    its exec; a child's ru_maxrss would count the parent it was forked from)."""
    for line in Path(f"/proc/{pid}/status").read_text().split("\n"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def session_records(home: Path, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return records(home, lines[0]["data"]["session_id"])


@pytest.mark.parametrize("wire", list(WIRES))
def test_arguments_at_the_bound_run_and_one_byte_more_is_a_stub(
    wire: str, workspace: Path, home: Path
) -> None:
    wire_api, path, call, text = WIRES[wire]
    with LocalServer() as server:
        local_provider(home, server, wire_api)
        server.script(path, reply(call(write_call(ARGUMENTS_BYTES))), reply(text("written")))
        code, lines = exec_json(workspace, home, "write it")
        assert code == 0, lines[-1]
        assert (workspace / "big.txt").stat().st_size > ARGUMENTS_BYTES - 100  # it ran
        assert [a["state"] for a in named(lines, "activity")] == ["started", "completed"]
        (workspace / "big.txt").unlink()

        server.requests.clear()
        server.script(path, reply(call(write_call(ARGUMENTS_BYTES + 1))), reply(text("split")))
        code, lines = exec_json(workspace, home, "write it")
    assert code == 0, lines[-1]
    assert not (workspace / "big.txt").exists()  # it never ran
    # The next round tells the model to split the change and never carries the arguments.
    [_, second] = server.requests
    assert len(second.body) < 64 * 1024
    assert OVERSIZE_TOLD in second.body.decode()
    [started, failed] = named(lines, "activity")
    assert (started["name"], failed["state"]) == ("write_file", "failed")
    assert failed["summary"] == OVERSIZE_SUMMARY
    [tool] = [r for r in session_records(home, lines) if r["type"] == "tool" and "result" in r]
    assert (tool["name"], tool["arguments"]) == ("write_file", "{}")
    assert tool["arguments_bytes"] == ARGUMENTS_BYTES + 1
    assert tool["call_id"] in {"call_0", "call_1", "toolu_1"}
    assert OVERSIZE_TOLD in tool["result"]


@pytest.mark.slow("streams 10 MiB tool calls until the run content bound stops them")
def test_a_model_repeating_a_10_mib_call_ends_with_content_limit_and_stays_small(
    workspace: Path, home: Path
) -> None:
    """Over `serve --stdio`, whose child outlives the run, so that its peak RSS is read whole.
    Before, each round kept the call (and every piece of it), stored it and sent it again:
    the child grew by hundreds of megabytes and the turn did not end."""
    huge = chat_call(write_call(10 * MIB))
    with LocalServer() as server:
        local_provider(home, server, "openai-chat")
        server.script("/v1/chat/completions", *[reply(huge) for _ in range(3)])
        with LocalAgentClient.spawn(cwd=workspace, env=environment(home)) as child:
            child.request("initialize", {"required_capabilities": ["turn.start"]})
            session_id = child.request("session.create")["session_id"]
            child.request("turn.start", {"session_id": session_id, "prompt": "write it"})
            events = [child.next_event(60)]
            while events[-1].name != "run.finished":
                events.append(child.next_event(60))
            peak = peak_rss(child.process.pid)
    print(f"peak RSS of serve --stdio with a 10 MiB tool call a round: {peak / MIB:.1f} MiB")
    finished = events[-1].data
    assert (finished["outcome"], finished["error_code"]) == ("failed", "content_limit")
    diagnostics = [e.data["code"] for e in events if e.name == "diagnostic"]
    assert diagnostics == ["content_limit"]
    assert not [e for e in events if e.name == "activity"]  # nothing of the call ran
    assert len(server.requests) == 1
    assert (home / "sessions" / f"{session_id}.jsonl").stat().st_size < 64 * 1024
    assert peak < PEAK_RSS_BOUND


def test_more_tool_calls_than_activity_identities_run_none_and_say_so(
    workspace: Path, home: Path
) -> None:
    calls = 5000
    with LocalServer() as server:
        local_provider(home, server, "openai-chat")
        many = chat_call("{}", calls=calls, name="list_dir")
        server.script("/v1/chat/completions", reply(many), reply(chat_text("after")))
        code, lines = exec_json(workspace, home, "list a lot")
        assert code == 1
        assert lines[-1]["event"] == "run.finished"
        finished = lines[-1]["data"]
        assert (finished["outcome"], finished["error_code"]) == ("failed", "execution_failed")
        assert finished["persistence"] == "durable"
        [diagnostic] = named(lines, "diagnostic")
        assert diagnostic["code"] == "activity_limit"
        assert str(calls) in diagnostic["summary"]
        assert str(limits.RUN_ACTIVITY_IDS) in diagnostic["summary"]
        assert not named(lines, "activity")  # none of them ran
        assert len(server.requests) == 1
        # The session goes on: the next turn replays it and completes.
        code, lines = exec_json(workspace, home, "and now?", "--continue")
    assert code == 0
    assert named(lines, "run.finished")[-1]["outcome"] == "completed"
