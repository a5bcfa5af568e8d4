"""Helpers the wire-API modules share: JSON of one event, usage numbers, overflow in-stream.

Never raises anything but `ProviderError`, whose text carries no body.
"""

from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Protocol

from magi_code import untrusted_json
from magi_code.providers.base import ProviderError, ProviderEvent, coalesced
from magi_code.providers.base import StopReason as StopReason  # the wires' one import
from magi_code.providers.policy import HttpPolicy, default_is_overflow
from magi_code.providers.requests import stream_sse


def event_json(data: str) -> dict[str, object]:
    """The JSON object of one event's data; anything else (nesting past UNTRUSTED_JSON_DEPTH
    too) is a malformed stream."""
    try:
        value = untrusted_json.loads(data)
    except ValueError:
        raise ProviderError("malformed_stream", detail="event data is not JSON") from None
    if not isinstance(value, dict):
        raise ProviderError("malformed_stream", detail="event data is not an object")
    return value


def obj(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def text(value: object) -> str:
    return value if isinstance(value, str) else ""


def count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def stream_error(error: Mapping[str, object]) -> ProviderError:
    """An error the provider reported inside a successful stream."""
    marker = f"{text(error.get('code'))} {text(error.get('type'))} {text(error.get('message'))}"
    if default_is_overflow(marker):
        return ProviderError("context_overflow", detail="provider reported context overflow")
    return ProviderError("server_error", retryable=True, detail="provider reported a stream error")


class FinishingState(Protocol):
    """A wire's stream state machine that knows when the provider said it was done."""

    finished: bool

    def event(self, data: str) -> list[ProviderEvent]: ...


async def stream_until_finished(
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, object],
    policy: HttpPolicy,
    state: FinishingState,
) -> AsyncGenerator[ProviderEvent]:
    """Feed every event to `state` until it is finished; a stream that ends before that was
    cut short (retryable: the transport retry policy decides). The terminal events are handed
    on once the rest of the body was read, so that its connection is reused."""
    events = stream_sse(url, headers, body, policy, until=lambda: state.finished)
    final: list[ProviderEvent] = []
    async with aclosing(events):
        async for batch in events:
            out: list[ProviderEvent] = []
            for sse in batch:
                produced = state.event(sse.data)
                if state.finished:
                    final = produced
                    break
                out += produced
            for event in coalesced(out):
                yield event
    if not state.finished:
        raise ProviderError("malformed_stream", retryable=True, detail="stream cut short")
    for event in final:
        yield event
