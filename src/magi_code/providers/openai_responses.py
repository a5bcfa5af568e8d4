"""OpenAI Responses API streaming: request body, and typed stream events to ProviderEvents.

Reasoning summaries are emitted only from `response.reasoning_summary_text.*` events (the
provider's own provenance). Never touches sockets itself (`http` does).
"""

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing

from magi_code.providers.base import (
    AssistantText,
    Completed,
    ModelRequest,
    ProviderEvent,
    ReasoningSummary,
    TextDelta,
    ToolCall,
    ToolCallDone,
    ToolResult,
    Usage,
    UserText,
)
from magi_code.providers.http import HttpPolicy
from magi_code.providers.registry import keyed_build
from magi_code.providers.wire import (
    count,
    event_json,
    obj,
    stream_error,
    stream_until_finished,
    text,
)
from magi_code.records import field, record


def request_body(request: ModelRequest) -> dict[str, object]:
    items: list[dict[str, object]] = []
    for item in request.items:
        if isinstance(item, UserText):
            items.append({"role": "user", "content": [{"type": "input_text", "text": item.text}]})
        elif isinstance(item, AssistantText):
            items.append(
                {"role": "assistant", "content": [{"type": "output_text", "text": item.text}]}
            )
        elif isinstance(item, ToolCall):
            items.append(
                {
                    "type": "function_call",
                    "call_id": item.call_id,
                    "name": item.name,
                    "arguments": item.arguments,
                }
            )
        elif isinstance(item, ToolResult):
            items.append(
                {"type": "function_call_output", "call_id": item.call_id, "output": item.output}
            )
    body: dict[str, object] = {
        "model": request.model,
        "instructions": request.instructions,
        "input": items,
        "stream": True,
        "store": False,
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            }
            for t in request.tools
        ]
    if request.thinking is not None:
        body["reasoning"] = {"effort": request.thinking, "summary": "auto"}
    if request.max_output_tokens is not None:
        body["max_output_tokens"] = request.max_output_tokens
    return body


@record(frozen=False)
class ResponsesStreamState:
    """Typed events in, ProviderEvents out; arguments assembled per output item."""

    arguments: dict[str, list[str]] = field(default_factory=dict)
    summaries: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    tool_calls: int = 0
    finished: bool = False

    def event(self, data: str) -> list[ProviderEvent]:
        value = event_json(data)
        kind = text(value.get("type"))
        if kind == "response.output_text.delta":
            delta = text(value.get("delta"))
            return [TextDelta(delta)] if delta else []
        if kind == "response.reasoning_summary_text.delta":
            key = (text(value.get("item_id")), count(value.get("summary_index")))
            self.summaries.setdefault(key, []).append(text(value.get("delta")))
            return []
        if kind == "response.reasoning_summary_text.done":
            key = (text(value.get("item_id")), count(value.get("summary_index")))
            parts = self.summaries.pop(key, [])
            summary = text(value.get("text")) or "".join(parts)
            return [ReasoningSummary(key[0], summary)] if summary else []
        if kind == "response.function_call_arguments.delta":
            item_id = text(value.get("item_id"))
            self.arguments.setdefault(item_id, []).append(text(value.get("delta")))
            return []
        if kind == "response.output_item.done":
            return self._item_done(obj(value.get("item")))
        if kind in ("response.completed", "response.incomplete"):
            return self._completed(kind, obj(value.get("response")))
        if kind in ("response.failed", "error"):
            error = obj(obj(value.get("response")).get("error")) if kind != "error" else value
            raise stream_error(error)
        return []

    def _item_done(self, item: dict[str, object]) -> list[ProviderEvent]:
        if text(item.get("type")) != "function_call":
            return []
        streamed = "".join(self.arguments.pop(text(item.get("id")), []))
        arguments = text(item.get("arguments")) or streamed or "{}"
        self.tool_calls += 1
        call = ToolCall(text(item.get("call_id")), text(item.get("name")), arguments)
        return [ToolCallDone(call)]

    def _completed(self, kind: str, response: dict[str, object]) -> list[ProviderEvent]:
        self.finished = True
        out: list[ProviderEvent] = []
        usage = response.get("usage")
        if isinstance(usage, dict):
            cached = count(obj(usage.get("input_tokens_details")).get("cached_tokens"))
            out.append(
                Usage(count(usage.get("input_tokens")), count(usage.get("output_tokens")), cached)
            )
        if kind == "response.incomplete":
            out.append(Completed("max_tokens"))
        else:
            out.append(Completed("tool_use" if self.tool_calls else "end_turn"))
        return out


@record(frozen=False)
class OpenAIResponsesProvider:
    id: str
    base_url: str
    api_key: str | None = field(repr=False)
    policy: HttpPolicy = field(default_factory=HttpPolicy)
    extra_headers: Mapping[str, str] = field(default_factory=dict)
    path: str = "/responses"

    def headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream", **self.extra_headers}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        url = self.base_url.rstrip("/") + self.path
        events = stream_responses(url, self.headers(), request_body(request), self.policy)
        async with aclosing(events):  # closing this stream closes the request now
            async for event in events:
                yield event


# The registry's row for `openai-responses` (providers/registry.py).
build = keyed_build(OpenAIResponsesProvider, "openai-responses")


async def stream_responses(
    url: str, headers: Mapping[str, str], body: Mapping[str, object], policy: HttpPolicy
) -> AsyncGenerator[ProviderEvent]:
    events = stream_until_finished(url, headers, body, policy, ResponsesStreamState())
    async with aclosing(events):  # closing this stream closes the request now
        async for event in events:
            yield event
