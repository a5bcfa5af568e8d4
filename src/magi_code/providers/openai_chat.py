"""OpenAI Chat Completions streaming, for OpenAI and any compatible server reached through
`base_url` (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter).

Owns the request body and the chunk-to-event mapping; never touches sockets itself (`requests`)
and never emits reasoning: chat "reasoning" fields carry no provenance as summaries. Images go
as `image_url` parts of a user message: a prompt's in its own message, a tool result's in a user
message after the run of tool messages it belongs to (a tool message carries text only), each
named by its call; to a model that takes none, as their descriptions. A call's
arguments are bounded as they accumulate (tool_arguments.py); a response whose arguments pass
the run's content budget ends there, its calls handed on dropped. Every `finish_reason`
maps to a `Completed` stop: `length` (its calls then cut) and `content_filter` say so whatever
calls came; a refusal (`delta.refusal`) is shown as text and stops as `refused`.
"""

from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing

from magi_code.providers.base import (
    AssistantText,
    Completed,
    ImagePart,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    TextDelta,
    ToolCall,
    ToolCallDone,
    ToolResult,
    Usage,
    UserText,
    coalesced,
    data_url,
    described,
)
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.registry import keyed_build
from magi_code.providers.requests import stream_sse
from magi_code.providers.tool_arguments import Arguments, Budget
from magi_code.providers.wire import StopReason, count, event_json, obj, stream_error, text
from magi_code.records import field, record

_STOP: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filtered",
}


def request_body(request: ModelRequest) -> dict[str, object]:
    messages: list[dict[str, object]] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    shown: list[dict[str, object]] = []  # the images of the tool messages just added

    for item in request.items:
        if shown and not isinstance(item, ToolResult):
            messages.append({"role": "user", "content": shown})
            shown = []
        if isinstance(item, UserText):
            messages.append({"role": "user", "content": _content(item.text, item.images, request)})
        elif isinstance(item, AssistantText):
            messages.append({"role": "assistant", "content": item.text})
        elif isinstance(item, ToolCall):
            call = {
                "id": item.call_id,
                "type": "function",
                "function": {"name": item.name, "arguments": item.arguments},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                calls = last.setdefault("tool_calls", [])
                assert isinstance(calls, list)
                calls.append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif isinstance(item, ToolResult):
            output = item.output
            if item.images and request.images:
                said = f"The image(s) from tool call {item.call_id}:"
                shown += _parts(said, item.images)
            else:
                output = "\n".join([output, *map(described, item.images)])
            messages.append({"role": "tool", "tool_call_id": item.call_id, "content": output})
    if shown:
        messages.append({"role": "user", "content": shown})
    body: dict[str, object] = {
        "model": request.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
    if request.max_output_tokens is not None:
        body["max_tokens"] = request.max_output_tokens
    if request.thinking is not None:
        body["reasoning_effort"] = request.thinking
    return body


def _content(
    text: str, images: tuple[ImagePart, ...], request: ModelRequest
) -> str | list[dict[str, object]]:
    """A user message's content: its text alone, or text and image parts."""
    if not images:
        return text
    if not request.images:
        return "\n".join([text, *map(described, images)])
    return _parts(text, images)


def _parts(text: str, images: tuple[ImagePart, ...]) -> list[dict[str, object]]:
    parts: list[dict[str, object]] = [{"type": "text", "text": text}] if text else []
    for image in images:
        parts.append({"type": "image_url", "image_url": {"url": data_url(image)}})
    return parts


@record(frozen=False)
class _Call:
    arguments: Arguments
    call_id: str = ""
    name: str = ""


@record(frozen=False)
class ChatStreamState:
    """Chunks in, events out: assembles tool calls split across chunks."""

    calls: dict[int, _Call] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)
    finish: str | None = None
    usage: Usage | None = None
    refused: bool = False  # the model sent a refusal (`delta.refusal`)
    done: bool = False

    def chunk(self, data: str) -> list[ProviderEvent]:
        if data == "[DONE]":
            self.done = True
            return []
        value = event_json(data)
        if "error" in value:
            raise stream_error(obj(value["error"]))
        if isinstance(value.get("usage"), dict):
            u = obj(value["usage"])
            cached = count(obj(u.get("prompt_tokens_details")).get("cached_tokens"))
            self.usage = Usage(
                count(u.get("prompt_tokens")), count(u.get("completion_tokens")), cached
            )
        out: list[ProviderEvent] = []
        choices = value.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            choice = obj(choice)
            delta = obj(choice.get("delta"))
            content = text(delta.get("content"))
            if content:
                out.append(TextDelta(content))
            refusal = text(delta.get("refusal"))
            if refusal:  # the model's refusal is its answer: shown, and the stop says so
                self.refused = True
                out.append(TextDelta(refusal))
            calls = delta.get("tool_calls")
            for raw in calls if isinstance(calls, list) else []:
                self._call_delta(obj(raw))
            if isinstance(choice.get("finish_reason"), str):
                self.finish = text(choice.get("finish_reason"))
        if self.budget.spent:  # the run cannot keep these calls: the response ends here
            for call in self.calls.values():
                call.arguments.drop()
            self.done = True
        return out

    def _call_delta(self, raw: dict[str, object]) -> None:
        call_id = text(raw.get("id"))
        index = raw.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = self._unpositioned(call_id)
        call = self.calls.get(index)
        if call is None:
            call = self.calls[index] = _Call(Arguments(self.budget))
        call.call_id = call.call_id or call_id
        fn = obj(raw.get("function"))
        call.name = call.name or text(fn.get("name"))
        call.arguments.add(text(fn.get("arguments")))

    def _unpositioned(self, call_id: str) -> int:
        """Some compatible servers omit the index: a new id opens a call, none continues one."""
        for index, call in self.calls.items():
            if call_id and call.call_id == call_id:
                return index
        if call_id or not self.calls:
            return len(self.calls)
        return max(self.calls)

    def finish_events(self) -> list[ProviderEvent]:
        if not self.done and self.finish is None:
            raise ProviderError("malformed_stream", retryable=True, detail="stream cut short")
        out: list[ProviderEvent] = []
        for index in sorted(self.calls):
            c = self.calls[index]
            out.append(ToolCallDone(c.arguments.call(c.call_id or f"call_{index}", c.name)))
        if self.usage is not None:
            out.append(self.usage)
        out.append(Completed(self._stop()))
        return out

    def _stop(self) -> StopReason:
        """A cut or filtered answer says so whatever calls it made; else calls wait for
        their results."""
        stop = _STOP.get(self.finish or "stop", "other")
        if stop in ("max_tokens", "content_filtered"):
            return stop
        if self.refused:
            return "refused"
        return "tool_use" if self.calls else stop


@record(frozen=False)
class OpenAIChatProvider:
    id: str
    base_url: str
    api_key: str | None = field(repr=False)
    policy: HttpPolicy = field(default_factory=HttpPolicy)
    extra_headers: Mapping[str, str] = field(default_factory=dict)

    def headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream", **self.extra_headers}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        state = ChatStreamState()
        url = self.base_url.rstrip("/") + "/chat/completions"
        body = request_body(request)
        events = stream_sse(url, self.headers(), body, self.policy, until=lambda: state.done)
        async with aclosing(events):  # closing this stream closes the request now
            async for batch in events:
                out: list[ProviderEvent] = []
                for sse in batch:
                    out += state.chunk(sse.data)
                    if state.done:
                        break
                for event in coalesced(out):
                    yield event
        for event in state.finish_events():
            yield event


# The registry's row for `openai-chat` (providers/registry.py).
build = keyed_build(OpenAIChatProvider, "openai-chat")
