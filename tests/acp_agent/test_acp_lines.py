"""`magi-code acp` fed lines the ACP SDK cannot route, over its real pipes: each is answered
with its JSON-RPC error (id null where the id cannot be read) and the process goes on serving
(initialize, session/new and a prompt afterwards), with no traceback on stderr."""

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magi_code import limits
from magi_code.acp.lines import judge
from magi_code.client import environment
from support.exec import MAGI_CODE

PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


class Acp:
    """The real `magi-code acp` on pipes, spoken to one raw line at a time."""

    def __init__(self, workspace: Path, home: Path) -> None:
        self.workspace = workspace
        self.process = subprocess.Popen(
            [MAGI_CODE, "acp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workspace,
            env=environment(home),
        )
        self.pending = b""
        self.next_id = 100

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def message(self, timeout: float = 30) -> dict[str, Any]:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            assert left > 0 and select.select([fd], [], [], left)[0], "no answer in time"
            chunk = os.read(fd, 1 << 16)
            assert chunk, f"the process ended: {self.finish()}"
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        value = json.loads(line)
        assert isinstance(value, dict)
        return value

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The answer to a request, past the notifications and requests sent before it."""
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.send(json.dumps(message).encode())
        while (answer := self.message()).get("id") != self.next_id or "method" in answer:
            pass
        return answer

    def serves(self) -> None:
        """initialize, session/new and a prompt are answered as usual."""
        init = self.request("initialize", {"protocolVersion": 1})
        assert init["result"]["protocolVersion"] == 1, init
        made = self.request("session/new", {"cwd": str(self.workspace), "mcpServers": []})
        session_id = made["result"]["sessionId"]
        prompt = [{"type": "text", "text": "fixture:" + json.dumps([{"text": "still here"}])}]
        done = self.request("session/prompt", {"sessionId": session_id, "prompt": prompt})
        assert done["result"]["stopReason"] == "end_turn", done

    def finish(self) -> tuple[int, bytes]:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        code = self.process.wait(30)
        return code, self.process.stderr.read()


@pytest.fixture
def acp(tmp_path: Path) -> Iterator[Acp]:
    (tmp_path / "workspace").mkdir()
    process = Acp(tmp_path / "workspace", tmp_path / "mc-home")
    try:
        yield process
    finally:
        if process.process.poll() is None:
            process.process.kill()
        process.process.wait()
        for pipe in (process.process.stdin, process.process.stdout, process.process.stderr):
            assert pipe is not None
            pipe.close()


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
UNDER_THE_RECURSION_LIMIT = json.dumps(
    {**INITIALIZE, "params": {"protocolVersion": 1, "_meta": {"x": "here"}}}
).replace('"here"', deep(sys.getrecursionlimit() - 10))
LINES = {
    "batch": (json.dumps([INITIALIZE]), INVALID_REQUEST, None),
    "string": ('"hi"', INVALID_REQUEST, None),
    "number": ("1", INVALID_REQUEST, None),
    "null": ("null", INVALID_REQUEST, None),
    "empty object": ("{}", INVALID_REQUEST, None),
    "not json": ("not json", PARSE_ERROR, None),
    "unterminated": ('{"jsonrpc":"2.0","id":1,', PARSE_ERROR, None),
    "nested 100_000 deep": (deep(100_000), PARSE_ERROR, None),
    "nested just under the recursion limit": (UNDER_THE_RECURSION_LIMIT, PARSE_ERROR, None),
    "a list id": (json.dumps({**INITIALIZE, "id": [1]}), INVALID_REQUEST, None),
    "a true id": (json.dumps({**INITIALIZE, "id": True}), INVALID_REQUEST, None),
    "a method not a string": (json.dumps({**INITIALIZE, "method": ["x"]}), INVALID_REQUEST, 1),
}
MESSAGES = {PARSE_ERROR: "Parse error: ", INVALID_REQUEST: "Invalid Request: "}


@pytest.mark.parametrize("name", sorted(LINES))
def test_a_line_the_sdk_cannot_route_is_answered_and_serving_goes_on(acp: Acp, name: str) -> None:
    line, code, request_id = LINES[name]
    acp.send(line.encode())
    answer = acp.message()
    assert answer.keys() == {"jsonrpc", "id", "error"} and answer["id"] == request_id, answer
    assert answer["error"].keys() == {"code", "message"}  # fixed words, never the input
    assert answer["error"]["code"] == code
    assert answer["error"]["message"].startswith(MESSAGES[code])
    acp.serves()
    code, stderr = acp.finish()
    assert code == 0
    assert b"Traceback" not in stderr, stderr.decode(errors="replace")


def test_bytes_that_are_not_utf8_are_a_parse_error(acp: Acp) -> None:
    acp.send(b'{"jsonrpc":"2.0","id":1,"method":"\xff"}')
    assert acp.message()["error"]["code"] == PARSE_ERROR
    acp.serves()


def test_the_nesting_bound_is_exact(acp: Acp) -> None:
    """UNTRUSTED_JSON_DEPTH containers reach the SDK (here: an unknown method, so answered
    method not found), one more is a parse error."""
    for depth, code in (
        (limits.UNTRUSTED_JSON_DEPTH, -32601),
        (limits.UNTRUSTED_JSON_DEPTH + 1, PARSE_ERROR),
    ):
        params = deep(depth - 1)  # the message object itself is the first container
        acp.send(f'{{"jsonrpc":"2.0","id":5,"method":"nothing/here","params":{params}}}'.encode())
        answer = acp.message()
        assert answer["error"]["code"] == code, (depth, answer)
    acp.serves()


def test_an_over_size_line_is_refused_and_serving_goes_on(acp: Acp) -> None:
    """A line past ACP_MESSAGE_BYTES (5 MB here, never held whole) is answered Invalid
    Request; the next line is read from its start."""
    acp.send(b"x" * (5 * limits.ACP_MESSAGE_BYTES))
    answer = acp.message()
    assert (answer["id"], answer["error"]["code"]) == (None, INVALID_REQUEST)
    assert str(limits.ACP_MESSAGE_BYTES) in answer["error"]["message"]
    acp.serves()
    code, stderr = acp.finish()
    assert (code, stderr) == (0, b"")


def test_malformed_answers_to_the_agents_own_request_fail_that_request_only(
    acp: Acp,
) -> None:
    """While the agent waits for `session/request_permission`, an answer whose id is a list is
    refused, and one whose error is not an object fails the request (a refusal), not the
    process: the prompt ends, the file is unchanged."""
    target = acp.workspace / "notes.txt"
    target.write_text("colour: red\n")
    acp.request("initialize", {"protocolVersion": 1})
    made = acp.request("session/new", {"cwd": str(acp.workspace), "mcpServers": []})
    edit = {"name": "edit_file", "arguments": {"path": "notes.txt", "old": "red", "new": "blue"}}
    script = "fixture:" + json.dumps([{"tools": [edit]}, {"text": "done"}])
    prompt = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "session/prompt",
        "params": {
            "sessionId": made["result"]["sessionId"],
            "prompt": [{"type": "text", "text": script}],
        },
    }
    acp.send(json.dumps(prompt).encode())
    while (asked := acp.message()).get("method") != "session/request_permission":
        pass
    acp.send(json.dumps({"jsonrpc": "2.0", "id": [asked["id"]], "result": {}}).encode())
    refused = acp.message()
    assert (refused["id"], refused["error"]["code"]) == (None, INVALID_REQUEST)
    acp.send(json.dumps({"jsonrpc": "2.0", "id": asked["id"], "error": "nope"}).encode())
    while (done := acp.message()).get("id") != 9:
        pass
    assert done["result"]["stopReason"] == "end_turn", done
    assert target.read_text() == "colour: red\n"
    acp.serves()
    code, stderr = acp.finish()
    assert code == 0
    assert b"Traceback" not in stderr, stderr.decode(errors="replace")


def test_a_permissions_diff_reads_the_models_arguments_within_the_bound() -> None:
    """updates.diff: arguments nested past UNTRUSTED_JSON_DEPTH (or not an object) show no
    diff; it never raises."""
    from magi_code.acp.updates import diff

    def asked(arguments: str) -> list[Any] | None:
        return diff("write_file", arguments, (Path("/w/a.txt"),))

    shown = asked(
        json.dumps(
            {
                "path": "a.txt",
                "content": "hi",
                "x": json.loads(deep(limits.UNTRUSTED_JSON_DEPTH - 1)),
            }
        )
    )
    assert shown is not None and shown[0].new_text == "hi"
    for arguments in (
        json.dumps(
            {"path": "a.txt", "content": "hi", "x": json.loads(deep(limits.UNTRUSTED_JSON_DEPTH))}
        ),
        deep(100_000),
        "[1]",
    ):
        assert asked(arguments) is None


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=64),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
            max_leaves=12,
        ).map(lambda value: json.dumps(value).encode()),
        st.fixed_dictionaries(
            {},
            optional={
                "id": st.none() | st.booleans() | st.integers() | st.text(max_size=4),
                "method": st.none() | st.integers() | st.text(max_size=8),
                "result": st.none() | st.integers(),
                "error": st.none() | st.integers() | st.text(max_size=4) | st.just({}),
            },
        ).map(lambda value: json.dumps(value).encode()),
    )
)
def test_judge_never_raises_and_hands_the_sdk_only_what_it_routes(line: bytes) -> None:
    """Whatever the line: what reaches the SDK is an object with a hashable id, a string
    method or a result or an object error; what is answered is one JSON-RPC error line."""
    judged = judge(line)
    if judged.answer is not None:
        assert judged.answer.endswith(b"\n")
        answer = json.loads(judged.answer)
        assert answer["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST)
    if judged.line is not None:
        message = json.loads(judged.line)
        assert isinstance(message, dict)
        assert message.get("id") is None or type(message["id"]) in (str, int)
        if "method" in message:
            assert isinstance(message["method"], str)
        else:
            assert "result" in message or isinstance(message.get("error"), dict)
