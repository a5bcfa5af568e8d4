"""HTTP to providers: a byte pipe into the SSE decoder, bounded error and control bodies,
bounded transport retries, an inactivity timeout, and cancellation that closes the request.

It owns the mapping from HTTP outcomes to `ProviderError` codes:

    401, 403                 -> auth_failed       (never retried)
    3xx (never followed)     -> refused
    429                      -> rate_limited      (retried with backoff / Retry-After)
    5xx                      -> server_error      (retried)
    connect/read failure,
    inactivity timeout,
    a stream with no event   -> transport_failed  (retried)
    a proxy or certificate
    the user must fix        -> transport_failed  (not retried; a sentence names the setting)
    bad UTF-8, oversize event-> malformed_stream  (retried)
    2xx not an event stream  -> malformed_stream  (not retried: the base URL is wrong)
    4xx with a complete body
    naming context overflow  -> context_overflow
    other 4xx                -> refused

A retry happens only before the first event was handed on: after that a retry would repeat
output, so the error goes up with `retryable` set. A failed status is retried after the delay
its answer asks for (`retry-after-ms`, else `retry-after` in seconds or as an HTTP date), else
after a full-jitter backoff (a random share of the doubling delay, capped); `x-should-retry:
true|false` overrides whether its status is worth a retry. A delay asked for past the cap
(`max_delay_s`) is not waited for: the error goes up at once, saying how long the provider
asked to wait. No attempt starts, none waits for its head, and no retry waits for its first
event, past the policy's `request_s` after the first attempt began. It must never log or raise
a response body, a credential, or a URL's query or user info. Requests go through `client`
(pooled connections per origin), imported only when the first request is made.
"""

from __future__ import annotations

import email.utils
import logging
import math
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import anyio

from magi_code.providers.base import ProviderError, ProviderErrorCode
from magi_code.providers.error_body import provider_message
from magi_code.providers.limits import (
    STREAM_DRAIN_BYTES,
    STREAM_DRAIN_S,
)
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.sse import SSEDecoder, SSEError, SSEEvent
from magi_code.records import record, replace

if TYPE_CHECKING:
    from magi_code.providers.client import Response, TransportError

# What a 2xx answer that is no event stream says it is (its Content-Type's class), told to the
# user in a fixed sentence: a wrong base URL most often (an API's index, a login page).
_NOT_A_STREAM = {
    "json": "The provider answered with JSON, not an event stream: check the base URL.",
    "html": "The provider answered with HTML, not an event stream: check the base URL.",
    "other": "The provider answered, but not with an event stream: check the base URL.",
}
_NO_EVENT = "The provider's answer ended before its first event."


@record
class BoundedBody:
    """At most `body_bytes` of a body's decoded text; `complete` if nothing was cut or lost."""

    text: str
    complete: bool


@record
class ControlResponse:
    status: int
    body: BoundedBody


def safe_url(url: str) -> str:
    """The URL for diagnostics: no user info, no query, no fragment."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(unparsable URL)"
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


async def read_bounded(response: Response, limit: int) -> BoundedBody:
    """Read at most `limit` bytes of the body; the caller puts it under a deadline."""
    from magi_code.providers.client import TransportError

    buf = bytearray()
    complete = True
    try:
        async for chunk in response:
            buf += chunk
            if len(buf) > limit:
                complete = False
                break
    except TransportError:
        complete = False
    return BoundedBody(bytes(buf[:limit]).decode("utf-8", "replace"), complete)


async def _read_error_body(response: Response, policy: HttpPolicy) -> BoundedBody:
    with anyio.move_on_after(policy.body_deadline_s):
        return await read_bounded(response, policy.body_bytes)
    return BoundedBody("", False)


def status_error(
    status: int, body: BoundedBody, policy: HttpPolicy, retry_after: float | None = None
) -> ProviderError:
    """The code for a failed status. A lost body never changes the status's class. What the
    body's JSON says (`said`: error_body.provider_message, for a person's face) and the wait
    the answer asked for go with it."""
    code: ProviderErrorCode
    if status in (401, 403):
        code, retryable = "auth_failed", False
    elif status == 429:
        code, retryable = "rate_limited", True
    elif status >= 500:
        code, retryable = "server_error", True
    elif status >= 400 and body.complete and policy.is_overflow(body.text):
        code, retryable = "context_overflow", False
    else:
        code, retryable = "refused", False

    said = provider_message(body.text)
    return ProviderError(
        code, status=status, retryable=retryable, said=said, retry_after_s=retry_after
    )


def retry_after_s(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The delay an answer asks for, in seconds: `retry-after-ms`, else `retry-after` (seconds,
    or an HTTP date); None if it asks for none (or for one that is no finite number)."""
    milliseconds = _number(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds

    try:
        when = email.utils.parsedate_to_datetime(value)
        delay = when.timestamp() - (time.time() if now is None else now)
    except (TypeError, ValueError, OverflowError):
        return None
    return max(0.0, delay) if math.isfinite(delay) else None


def _number(value: str | None) -> float | None:
    """A header's non-negative finite number (a negative one is 0); None for anything else."""
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return max(0.0, number) if math.isfinite(number) else None


def should_retry(headers: Mapping[str, str]) -> bool | None:
    """What `x-should-retry` says of retrying this answer: True, False, or None (nothing)."""
    said = headers.get("x-should-retry", "").strip().lower()
    return True if said == "true" else False if said == "false" else None


def backoff_s(attempt: int, policy: HttpPolicy, retry_after: float | None) -> float:
    """The wait before attempt `attempt + 1`: what the answer asked for, else full jitter (a
    random share of the delay that doubles from `base_delay_s`); never past `max_delay_s`."""
    if retry_after is not None:
        return min(retry_after, policy.max_delay_s)
    doubled = policy.base_delay_s * 2.0 ** (attempt - 1)
    return policy.jitter() * min(doubled, policy.max_delay_s)


def asked_to_wait(error: ProviderError, delay_s: float, policy: HttpPolicy) -> ProviderError:
    """`error` as it goes up at once when its answer asked for a wait past the cap: not
    retried, its sentence saying how long the provider asked to wait."""
    asked, cap = _duration(delay_s), _duration(policy.max_delay_s)
    summary = (
        f"The provider asked to wait {asked} before the next request, longer than magi-code "
        f"waits ({cap}): try again then."
    )
    return replace(error, retryable=False, summary=summary)


def _duration(seconds: float) -> str:
    """`seconds` rounded up, in seconds, minutes or hours."""
    whole = math.ceil(seconds)
    if whole < 120:
        return f"{whole} s"
    if whole < 120 * 60:
        return f"{math.ceil(whole / 60)} min"
    return f"{math.ceil(whole / 3600)} h"


class _Failed(Exception):
    def __init__(
        self,
        error: ProviderError,
        retry_after: float | None = None,
        should_retry: bool | None = None,  # what the answer said of a retry, if anything
    ) -> None:
        super().__init__(error.code)
        self.error = error
        self.retry_after = retry_after
        self.should_retry = should_retry


async def stream_sse(
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, object],
    policy: HttpPolicy,
    until: Callable[[], bool] = lambda: False,
) -> AsyncGenerator[list[SSEEvent]]:
    """POST `body` and yield the response's server-sent events, with bounded retries: the
    events each read of the body completed, in order, as one non-empty batch.

    Once `until()` holds after a batch was taken, the rest of the body is read and dropped
    (bounded), so that the connection goes back to the pool, and the stream ends; the taker
    ignores what its batch holds after the event that ended it."""
    from magi_code.providers.client import InvalidURL, TransportError, open_response

    attempt = 0
    deadline = anyio.current_time() + policy.request_s
    while True:
        attempt += 1
        delivered = False
        within_s = max(deadline - anyio.current_time(), 0.0)
        try:
            async with open_response(
                "POST", url, policy, headers, json=body, within_s=within_s
            ) as response:
                if not 200 <= response.status < 300:
                    raise await _failed_status(response, policy)
                not_a_stream = _not_an_event_stream(response.status, response.headers)
                if not_a_stream is not None:
                    raise _Failed(not_a_stream)
                decoder = SSEDecoder()
                # A retry hands on its first event by the deadline; the first attempt's body has
                # the inactivity bound alone (a slow model may keep its stream alive long).
                bound = None if attempt == 1 else deadline
                while (chunk := await _next_chunk(response, bound)) is not None:
                    batch = decoder.feed(chunk)
                    if batch:
                        delivered, bound = True, None
                        yield batch
                        if until():
                            await _drain(response)
                            return
                batch = decoder.end(framed=response.framed)
                if batch:
                    delivered = True
                    yield batch
                if delivered:
                    return
                # No event at all is never a generation: the body was cut before its
                # first event (or held comments only), which a retry may well get whole.
                error = ProviderError("transport_failed", retryable=True, summary=_NO_EVENT)
                retry_after = None
        except _Failed as failed:
            error, retry_after = failed.error, failed.retry_after
            if failed.should_retry is not None and failed.should_retry != error.retryable:
                error = replace(error, retryable=failed.should_retry)
        except SSEError:
            error, retry_after = ProviderError("malformed_stream", retryable=True), None
        except TransportError as exc:
            error, retry_after = _unreached(exc), None
        except InvalidURL:
            error, retry_after = ProviderError("refused", detail="invalid URL"), None
        if error.retryable and retry_after is not None and retry_after > policy.max_delay_s:
            error = asked_to_wait(error, retry_after, policy)
        _diagnose(url, error, attempt)
        if delivered or not error.retryable or attempt >= policy.attempts:
            raise error
        delay = backoff_s(attempt, policy, retry_after)
        if anyio.current_time() + delay >= deadline:
            raise error  # the next attempt would start past the request's deadline
        await policy.sleep(delay)


async def _next_chunk(response: Response, deadline: float | None) -> bytes | None:
    """The body's next bytes, None at its end; a `TransportError` if `deadline` passes first."""
    from magi_code.providers.client import TransportError

    if deadline is None:
        return await anext(response, None)
    with anyio.move_on_after(deadline - anyio.current_time()):
        return await anext(response, None)
    raise TransportError("the request's deadline passed")


def _not_an_event_stream(status: int, headers: Mapping[str, str]) -> ProviderError | None:
    """The failure of a 2xx answer whose Content-Type names anything but an event stream;
    None for an event stream, or an answer that names no type (read as one)."""
    media = headers.get("content-type", "").partition(";")[0].strip(" \t").lower()
    if not media or media == "text/event-stream":
        return None
    if media == "application/json" or media.endswith("+json"):
        kind = "json"
    elif media in ("text/html", "application/xhtml+xml"):
        kind = "html"
    else:
        kind = "other"
    return ProviderError("malformed_stream", status=status, summary=_NOT_A_STREAM[kind])


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows the terminal event to the body's end, within bounds: a response read
    to its end leaves its connection to the pool; one left unread would close it."""
    from magi_code.providers.client import TransportError

    left = STREAM_DRAIN_BYTES
    with anyio.move_on_after(STREAM_DRAIN_S):
        try:
            async for chunk in chunks:
                left -= len(chunk)
                if left < 0:
                    return
        except TransportError:
            return  # the answer is complete: a broken tail only costs the connection


async def _failed_status(response: Response, policy: HttpPolicy) -> _Failed:
    body = await _read_error_body(response, policy)
    retry_after = retry_after_s(response.headers)
    error = status_error(response.status, body, policy, retry_after)
    return _Failed(error, retry_after, should_retry(response.headers))


async def control_request(
    method: str,
    url: str,
    policy: HttpPolicy,
    *,
    headers: Mapping[str, str] | None = None,
    form: Mapping[str, str] | None = None,
    json: Mapping[str, object] | None = None,
    body_bytes: int | None = None,
) -> ControlResponse:
    """One request whose headers and body together are bounded by the absolute body deadline
    (OAuth and discovery). Raises `ProviderError("transport_failed")` if no status arrived."""
    from magi_code.providers.client import InvalidURL, TransportError, open_response

    limit = policy.body_bytes if body_bytes is None else body_bytes
    status: int | None = None
    body = BoundedBody("", False)
    error = ProviderError("transport_failed", retryable=True)
    try:
        with anyio.move_on_after(policy.body_deadline_s):
            async with open_response(
                method, url, policy, headers or {}, form=form, json=json
            ) as response:
                status = response.status
                body = await read_bounded(response, limit)
    except TransportError as exc:
        error = _unreached(exc)
    except InvalidURL:
        pass
    if status is None:
        _diagnose(url, error, 1)
        raise error
    return ControlResponse(status, body)


def _unreached(failure: TransportError) -> ProviderError:
    """transport_failed, with the sentence of a failure the user must fix (a proxy's, a
    certificate's), which is not retried."""
    return ProviderError("transport_failed", retryable=failure.retryable, summary=failure.summary)


def _diagnose(url: str, error: ProviderError, attempt: int) -> None:
    log = logging.getLogger("magi_code.providers")
    log.warning("provider request to %s failed: %s (attempt %d)", safe_url(url), error, attempt)
