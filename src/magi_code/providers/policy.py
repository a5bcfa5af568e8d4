"""The bounds of one provider request, at the bottom of the HTTP stack: every layer above
(requests.py, client.py, pool.py, http1.py, http2.py) takes an `HttpPolicy` and none of them is
imported here. Tests inject short bounds. Pure: no I/O.
"""

from collections.abc import Awaitable, Callable
from random import random

import anyio

from magi_code.limits import ERROR_BODY_BYTES, ERROR_BODY_DEADLINE_S, STREAM_INACTIVITY_S
from magi_code.providers.limits import (
    CONNECT_TIMEOUT_S,
    KEEPALIVE_S,
    REQUEST_DEADLINE_S,
    RESPONSE_HEAD_S,
    RETRY_ATTEMPTS,
    RETRY_BASE_DELAY_S,
    RETRY_MAX_DELAY_S,
)
from magi_code.records import field, record

_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
    "context window",
    "too many tokens",
    "input is too long",
)


def default_is_overflow(body: str) -> bool:
    low = body.lower()
    return any(marker in low for marker in _OVERFLOW_MARKERS)


def _uniform() -> float:
    return random()


@record
class HttpPolicy:
    """Every bound of one provider connection; tests inject short ones."""

    inactivity_s: float = STREAM_INACTIVITY_S
    body_deadline_s: float = ERROR_BODY_DEADLINE_S
    body_bytes: int = ERROR_BODY_BYTES
    attempts: int = RETRY_ATTEMPTS
    base_delay_s: float = RETRY_BASE_DELAY_S
    max_delay_s: float = RETRY_MAX_DELAY_S
    connect_s: float = CONNECT_TIMEOUT_S
    head_s: float = RESPONSE_HEAD_S
    request_s: float = REQUEST_DEADLINE_S
    keepalive_s: float = KEEPALIVE_S
    sleep: Callable[[float], Awaitable[None]] = field(default=anyio.sleep)
    jitter: Callable[[], float] = field(default=_uniform)  # in [0, 1): a backoff's share
    is_overflow: Callable[[str], bool] = field(default=default_is_overflow)
