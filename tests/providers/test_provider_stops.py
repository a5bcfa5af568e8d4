"""Provider stops and framing each wire meets over real local HTTP.

- A last event line with no line end at a framed end of body (a length, a last chunk) is read
  whole, as both official SDKs' line decoders read it: the stream gives the same events as
  with its line ends. Where only a closed connection ended the body, that line was cut
  (test_stream_boundaries.py keeps those cases).
- Responses function tools carry `strict` explicitly: true only for a schema strict mode
  would not change (every object closed, every property required).
- Every stop of the recorded streams maps to its class (the turn's diagnostic codes come from
  these: tests/exec/test_exec_provider_stops.py).
"""

import json
from pathlib import Path

import pytest

from magi_code.providers.base import Completed, ModelRequest, ToolCallDone, ToolSpec, UserText
from magi_code.providers.openai_responses import OpenAIResponsesProvider, strict_ready
from magi_code.providers.policy import HttpPolicy
from providers.local_server import LocalServer, Reply, sse
from providers.test_stream_boundaries import RICH, whole_events
from providers.test_wire_apis import collect
from providers.test_wire_errors import WIRES
from support.wires import typed

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("framing", ["length", "chunked"])
@pytest.mark.parametrize("wire", sorted(set(RICH) - {"openai-chat"}))  # chat's [DONE] is optional
async def test_a_last_line_without_its_line_end_at_a_framed_end_is_whole(
    server: LocalServer, tmp_path: Path, wire: str, framing: str
) -> None:
    path, build, _ = WIRES[wire]
    stream, _ = RICH[wire]
    whole = await whole_events(server, tmp_path, path, build, stream)
    assert stream.endswith(b"\n\n")
    unterminated = stream.rstrip(b"\n")
    length, chunked = framing == "length", framing == "chunked"
    server.script(path, Reply(chunks=[unterminated], content_length=length, chunked=chunked))
    assert await collect(build(server, tmp_path, HttpPolicy(attempts=1))) == whole


OPEN: dict[str, object] = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["path"],
}
CLOSED: dict[str, object] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"old": {"type": "string"}},
                "required": ["old"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["path", "edits"],
    "additionalProperties": False,
}


def test_strict_ready_only_for_schemas_strict_mode_leaves_alone() -> None:
    assert strict_ready(CLOSED)
    assert not strict_ready(OPEN)  # an optional property
    assert not strict_ready({**OPEN, "required": ["path", "limit"]})  # not closed
    inner_open = json.loads(json.dumps(CLOSED))
    del inner_open["properties"]["edits"]["items"]["additionalProperties"]
    assert not strict_ready(inner_open)  # an object deep inside is open


async def test_responses_tools_carry_strict_explicitly(server: LocalServer, tmp_path: Path) -> None:
    done = ("response.completed", {"type": "response.completed", "response": {}})
    server.script("/v1/responses", Reply(chunks=[sse(done)]))
    tools = (ToolSpec("read", "read a file", OPEN), ToolSpec("edit", "edit a file", CLOSED))
    request = ModelRequest("m", "be brief", (UserText("hi"),), tools)
    provider = OpenAIResponsesProvider("r", server.url + "/v1", "k", HttpPolicy(attempts=1))
    await collect(provider, request)
    sent = json.loads(server.requests[0].body)["tools"]
    assert [(t["name"], t["strict"]) for t in sent] == [("read", False), ("edit", True)]


ANTHROPIC_OPEN_TOOL = sse(
    typed("message_start", message={"usage": {"input_tokens": 3}}),
    typed(
        "content_block_start",
        index=0,
        content_block={"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}},
    ),
    typed("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": "{"}),
    typed("message_delta", delta={"stop_reason": "max_tokens"}, usage={"output_tokens": 9}),
    typed("message_stop"),
)
RESPONSES_OPEN_CALL = sse(
    typed(
        "response.output_item.added",
        item={"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "write_file"},
    ),
    typed("response.function_call_arguments.delta", item_id="fc_1", delta='{"pa'),
    typed("response.incomplete", response={"incomplete_details": {"reason": "max_output_tokens"}}),
)
CHAT_LENGTH_CALL = sse(
    (
        None,
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "function": {"name": "write_file", "arguments": '{"pa'},
                            }
                        ]
                    },
                    "finish_reason": "length",
                }
            ]
        },
    ),
    (None, "[DONE]"),
)


@pytest.mark.parametrize(
    ("wire", "stream"),
    [
        ("anthropic", ANTHROPIC_OPEN_TOOL),
        ("openai-responses", RESPONSES_OPEN_CALL),
        ("openai-chat", CHAT_LENGTH_CALL),
    ],
)
async def test_a_call_the_output_limit_cut_is_handed_on_with_the_stop(
    server: LocalServer, tmp_path: Path, wire: str, stream: bytes
) -> None:
    """Never dropped: the turn names it and does not run it."""
    path, build, _ = WIRES[wire]
    server.script(path, Reply(chunks=[stream]))
    events = await collect(build(server, tmp_path, HttpPolicy(attempts=1)))
    [call] = [e.call for e in events if isinstance(e, ToolCallDone)]
    assert call.name == "write_file"
    assert events[-1] == Completed("max_tokens")
