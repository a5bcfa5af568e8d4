"""Every answer an MCP server gives over HTTP, bounded and contained: the transport under the
SDK's streamable-HTTP client.

Rules:
- We ask for `Accept-Encoding: identity` (http_transport.py); an answer with any other
  Content-Encoding is refused unread, so no compressed body is ever decoded.
- A body is read here, before the SDK sees it, up to MESSAGE_BYTES (a larger Content-Length
  is refused unread); a server-sent event stream is passed on as it arrives, each event
  bounded at MESSAGE_BYTES, counted the way httpx2's parser counts it (`EventMeter`).
- An exchange that fails (the connection, bad framing, an answer over the bound or compressed)
  becomes a 502 carrying a JSON-RPC error of our own (and the failure as its REFUSED
  extension, for startup to say why: failures.py), which the SDK gives to the request it
  answers: it fails that call only, never the session. The failed connection is dropped, so
  the next request opens a new one. An event stream failing midway fails as it is (the SDK
  fails the call, or resumes the stream if it can); an event over the bound fails its call.
- The failure is noted, as a closed word (errors.McpCallFailure), on the `CallReport` of the
  tool call whose request it was: the SDK runs each request in the context of the task that
  sent it, so the report travels with it. A 404 to a request that named our session is noted
  as "session_lost" (the server no longer holds it: the manager opens a new one).
- A JSON-RPC error with a null id in a request's JSON answer (a server that could not parse
  the request) is that request's answer: it gets the request's id.
"""

import contextvars
import json
import re
from collections.abc import AsyncIterator

import httpx2

from magi_code.mcp.errors import McpCallFailure
from magi_code.mcp.limits import MESSAGE_BYTES
from magi_code.records import record

SESSION_HEADER = "mcp-session-id"
REFUSED = "magi_code_refused"  # the extension of our stand-in answer: why the exchange failed
_INTERNAL_ERROR = -32603
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_NULL_ID = re.compile(rb'"id"\s*:\s*null')


@record(frozen=False)
class CallReport:
    """What went wrong with one tool call's HTTP exchanges; the first failure is kept."""

    failure: McpCallFailure | None = None


REPORT: contextvars.ContextVar[CallReport | None] = contextvars.ContextVar(
    "mcp_call_report", default=None
)


def note(failure: McpCallFailure) -> None:
    report = REPORT.get()
    if report is not None and report.failure is None:
        report.failure = failure


class BoundedTransport(httpx2.AsyncBaseTransport):
    """`inner`, with every answer bounded and every failed exchange turned into a 502."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self.inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            return refused(failure_of(exc))
        if response.headers.get("content-encoding", "").strip().lower() not in ("", "identity"):
            await response.aclose()
            return refused("compressed")
        if media_type(response) == "text/event-stream":
            stream = MeteredEvents(response.stream)
            return httpx2.Response(
                response.status_code,
                headers=response.headers,
                stream=stream,
                extensions=response.extensions,
            )
        try:
            body = await read_bounded(response)
        except httpx2.TransportError as exc:
            return refused(failure_of(exc))
        finally:
            await response.aclose()  # a body left unread closes its connection
        if body is None:
            return refused("too_large")
        if response.status_code == 404 and SESSION_HEADER in request.headers:
            note("session_lost")
        if response.status_code < 300 and _NULL_ID.search(body):
            body = with_request_id(body, request)
        headers = [  # as they came: a value need not be ASCII
            (key, value)
            for key, value in response.headers.raw
            if key.lower() not in (b"content-length", b"transfer-encoding")
        ]
        return httpx2.Response(
            response.status_code, headers=headers, content=body, extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def failure_of(exc: httpx2.TransportError) -> McpCallFailure:
    return "malformed" if isinstance(exc, httpx2.ProtocolError) else "unreachable"


def refused(failure: McpCallFailure) -> httpx2.Response:
    """Our stand-in for an answer that failed: the SDK fails the request it answers with it."""
    note(failure)
    error = {"code": _INTERNAL_ERROR, "message": f"answer refused: {failure}"}
    answer = {"jsonrpc": "2.0", "id": None, "error": error}
    return httpx2.Response(502, json=answer, extensions={REFUSED: failure})


def media_type(response: httpx2.Response) -> str:
    return response.headers.get("content-type", "").partition(";")[0].strip().lower()


async def read_bounded(response: httpx2.Response) -> bytes | None:
    """The body; None past MESSAGE_BYTES (at once when its Content-Length says so)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MESSAGE_BYTES:
        return None
    stream = response.stream
    assert isinstance(stream, httpx2.AsyncByteStream)  # a transport's answer streams
    chunks, size = [], 0
    async for chunk in stream:
        size += len(chunk)
        if size > MESSAGE_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def with_request_id(body: bytes, request: httpx2.Request) -> bytes:
    """`body` unchanged, unless it is a JSON-RPC error with a null id answering a request:
    then the same error, with that request's id."""
    try:
        answer, sent = json.loads(body), json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return body
    if not (isinstance(answer, dict) and isinstance(sent, dict)):
        return body
    if "error" not in answer or answer.get("id", 0) is not None or sent.get("id") is None:
        return body
    return json.dumps({**answer, "id": sent["id"]}).encode()


class MeteredEvents(httpx2.AsyncByteStream):
    """A server-sent event stream passed on as it arrives, refused at an event over
    MESSAGE_BYTES; a failure midway is noted for the call before it goes up."""

    def __init__(self, inner: httpx2.SyncByteStream | httpx2.AsyncByteStream) -> None:
        assert isinstance(inner, httpx2.AsyncByteStream)
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        meter = EventMeter()
        try:
            async for chunk in self.inner:
                if meter.feed(chunk) > MESSAGE_BYTES:
                    note("too_large")
                    raise httpx2.SSEError("a server-sent event over the bound")
                yield chunk
        except httpx2.SSEError:
            raise
        except httpx2.TransportError as exc:
            note(failure_of(exc))
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()


class EventMeter:
    """The size of the server-sent event being received, as httpx2's parser counts it: the
    bytes of its lines, line breaks and whole comment lines left out, an unfinished line in."""

    def __init__(self) -> None:
        self.event = 0  # the event's finished field lines
        self.line = 0  # the unfinished line
        self.comment = False  # the unfinished line is a comment
        self.after_cr = False  # the last chunk ended in CR: a LF opening the next ends nothing

    def feed(self, chunk: bytes) -> int:
        """The largest size an event reached while `chunk` came in."""
        if self.after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self.after_cr = chunk.endswith(b"\r")
        *finished, rest = _LINE_BREAK.split(chunk)
        largest = 0
        for part in finished:
            self._extend(part)
            if not self.line:
                self.event = 0  # a blank line ends the event
            elif not self.comment:
                self.event += self.line
                largest = max(largest, self.event)
            self.line, self.comment = 0, False
        self._extend(rest)
        return max(largest, self.event + self.line)

    def _extend(self, part: bytes) -> None:
        if self.line == 0 and part:
            self.comment = part.startswith(b":")
        self.line += len(part)
