"""HTTP/2 connections of the provider client (RFC 9113): one TLS connection to an origin that
offered `h2`, shared by every request of its event loop, on h2's sans-I/O state machine.

There is no reader task: a request that waits for its response reads the socket itself, under
the connection's read lock, and hands on what belongs to other requests. Each stream's
response data is acknowledged (its flow-control window given back) as its reader takes it, so
a response nobody reads holds at most its window. A response's header list is bounded by
`RESPONSE_HEAD_BYTES` as HTTP/2 sizes it (each field's name and value, plus 32), the
informational (1xx) heads before it by `INFORMATIONAL_HEADS`, and the wait for its head by
the policy's `head_s` in total; server push is refused.

A response closed before its end (abandoned, failed, cancelled) resets its own stream
(RST_STREAM CANCEL): the connection goes on carrying the others. A write is never cut short
by a cancel (a half-written frame would break every stream), and is bounded by the policy's
`connect_s`. A connection the peer broke, closed or sent GOAWAY on takes no new request; a
request the peer did not take up (its stream above the GOAWAY's last one, or a reused
connection that died before the response began) fails as `Unprocessed`, worth one new
connection; a stream the peer refused (REFUSED_STREAM) alike. Every failure, before the head or
while reading the body (a reset stream, a broken or closed connection, a frame h2 refuses, a
timeout), is an `OSError` (h2 refusing a step included), for the client to classify.
"""

from __future__ import annotations

from collections import deque
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

import anyio
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    InformationalResponseReceived,
    ResponseReceived,
    StreamEnded,
    StreamReset,
)
from h2.exceptions import H2Error, ProtocolError
from h2.settings import SettingCodes, Settings

from magi_code.providers.http1 import Head
from magi_code.providers.limits import GOODBYE_S, INFORMATIONAL_HEADS, RESPONSE_HEAD_BYTES
from magi_code.providers.network import explained
from magi_code.providers.origins import Unprocessed
from magi_code.records import field, record

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from anyio.abc import ByteStream

    from magi_code.providers.origins import Origin
    from magi_code.providers.policy import HttpPolicy

__all__ = ["Http2Connection", "Http2Response"]

# Fields that belong to one HTTP/1.1 connection and are never sent over HTTP/2 (RFC 9113
# 8.2.2); Host becomes :authority.
_CONNECTION_FIELDS = frozenset(
    ("connection", "host", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade")
)


@record(frozen=False)
class _Stream:
    """What one request's stream received so far."""

    head: Head | None = None
    informational: int = 0  # 1xx heads before the head
    # data, its flow-controlled length
    chunks: deque[tuple[bytes, int]] = field(default_factory=deque)
    ended: bool = False
    failure: OSError | None = None


class Http2Connection:
    """One HTTP/2 connection to `origin` over `stream` (TLS, `h2` negotiated)."""

    def __init__(self, origin: Origin, stream: ByteStream) -> None:
        self.origin, self.stream = origin, stream
        self.reused = False  # the pool handed it out again
        self.idle_since = anyio.current_time()
        self._h2 = H2Connection(H2Configuration(client_side=True, header_encoding=None))
        limits = {
            SettingCodes.ENABLE_PUSH: 0,
            SettingCodes.MAX_HEADER_LIST_SIZE: RESPONSE_HEAD_BYTES,
        }
        self._h2.local_settings = Settings(client=True, initial_values=limits)
        self._h2.decoder.max_header_list_size = RESPONSE_HEAD_BYTES  # from the first frame on
        self._h2.initiate_connection()
        self._streams: dict[int, _Stream] = {}
        self._read_lock, self._write_lock = anyio.Lock(), anyio.Lock()
        self._broken: OSError | None = None  # why it carries nothing more
        self._last_taken: int | None = None  # a GOAWAY's last stream taken up

    @property
    def usable(self) -> bool:
        """It may carry a new request now."""
        if self._broken is not None or self._last_taken is not None:
            return False
        return len(self._streams) < self._h2.remote_settings.max_concurrent_streams

    @property
    def idle(self) -> bool:
        return not self._streams

    async def request(
        self,
        method: str,
        target: str,
        headers: list[tuple[str, str]],
        body: bytes,
        policy: HttpPolicy,
    ) -> Http2Response:
        """Send one request and wait for its response's head."""
        reused = self.reused
        fields = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", _authority(headers).encode()),
            (b":path", target.encode()),
        ]
        fields += [
            (name.encode(), value.encode())
            for name, value in headers
            if name not in _CONNECTION_FIELDS
        ]
        stream_id = self._h2.get_next_available_stream_id()
        state = self._streams[stream_id] = _Stream()
        try:
            with _as_os_error():
                self._h2.send_headers(stream_id, fields, end_stream=not body)
            await self._flush(policy.connect_s)
            if body:
                await self._send_body(stream_id, body, policy.connect_s)
            await self._until(state, lambda: state.head is not None, policy.head_s)
        except BaseException as exc:
            with suppress(OSError):  # what failed is told, not the reset after it
                await self.finish(stream_id, state, policy.connect_s)
            stale = reused and not isinstance(exc, TimeoutError | Unprocessed)
            if isinstance(exc, OSError) and stale:
                raise Unprocessed("the reused connection took no request") from exc
            raise
        assert state.head is not None
        return Http2Response(self, stream_id, state, state.head, policy)

    async def aclose(self) -> None:
        """Say goodbye (bounded, never cancelled midway) and close the socket."""
        if self._broken is None:
            self._broken = ConnectionAbortedError("the connection was closed")
            self._h2.close_connection()
            with (
                anyio.move_on_after(GOODBYE_S, shield=True),
                suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError),
            ):
                async with self._write_lock:
                    await self.stream.send(self._h2.data_to_send())
        await anyio.aclose_forcefully(self.stream)
        self._fail_streams(lambda _: self._broken)

    # ---- a stream's bytes ------------------------------------------------------------------

    async def next_chunk(self, stream_id: int, state: _Stream, inactivity_s: float) -> bytes | None:
        """The stream's next data (its window given back), or None at its end."""
        await self._until(state, lambda: bool(state.chunks) or state.ended, inactivity_s)
        if not state.chunks:
            return None
        data, length = state.chunks.popleft()
        with _as_os_error():
            self._h2.acknowledge_received_data(length, stream_id)
        await self._flush(inactivity_s)
        return data

    async def finish(self, stream_id: int, state: _Stream, connect_s: float) -> None:
        """The exchange is over: the windows of data never read go back, and the stream is
        reset unless both sides ended it. Failing to say so breaks the connection
        (`OSError`)."""
        self._forget(stream_id)
        if self._broken is not None:
            return
        unread = sum(length for _, length in state.chunks)
        state.chunks.clear()
        stream = self._h2.streams.get(stream_id)
        with _as_os_error():
            if unread:
                self._h2.acknowledge_received_data(unread, stream_id)
            if stream is not None and not stream.closed:  # abandoned, or its body cut short
                self._h2.reset_stream(stream_id, ErrorCodes.CANCEL)
        await self._flush(connect_s)

    # ---- I/O --------------------------------------------------------------------------------

    async def _send_body(self, stream_id: int, body: bytes, connect_s: float) -> None:
        """Send `body` within the peer's flow-control windows, then end the stream."""
        state, view = self._streams[stream_id], memoryview(body)
        while view:
            window = min(
                self._h2.local_flow_control_window(stream_id), self._h2.max_outbound_frame_size
            )
            if window <= 0:
                await self._until(
                    state, lambda: self._window(stream_id) > 0 or state.head is not None, connect_s
                )
                if state.head is not None and self._window(stream_id) <= 0:
                    return  # answered before the whole body was taken (an early error status)
                continue
            with _as_os_error():
                self._h2.send_data(stream_id, bytes(view[:window]), end_stream=len(view) <= window)
            view = view[window:]
            await self._flush(connect_s)

    def _window(self, stream_id: int) -> int:
        return self._h2.local_flow_control_window(stream_id)

    async def _flush(self, within_s: float) -> None:
        """Send whatever h2 has to say, in order, whole or not at all: a cancel waits for
        it (a reset on the way out goes out), within `within_s`."""
        try:
            with anyio.CancelScope(shield=True), anyio.fail_after(within_s):
                async with self._write_lock:
                    data = self._h2.data_to_send()
                    if data:
                        await self.stream.send(data)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            failure = ConnectionResetError(f"sending failed: {type(exc).__name__}")  # timeouts too
            self._break(failure)
            raise failure from None

    async def _until(self, state: _Stream, ready: Callable[[], bool], wait_s: float) -> None:
        """Read the connection until `ready()` holds for this stream, within `wait_s`."""
        with anyio.fail_after(wait_s):
            while not ready():
                if state.failure is not None:
                    raise state.failure
                async with self._read_lock:
                    if ready() or state.failure is not None:
                        continue
                    await self._read_once(wait_s)

    async def _read_once(self, within_s: float) -> None:
        try:
            data = await self.stream.receive()
        except anyio.EndOfStream:
            data = b""
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            failed = ConnectionResetError(f"receiving failed: {type(exc).__name__}")
            self._break(explained(exc) or failed)  # a client certificate refused says so
            return
        if not data:
            self._break(ConnectionResetError("the peer closed the connection"))
            return
        try:
            events = self._h2.receive_data(data)
        except ProtocolError as exc:
            self._break(ConnectionResetError(f"HTTP/2 framing broken: {type(exc).__name__}"))
            await self._flush(within_s)  # h2's GOAWAY, if it can still go
            return
        for event in events:
            self._dispatch(event)
        await self._flush(within_s)  # settings acks, pings, window updates

    def _dispatch(self, event: object) -> None:
        stream_id = getattr(event, "stream_id", None)
        state = self._streams.get(stream_id) if stream_id is not None else None
        if isinstance(event, ResponseReceived) and state is not None:
            try:
                state.head = _head(event.headers or [])
            except ValueError:
                state.failure = ConnectionResetError("the response's :status is not a number")
        elif isinstance(event, InformationalResponseReceived) and state is not None:
            state.informational += 1
            if state.informational > INFORMATIONAL_HEADS:
                state.failure = ConnectionResetError("too many informational (1xx) responses")
        elif isinstance(event, DataReceived):
            length = event.flow_controlled_length or 0
            if state is not None:
                state.chunks.append((event.data or b"", length))
            elif length and stream_id is not None:  # a stream closed here: the window goes back
                self._h2.acknowledge_received_data(length, stream_id)
        elif isinstance(event, StreamEnded) and state is not None:
            state.ended = True
        elif isinstance(event, StreamReset) and state is not None and not state.ended:
            if event.error_code == ErrorCodes.REFUSED_STREAM:
                state.failure = Unprocessed("the peer refused the stream")
            else:
                state.failure = ConnectionResetError("the peer reset the stream")
        elif isinstance(event, ConnectionTerminated):
            self._last_taken = event.last_stream_id or 0
            self._break(ConnectionAbortedError("the peer closed the connection (GOAWAY)"))

    def _break(self, reason: OSError) -> None:
        if self._broken is None:
            self._broken = reason
        last = self._last_taken

        def failure(stream_id: int) -> OSError:
            if last is not None and stream_id > last:
                return Unprocessed("the peer did not take up the request")
            return reason

        self._fail_streams(failure)

    def _fail_streams(self, failure: Callable[[int], OSError | None]) -> None:
        for stream_id, state in self._streams.items():
            if not state.ended and state.failure is None:
                state.failure = failure(stream_id)

    def _forget(self, stream_id: int) -> None:
        if self._streams.pop(stream_id, None) is not None and not self._streams:
            self.idle_since = anyio.current_time()


class Http2Response:
    """A response's head, and its body's bytes as they arrive (`next_chunk`), each wait
    bounded by the inactivity bound; failures are `OSError`s."""

    def __init__(
        self,
        connection: Http2Connection,
        stream_id: int,
        state: _Stream,
        head: Head,
        policy: HttpPolicy,
    ) -> None:
        self.head = head
        self._connection, self._stream_id, self._state = connection, stream_id, state
        self._inactivity_s, self._connect_s = policy.inactivity_s, policy.connect_s

    async def next_chunk(self) -> bytes | None:
        """The body's next data, or None at its end."""
        return await self._connection.next_chunk(self._stream_id, self._state, self._inactivity_s)

    async def aclose(self) -> None:
        """Reset the stream unless it ended; the connection carries on."""
        try:
            await self._connection.finish(self._stream_id, self._state, self._connect_s)
        except OSError:
            await self._connection.aclose()


@contextmanager
def _as_os_error() -> Iterator[None]:
    """h2 refusing a step (the connection or stream closed meanwhile) fails like I/O."""
    try:
        yield
    except H2Error as exc:
        raise ConnectionResetError(f"HTTP/2 refused the step: {type(exc).__name__}") from None


def _authority(headers: list[tuple[str, str]]) -> str:
    return next(value for name, value in headers if name == "host")


def _head(fields: Iterable[tuple[bytes | str, bytes | str]]) -> Head:
    status, headers = 0, []
    for name, value in map(_latin1_pair, fields):
        if name == ":status":
            if not (len(value) == 3 and value.isdigit()):
                raise ValueError("not a status")
            status = int(value)
        elif not name.startswith(":"):
            headers.append((name, value))
    return Head(status, headers)


def _latin1_pair(field: tuple[bytes | str, bytes | str]) -> tuple[str, str]:
    name, value = field  # bytes, since header_encoding is None
    return (
        name.decode("latin-1") if isinstance(name, bytes) else name,
        value.decode("latin-1") if isinstance(value, bytes) else value,
    )
