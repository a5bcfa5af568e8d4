"""What `magi-code exec --json` says happened, over real processes against a real local HTTP
server: each tool call's output (`tool.output`: redacted, cut at EVENT_OUTPUT_BYTES), the
turn's usage (`turn.usage`: every model request's tokens together), an approval the
`--approval-mode` answered (`approval.granted_by_mode`), and the cap on model requests per
turn (`[turn] max_rounds`: a turn that needs N requests completes, one that needs N+1 is
stopped with `round_limit` and its last calls never run)."""

import json
from pathlib import Path
from typing import Any

import pytest

from magi_code.redact import REDACTED
from magi_code.runner.turn import tool_output
from magi_code.tools.base import ToolOutcome
from magi_code.tools.limits import EVENT_OUTPUT_BYTES
from providers.local_server import LocalServer, Reply, sse
from support.exec import exec_run, json_lines, named
from support.settings import local_provider

SSE_HEADERS = {"content-type": "text/event-stream"}
CHAT = "/v1/chat/completions"
SECRET = "hunter2-correct-horse-battery"


def usage(prompt: int, completion: int, cached: int) -> tuple[None, object]:
    details = {"cached_tokens": cached}
    return (
        None,
        {
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "prompt_tokens_details": details,
            },
        },
    )


def call(name: str, arguments: dict[str, object], spent: tuple[int, int, int]) -> Reply:
    opened = {"index": 0, "id": f"call_{name}", "function": {"name": name, "arguments": ""}}
    more = {"index": 0, "function": {"arguments": json.dumps(arguments)}}
    chunks = (
        (None, {"choices": [{"index": 0, "delta": {"tool_calls": [opened]}}]}),
        (None, {"choices": [{"index": 0, "delta": {"tool_calls": [more]}}]}),
        (None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        usage(*spent),
        (None, "[DONE]"),
    )
    return Reply(chunks=[sse(*chunks)], headers=SSE_HEADERS)


def text(said: str, spent: tuple[int, int, int] = (1, 1, 0)) -> Reply:
    end = {"choices": [{"index": 0, "delta": {"content": said}, "finish_reason": "stop"}]}
    return Reply(chunks=[sse((None, end), usage(*spent), (None, "[DONE]"))], headers=SSE_HEADERS)


def exec_json(
    workspace: Path, home: Path, mode: str, *more: str
) -> tuple[int, list[dict[str, Any]]]:
    done = exec_run(["--json", "--approval-mode", mode, *more, "go"], workspace, home, timeout=120)
    assert done.stdout.endswith(b"\n"), done.stderr
    return done.returncode, json_lines(done.stdout)


def test_tool_output_usage_and_a_grant_by_the_mode_are_told(workspace: Path, home: Path) -> None:
    (workspace / "notes.txt").write_text(f"password = {SECRET}\nnothing else\n")
    with LocalServer() as server:
        local_provider(home, server)
        server.script(
            CHAT,
            call("write_file", {"path": "out.txt", "content": "made"}, (100, 10, 40)),
            call("read_file", {"path": "notes.txt"}, (150, 20, 90)),
            text("done", (200, 5, 140)),
        )
        status, lines = exec_json(workspace, home, "edits")
    assert status == 0, lines[-1]
    assert (workspace / "out.txt").read_text() == "made"
    session_id, run_id = lines[0]["data"]["session_id"], lines[1]["data"]["run_id"]
    # the write needed approval: asked, and granted by --approval-mode edits, not a person
    [asked] = named(lines, "approval.requested")
    [granted] = named(lines, "approval.granted_by_mode")
    assert granted["approval_id"] == asked["approval_id"]
    assert (granted["mode"], granted["summary"]) == ("edits", asked["summary"])
    assert (granted["session_id"], granted["run_id"]) == (session_id, run_id)
    order = [line["event"] for line in lines]
    assert order.index("approval.requested") < order.index("approval.granted_by_mode")
    # each call's output, after its activity ends, with the activity's identity
    wrote, read = named(lines, "tool.output")
    ended = [a for a in named(lines, "activity") if a["state"] != "started"]
    assert [wrote["activity_id"], read["activity_id"]] == [a["activity_id"] for a in ended]
    assert (wrote["name"], wrote["ok"], read["name"], read["ok"]) == (
        "write_file",
        True,
        "read_file",
        True,
    )
    assert "nothing else" in read["output"] and REDACTED in read["output"]
    assert SECRET not in json.dumps(lines)
    assert read["output_bytes"] == len(read["output"].encode()) and not read["truncated"]
    # the turn's usage: its three model requests together, once, before run.finished
    [spent] = named(lines, "turn.usage")
    assert spent == {
        "session_id": session_id,
        "run_id": run_id,
        "rounds": 3,
        "input_tokens": 450,
        "output_tokens": 35,
        "cached_input_tokens": 270,
    }
    assert order.index("turn.usage") < order.index("run.finished") == len(order) - 1


def test_a_refusal_by_the_mode_is_no_grant(workspace: Path, home: Path) -> None:
    with LocalServer() as server:
        local_provider(home, server)
        server.script(
            CHAT, call("write_file", {"path": "o.txt", "content": "x"}, (1, 1, 0)), text("ok")
        )
        status, lines = exec_json(workspace, home, "ask")
    assert status == 0, lines[-1]
    assert named(lines, "approval.requested")
    assert not named(lines, "approval.granted_by_mode")
    [output] = named(lines, "tool.output")
    assert output["ok"] is False


def test_a_long_tool_output_is_cut_at_the_bound_and_says_so(workspace: Path, home: Path) -> None:
    (workspace / "long.txt").write_text("".join(f"line {n} of a long file\n" for n in range(3000)))
    with LocalServer() as server:
        local_provider(home, server)
        server.script(CHAT, call("read_file", {"path": "long.txt"}, (1, 1, 0)), text("read"))
        status, lines = exec_json(workspace, home, "ask")
    assert status == 0, lines[-1]
    [output] = named(lines, "tool.output")
    assert output["truncated"] and output["output_bytes"] > EVENT_OUTPUT_BYTES
    assert len(output["output"].encode()) <= EVENT_OUTPUT_BYTES
    assert output["output"].startswith("     1\tline 0 of a long file\n")


def test_tool_output_bound_at_its_edge() -> None:
    at = tool_output("a", "t", ToolOutcome(True, "x" * EVENT_OUTPUT_BYTES, "s"))
    assert (at.output, at.output_bytes, at.truncated) == (
        "x" * EVENT_OUTPUT_BYTES,
        EVENT_OUTPUT_BYTES,
        False,
    )
    over = tool_output("a", "t", ToolOutcome(True, "x" * (EVENT_OUTPUT_BYTES + 1), "s"))
    assert over.truncated and over.output_bytes == EVENT_OUTPUT_BYTES + 1
    assert len(over.output.encode()) <= EVENT_OUTPUT_BYTES


ROUNDS = 3


@pytest.mark.parametrize("needed", [ROUNDS, ROUNDS + 1])
@pytest.mark.parametrize("given", ["setting", "flag"])
def test_model_requests_per_turn_are_capped(
    workspace: Path, home: Path, needed: int, given: str
) -> None:
    """A turn that needs `needed` model requests (a list_dir call in each but the last), the
    cap set by `[turn] max_rounds` or by `--max-rounds` (over a setting of 50)."""
    calls = [call("list_dir", {"path": "."}, (1, 1, 0)) for _ in range(needed - 1)]
    with LocalServer() as server:
        setting = ROUNDS if given == "setting" else 50
        local_provider(home, server, top=f"[turn]\nmax_rounds = {setting}\n")
        server.script(CHAT, *calls, text("listed"))
        flag = ["--max-rounds", str(ROUNDS)] if given == "flag" else []
        status, lines = exec_json(workspace, home, "ask", *flag)
        requests = len(server.requests)
    finished = lines[-1]["data"]
    ran = [a for a in named(lines, "activity") if a["state"] == "completed"]
    if needed == ROUNDS:
        assert (status, finished["outcome"], requests, len(ran)) == (0, "completed", ROUNDS, 2)
        assert not named(lines, "diagnostic")
        return
    assert (status, finished["outcome"], finished["error_code"]) == (
        1,
        "failed",
        "execution_failed",
    )
    assert requests == ROUNDS, "no request past the cap"
    assert len(ran) == ROUNDS - 1, "the last answer's call never ran"
    [told] = named(lines, "diagnostic")
    assert told["code"] == "round_limit"
    assert f"bound of {ROUNDS} model requests" in told["summary"]
    assert named(lines, "turn.usage")[0]["rounds"] == ROUNDS
