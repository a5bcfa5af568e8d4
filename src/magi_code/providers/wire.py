"""Helpers the wire-API modules share: JSON of one event, usage numbers, overflow in-stream.

Never raises anything but `ProviderError`, whose text carries no body.
"""

import json
from collections.abc import Mapping
from typing import Literal

from magi_code.providers.base import ProviderError
from magi_code.providers.http import default_is_overflow

StopReason = Literal["end_turn", "tool_use", "max_tokens", "other"]


def event_json(data: str) -> dict[str, object]:
    """The JSON object of one event's data; anything else is a malformed stream."""
    try:
        value = json.loads(data)
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
