"""Anthropic Messages API streaming: request body, and stream events to ProviderEvents.

A thinking block becomes a `ReasoningSummary` only when the provider itself typed the block
`thinking` (provenance); text is never reinterpreted as reasoning. A tool_use block's input is
bounded as it accumulates (tool_arguments.py); a message whose inputs pass the run's content
budget ends there, its open tool_use blocks handed on dropped. Never touches sockets.

Images go as `image` blocks (base64) in a user message or a tool_result's content; to a model
that takes none, as their descriptions. With web search on, the request offers the `web_search`
server tool; its searches run at the provider (server_tool_use and web_search_tool_result
blocks pass by), and the sources its text blocks cite (`web_search_result_location`) end the
reply as a list (providers/citations.py), so they are kept with it.

Every `stop_reason` maps to a `Completed` stop (`refusal` is `refused`, `max_tokens` a cut
answer); a tool_use block still open at `message_stop` is handed on as far as it came.
"""

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing

from magi_code import untrusted_json
from magi_code.providers.base import (
    AssistantText,
    Completed,
    ImagePart,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    ReasoningSummary,
    TextDelta,
    ToolCall,
    ToolCallDone,
    ToolResult,
    Usage,
    UserText,
    described,
)
from magi_code.providers.citations import Citations
from magi_code.providers.limits import (
    ANTHROPIC_DEFAULT_MAX_TOKENS,
    ANTHROPIC_THINKING_BUDGETS,
    ANTHROPIC_WEB_SEARCHES,
)
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.registry import keyed_build
from magi_code.providers.tool_arguments import Arguments, Budget
from magi_code.providers.wire import (
    StopReason,
    count,
    event_json,
    obj,
    stream_error,
    stream_until_finished,
    text,
)
from magi_code.records import field, record

API_VERSION = "2023-06-01"
WEB_SEARCH_TOOL = "web_search_20250305"
_STOP: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",  # the output ran into the context window
    "stop_sequence": "end_turn",
    "refusal": "refused",
    "pause_turn": "incomplete",  # a long server-tool turn paused, for the client to resume
}


def _messages(request: ModelRequest) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = []

    def add(role: str, block: dict[str, object]) -> None:
        if messages and messages[-1]["role"] == role:
            content = messages[-1]["content"]
            assert isinstance(content, list)
            content.append(block)
        else:
            messages.append({"role": role, "content": [block]})

    for item in request.items:
        if isinstance(item, UserText):
            for block in _blocks(item.text, item.images, request):
                add("user", block)
        elif isinstance(item, AssistantText):
            add("assistant", {"type": "text", "text": item.text})
        elif isinstance(item, ToolCall):
            add(
                "assistant",
                {
                    "type": "tool_use",
                    "id": item.call_id,
                    "name": item.name,
                    "input": _arguments(item.arguments),
                },
            )
        elif isinstance(item, ToolResult):
            content: str | list[dict[str, object]] = item.output
            if item.images:
                content = _blocks(item.output, item.images, request)
            add(
                "user",
                {
                    "type": "tool_result",
                    "tool_use_id": item.call_id,
                    "content": content,
                    "is_error": item.is_error,
                },
            )
    return messages


def _blocks(
    text: str, images: tuple[ImagePart, ...], request: ModelRequest
) -> list[dict[str, object]]:
    """Text and image blocks (to a model that takes no images, their descriptions); never an
    empty text block, which the API refuses."""
    if not request.images:
        text = "\n".join([text, *map(described, images)]) if images else text
        return [{"type": "text", "text": text}]
    blocks: list[dict[str, object]] = [{"type": "text", "text": text}] if text else []
    for image in images:
        source = {"type": "base64", "media_type": image.media_type, "data": image.data}
        blocks.append({"type": "image", "source": source})
    return blocks


def _arguments(arguments: str) -> object:
    try:
        return untrusted_json.loads(arguments) if arguments else {}
    except ValueError:
        return {"_raw": arguments}


def request_body(request: ModelRequest) -> dict[str, object]:
    max_tokens = request.max_output_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS
    body: dict[str, object] = {
        "model": request.model,
        "messages": _messages(request),
        "max_tokens": max_tokens,
        "stream": True,
    }
    if request.instructions:
        body["system"] = request.instructions
    tools: list[dict[str, object]] = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters}
        for t in request.tools
    ]
    if request.web_search:
        tools.append(
            {"type": WEB_SEARCH_TOOL, "name": "web_search", "max_uses": ANTHROPIC_WEB_SEARCHES}
        )
    if tools:
        body["tools"] = tools
    budget = ANTHROPIC_THINKING_BUDGETS.get(request.thinking or "")
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": min(budget, max_tokens - 1)}
    return body


@record(frozen=False)
class _Block:
    kind: str
    arguments: Arguments  # a tool_use block's input (sent whole at its start, or as deltas)
    call_id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)  # a thinking block's text


@record(frozen=False)
class MessagesStreamState:
    blocks: dict[int, _Block] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)
    citations: Citations = field(default_factory=Citations)
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    stop: str | None = None
    finished: bool = False

    def event(self, data: str) -> list[ProviderEvent]:
        out = self._event(event_json(data))
        if self.budget.spent and not self.finished:
            return self._cut()
        return out

    def _event(self, value: dict[str, object]) -> list[ProviderEvent]:
        kind = text(value.get("type"))
        if kind == "message_start":
            usage = obj(obj(value.get("message")).get("usage"))
            self.input_tokens = count(usage.get("input_tokens"))
            self.cached_tokens = count(usage.get("cache_read_input_tokens"))
            self.output_tokens = count(usage.get("output_tokens"))
        elif kind == "content_block_start":
            block = obj(value.get("content_block"))
            started = _Block(
                text(block.get("type")),
                Arguments(self.budget),
                text(block.get("id")),
                text(block.get("name")),
            )
            if started.kind == "tool_use" and obj(block.get("input")):
                started.arguments.give(json.dumps(block["input"], ensure_ascii=False))
            self.blocks[count(value.get("index"))] = started
        elif kind == "content_block_delta":
            return self._delta(count(value.get("index")), obj(value.get("delta")))
        elif kind == "content_block_stop":
            return self._stop(count(value.get("index")))
        elif kind == "message_delta":
            self.stop = text(obj(value.get("delta")).get("stop_reason")) or self.stop
            out = count(obj(value.get("usage")).get("output_tokens"))
            self.output_tokens = out or self.output_tokens
        elif kind == "message_stop":
            self.finished = True
            sources = self.citations.said()
            cited: list[ProviderEvent] = [TextDelta(sources)] if sources else []
            stop = _STOP.get(self.stop or "end_turn", "other")
            return [*cited, *self._open_calls(), self._usage(), Completed(stop)]
        elif kind == "error":
            raise stream_error(obj(value.get("error")))
        return []

    def _delta(self, index: int, delta: dict[str, object]) -> list[ProviderEvent]:
        block = self.blocks.get(index)
        if block is None:
            raise ProviderError("malformed_stream", detail="delta for an unknown block")
        kind = text(delta.get("type"))
        if kind == "text_delta":
            piece = text(delta.get("text"))
            return [TextDelta(piece)] if piece else []
        if kind == "input_json_delta":
            block.arguments.add(text(delta.get("partial_json")))
        elif kind == "thinking_delta":
            block.parts.append(text(delta.get("thinking")))
        elif kind == "citations_delta":
            citation = obj(delta.get("citation"))
            if text(citation.get("type")) == "web_search_result_location":
                self.citations.cite(citation.get("url"), citation.get("title"))
        return []

    def _cut(self) -> list[ProviderEvent]:
        """The tool inputs passed the run's content budget: the message ends here."""
        self.finished = True
        out: list[ProviderEvent] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block.kind == "tool_use":
                block.arguments.drop()
                out.append(ToolCallDone(block.arguments.call(block.call_id, block.name)))
        self.blocks.clear()
        return [*out, self._usage(), Completed("tool_use")]

    def _open_calls(self) -> list[ProviderEvent]:
        """tool_use blocks the message ended inside (its output limit cut them): handed on as
        far as they came, for the turn to report, never dropped."""
        out: list[ProviderEvent] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block.kind == "tool_use":
                out.append(ToolCallDone(block.arguments.call(block.call_id, block.name)))
        self.blocks.clear()
        return out

    def _usage(self) -> Usage:
        return Usage(self.input_tokens, self.output_tokens, self.cached_tokens)

    def _stop(self, index: int) -> list[ProviderEvent]:
        block = self.blocks.pop(index, None)
        if block is None:
            return []
        if block.kind == "tool_use":
            return [ToolCallDone(block.arguments.call(block.call_id, block.name))]
        if block.kind == "thinking" and block.parts:
            return [ReasoningSummary(f"thinking-{index}", "".join(block.parts))]
        return []


@record(frozen=False)
class AnthropicProvider:
    id: str
    base_url: str
    api_key: str | None = field(repr=False)
    policy: HttpPolicy = field(default_factory=HttpPolicy)
    extra_headers: Mapping[str, str] = field(default_factory=dict)

    def headers(self) -> dict[str, str]:
        headers = {
            "accept": "text/event-stream",
            "anthropic-version": API_VERSION,
            **self.extra_headers,
        }
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        url = self.base_url.rstrip("/") + "/messages"
        state = MessagesStreamState()
        body = request_body(request)
        events = stream_until_finished(url, self.headers(), body, self.policy, state)
        async with aclosing(events):  # closing this stream closes the request now
            async for event in events:
                yield event


# The registry's row for `anthropic` (providers/registry.py).
build = keyed_build(AnthropicProvider, "anthropic")
