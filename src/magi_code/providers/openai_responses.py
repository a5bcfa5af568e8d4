"""OpenAI Responses API streaming: request body, and typed stream events to ProviderEvents.

Reasoning summaries are emitted only from `response.reasoning_summary_text.*` events (the
provider's own provenance). Images go as `input_image` parts (a data URL) of a user message or
of a function call's output; to a model that takes none, as their descriptions. With web
search on, the request offers the provider's own `web_search` tool; the searches run at the
provider, and the sources its text cites (`url_citation` annotations) end the reply as a list
(providers/citations.py), so they are kept with it. A function call's arguments are bounded
as they accumulate (tool_arguments.py); a response whose arguments pass the run's content
budget ends there, its open calls handed on dropped. Function tools carry `strict`
explicitly (`strict_ready`). A `response.incomplete` stops with its reason (output limit or
content filter), handing on a call still open as far as it came; a refusal is shown as text
and stops as `refused`. Never touches sockets itself (`requests` does).
"""

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing

from magi_code.providers.base import (
    AssistantText,
    Completed,
    ImagePart,
    ModelRequest,
    ProviderEvent,
    ReasoningSummary,
    TextDelta,
    ToolCall,
    ToolCallDone,
    ToolResult,
    Usage,
    UserText,
    data_url,
    described,
)
from magi_code.providers.citations import Citations
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

# `response.incomplete`: why, from its `incomplete_details.reason` (an unknown reason is
# `incomplete`, never a finished answer).
_INCOMPLETE: dict[str, StopReason] = {
    "max_output_tokens": "max_tokens",
    "content_filter": "content_filtered",
}


def request_body(request: ModelRequest) -> dict[str, object]:
    items: list[dict[str, object]] = []
    for item in request.items:
        if isinstance(item, UserText):
            items.append({"role": "user", "content": _input(item.text, item.images, request)})
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
            output: str | list[dict[str, object]] = item.output
            if item.images and request.images:
                output = _input(item.output, item.images, request)
            elif item.images:
                output = "\n".join([item.output, *map(described, item.images)])
            items.append(
                {"type": "function_call_output", "call_id": item.call_id, "output": output}
            )
    body: dict[str, object] = {
        "model": request.model,
        "instructions": request.instructions,
        "input": items,
        "stream": True,
        "store": False,
    }
    tools: list[dict[str, object]] = [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
            "strict": strict_ready(t.parameters),
        }
        for t in request.tools
    ]
    if request.web_search:
        tools.append({"type": "web_search"})
    if tools:
        body["tools"] = tools
    if request.thinking is not None:
        body["reasoning"] = {"effort": request.thinking, "summary": "auto"}
    if request.max_output_tokens is not None:
        body["max_output_tokens"] = request.max_output_tokens
    return body


def strict_ready(schema: object) -> bool:
    """Whether a tool's parameters schema can be held to strictly (Responses `strict`): every
    object in it closed (`additionalProperties: false`) with each of its properties required.
    Otherwise strict mode would make the optional parameters required, so `strict` is false."""
    if isinstance(schema, list):
        return all(map(strict_ready, schema))
    if not isinstance(schema, dict):
        return True
    properties = schema.get("properties")
    if schema.get("type") == "object" or properties is not None:
        names = set(properties) if isinstance(properties, dict) else set()
        required = schema.get("required", [])
        if schema.get("additionalProperties") is not False or not isinstance(required, list):
            return False
        if set(required) != names:
            return False
    return all(strict_ready(value) for value in schema.values() if isinstance(value, dict | list))


def _input(
    text: str, images: tuple[ImagePart, ...], request: ModelRequest
) -> list[dict[str, object]]:
    """Input parts: the text, then each image (to a model that takes none, its description)."""
    parts: list[dict[str, object]] = [{"type": "input_text", "text": text}] if text else []
    for image in images:
        if request.images:
            parts.append({"type": "input_image", "image_url": data_url(image), "detail": "auto"})
        else:
            parts.append({"type": "input_text", "text": described(image)})
    return parts


@record(frozen=False)
class _Call:
    arguments: Arguments
    call_id: str = ""  # from the item's `output_item.added`, when it came
    name: str = ""


@record(frozen=False)
class ResponsesStreamState:
    """Typed events in, ProviderEvents out; arguments assembled per output item."""

    calls: dict[str, _Call] = field(default_factory=dict)  # by item id, until done
    summaries: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)
    citations: Citations = field(default_factory=Citations)
    tool_calls: int = 0
    refused: bool = False  # the model sent a refusal (`response.refusal.delta`)
    finished: bool = False

    def event(self, data: str) -> list[ProviderEvent]:
        out = self._event(event_json(data))
        if self.budget.spent and not self.finished:
            return self._cut()
        return out

    def _event(self, value: dict[str, object]) -> list[ProviderEvent]:
        kind = text(value.get("type"))
        if kind == "response.output_text.delta":
            delta = text(value.get("delta"))
            return [TextDelta(delta)] if delta else []
        if kind == "response.refusal.delta":  # the model's refusal is its answer: shown
            delta = text(value.get("delta"))
            self.refused = self.refused or bool(delta)
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
            self._call(text(value.get("item_id"))).arguments.add(text(value.get("delta")))
            return []
        if kind == "response.output_item.added":
            item = obj(value.get("item"))
            if text(item.get("type")) == "function_call":
                call = self._call(text(item.get("id")))
                call.call_id, call.name = text(item.get("call_id")), text(item.get("name"))
            return []
        if kind == "response.output_text.annotation.added":
            self._cite(obj(value.get("annotation")))
            return []
        if kind == "response.output_item.done":
            return self._item_done(obj(value.get("item")))
        if kind in ("response.completed", "response.incomplete"):
            return self._completed(kind, obj(value.get("response")))
        if kind in ("response.failed", "error"):
            error = obj(obj(value.get("response")).get("error")) if kind != "error" else value
            raise stream_error(error)
        return []

    def _call(self, item_id: str) -> _Call:
        call = self.calls.get(item_id)
        if call is None:
            call = self.calls[item_id] = _Call(Arguments(self.budget))
        return call

    def _cite(self, annotation: dict[str, object]) -> None:
        if text(annotation.get("type")) == "url_citation":
            self.citations.cite(annotation.get("url"), annotation.get("title"))

    def _item_done(self, item: dict[str, object]) -> list[ProviderEvent]:
        if text(item.get("type")) == "message":  # its annotations, if none were streamed
            content = item.get("content")
            for part in content if isinstance(content, list) else []:
                annotations = obj(part).get("annotations")
                for annotation in annotations if isinstance(annotations, list) else []:
                    self._cite(obj(annotation))
        if text(item.get("type")) != "function_call":
            return []
        call = self.calls.pop(text(item.get("id")), None) or _Call(Arguments(self.budget))
        call.arguments.give(text(item.get("arguments")))  # given whole, it wins
        self.tool_calls += 1
        call_id = text(item.get("call_id")) or call.call_id
        return [ToolCallDone(call.arguments.call(call_id, text(item.get("name")) or call.name))]

    def _cut(self) -> list[ProviderEvent]:
        """The arguments passed the run's content budget: the response ends here."""
        self.finished = True
        out: list[ProviderEvent] = []
        for call in self.calls.values():
            call.arguments.drop()
            out.append(ToolCallDone(call.arguments.call(call.call_id, call.name)))
        self.calls.clear()
        return [*out, Completed("tool_use")]

    def _completed(self, kind: str, response: dict[str, object]) -> list[ProviderEvent]:
        self.finished = True
        sources = self.citations.said()
        out: list[ProviderEvent] = [TextDelta(sources)] if sources else []
        usage = response.get("usage")
        if isinstance(usage, dict):
            cached = count(obj(usage.get("input_tokens_details")).get("cached_tokens"))
            out.append(
                Usage(count(usage.get("input_tokens")), count(usage.get("output_tokens")), cached)
            )
        for call in self.calls.values():  # open when the response ended: cut, handed on
            out.append(ToolCallDone(call.arguments.call(call.call_id, call.name)))
        self.calls.clear()
        if kind == "response.incomplete":
            reason = text(obj(response.get("incomplete_details")).get("reason"))
            out.append(Completed(_INCOMPLETE.get(reason, "incomplete")))
        elif self.refused:
            out.append(Completed("refused"))
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
