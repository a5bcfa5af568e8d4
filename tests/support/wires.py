"""What a local server answers a model request with, over each wire API: a stream in which the
model calls one tool, and one in which it answers with text (`WIRES` maps a wire to its request
path and those two); `typed` builds an event that names its own type, as the Anthropic and
Responses streams do; `image_parts` reads the images back out of a request body."""

from collections.abc import Callable
from typing import Any

from providers.local_server import sse


def typed(kind: str, **fields: object) -> tuple[str, object]:
    """One event of the typed-event wires (Anthropic, Responses): named as its type."""
    return (kind, {"type": kind, **fields})


def chat_call(name: str, arguments: str) -> bytes:
    call = {"index": 0, "id": "call_1", "function": {"name": name, "arguments": arguments}}
    return sse(
        (None, {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}),
        (None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        (None, "[DONE]"),
    )


def chat_text(text: str) -> bytes:
    end = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}
    return sse((None, end), (None, "[DONE]"))


def anthropic_stream(block: dict[str, object], delta: dict[str, object], stop: str) -> bytes:
    return sse(
        typed("message_start", message={"usage": {"input_tokens": 1}}),
        typed("content_block_start", index=0, content_block=block),
        typed("content_block_delta", index=0, delta=delta),
        typed("content_block_stop", index=0),
        typed("message_delta", delta={"stop_reason": stop}),
        typed("message_stop"),
    )


def anthropic_call(name: str, arguments: str) -> bytes:
    block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}
    delta = {"type": "input_json_delta", "partial_json": arguments}
    return anthropic_stream(block, delta, "tool_use")


def anthropic_text(text: str) -> bytes:
    return anthropic_stream(
        {"type": "text", "text": ""}, {"type": "text_delta", "text": text}, "end_turn"
    )


def responses_call(name: str, arguments: str) -> bytes:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": name}
    return sse(
        typed("response.output_item.added", item=item),
        typed("response.output_item.done", item={**item, "arguments": arguments}),
        typed("response.completed", response={}),
    )


def responses_text(text: str) -> bytes:
    return sse(
        typed("response.output_text.delta", delta=text), typed("response.completed", response={})
    )


Call = Callable[[str, str], bytes]  # (tool name, JSON arguments) -> the stream
Text = Callable[[str], bytes]
WIRES: dict[str, tuple[str, Call, Text]] = {
    "openai-chat": ("/v1/chat/completions", chat_call, chat_text),
    "anthropic": ("/v1/messages", anthropic_call, anthropic_text),
    "openai-responses": ("/v1/responses", responses_call, responses_text),
}


def image_parts(wire: str, body: dict[str, Any]) -> list[str]:
    """The base64 data of every image part the request carries, in its wire's shape."""
    found: list[str] = []
    if wire == "openai-chat":
        for message in body["messages"]:
            content = message["content"]
            for part in content if isinstance(content, list) else []:
                if part["type"] == "image_url":
                    found.append(part["image_url"]["url"].removeprefix("data:image/png;base64,"))
    elif wire == "anthropic":
        for message in body["messages"]:
            for block in message["content"]:
                inner = block.get("content") if block["type"] == "tool_result" else [block]
                for part in inner if isinstance(inner, list) else []:
                    if part["type"] == "image":
                        assert part["source"]["type"] == "base64"
                        assert part["source"]["media_type"] == "image/png"
                        found.append(part["source"]["data"])
    else:
        for item in body["input"]:
            parts = item.get("output") if item.get("type") == "function_call_output" else None
            parts = parts if isinstance(parts, list) else item.get("content", [])
            for part in parts if isinstance(parts, list) else []:
                if part["type"] == "input_image":
                    found.append(part["image_url"].removeprefix("data:image/png;base64,"))
    return found
