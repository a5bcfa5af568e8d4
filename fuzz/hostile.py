"""The hostile-server fuzz targets: what a server or a client on the other end sends us, run
through the code that reads it, as it reads it.

    http1    providers/http1.py    ResponseReader: a Head, body bytes, END, or ProtocolError;
                                   the body, the end and `reusable` whatever the split
    http2    providers/http2.py    Http2Connection over a scripted socket: a response's head and
                                   body, or an OSError (the client's TransportError), never
                                   anything else, within the time it is given
    mcp      mcp/http_answers.py   BoundedTransport over a scripted answer (head and body): the
                                   body as it came, or our 502 with a JSON-RPC error; never
                                   a compressed body; an event stream metered split-invariantly
    acp      acp/lines.py          judge: a line handed on is a JSON-RPC object the SDK can
                                   route; an answer is one JSON-RPC error line
"""

import json
from collections.abc import Callable

import anyio
import h2.config
import h2.connection
import h2.events
import httpx2
from anyio.abc import ByteStream

from fuzz.harness import Target, split
from magi_code.acp import lines
from magi_code.mcp import http_answers
from magi_code.mcp.limits import MESSAGE_BYTES
from magi_code.providers import http1
from magi_code.providers.http2 import Http2Connection
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.pool import Origin

# ---- http1 ---------------------------------------------------------------------------------


def _read(chunks: list[bytes], method: str) -> tuple[list[object], str | None, bool]:
    """(the reader's events, its error, `reusable` once every chunk came), fed chunk by chunk,
    then the end (the peer closed)."""
    reader = http1.ResponseReader(method)
    events: list[object] = []
    for number, chunk in enumerate([*chunks, b""]):
        reader.receive(chunk)
        while True:
            try:
                event = reader.next_event()
            except http1.ProtocolError as error:
                return events, str(error), False
            if event is http1.NEED_DATA:
                break
            events.append(event)
            if event is http1.END:
                for later in chunks[number + 1 :]:
                    reader.receive(later)
                return events, None, reader.reusable
    return events, "no end", False


def _outcome(events: list[object]) -> tuple[object, bytes, bool]:
    heads = [(event.status, event.headers) for event in events if isinstance(event, http1.Head)]
    body = b"".join(event for event in events if isinstance(event, bytes))
    return heads, body, http1.END in events


def fuzz_http1(data: bytes) -> None:
    body, chunks = split(data)
    method = "HEAD" if body[:1] == b"H" else "POST"
    events, error, reusable = _read(chunks, method)
    whole_events, whole_error, whole_reusable = _read([body], method)
    for event in events:
        assert isinstance(event, http1.Head | bytes) or event is http1.END
    assert len([event for event in events if isinstance(event, http1.Head)]) <= 1
    if error is None and whole_error is None:
        assert _outcome(events) == _outcome(whole_events), "the split changed the response"
        assert reusable == whole_reusable, "the split changed whether it may be reused"


# ---- http2 ---------------------------------------------------------------------------------

HTTP2_POLICY = HttpPolicy(inactivity_s=0.05, head_s=0.05, connect_s=0.05)


class _Scripted(ByteStream):
    """A socket whose peer says `chunks`, then closes; what we send is dropped."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = list(chunks)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.lowlevel.checkpoint()
        if not self._chunks:
            raise anyio.EndOfStream
        return self._chunks.pop(0)

    async def send(self, item: bytes) -> None:
        await anyio.lowlevel.checkpoint()

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def _exchange(chunks: list[bytes]) -> None:
    connection = Http2Connection(Origin("https", "fuzz.invalid", 443), _Scripted(chunks))
    try:
        response = await connection.request(
            "POST", "/v1/x", [("host", "fuzz")], b"{}", HTTP2_POLICY
        )
        assert 100 <= response.head.status <= 999
        try:
            while await response.next_chunk() is not None:
                pass
        finally:
            await response.aclose()
    except OSError:  # TimeoutError and Unprocessed included: the client's TransportError
        pass
    finally:
        await connection.aclose()


def fuzz_http2(data: bytes) -> None:
    _, chunks = split(data)
    anyio.run(_exchange, chunks)


def _server_says(respond: Callable[[h2.connection.H2Connection], None]) -> bytes:
    """What a well-behaved h2 server writes for one request on stream 1, `respond` shaping it."""
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    client.send_headers(
        1,
        [(":method", "POST"), (":scheme", "https"), (":authority", "f"), (":path", "/")],
        end_stream=True,
    )
    server = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
    )
    server.initiate_connection()
    server.receive_data(client.data_to_send())
    respond(server)
    return server.data_to_send()


def _ok(server: h2.connection.H2Connection) -> None:
    server.send_headers(1, [(":status", "200"), ("content-type", "text/event-stream")])
    server.send_data(1, b"data: {}\n\n")
    server.send_data(1, b"data: [DONE]\n\n", end_stream=True)


def _continue_then_reset(server: h2.connection.H2Connection) -> None:
    server.send_headers(1, [(":status", "100")])
    server.send_headers(1, [(":status", "200")])
    server.send_data(1, b"data: x\n\n")
    server.reset_stream(1)


def _goaway(server: h2.connection.H2Connection) -> None:
    server.send_headers(1, [(":status", "503")], end_stream=True)
    server.close_connection(last_stream_id=1)


# ---- mcp over HTTP -------------------------------------------------------------------------


class _Answer(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        for chunk in self.chunks:
            yield chunk


class _Scripted2(httpx2.AsyncBaseTransport):
    """A server whose answer is `head` (status line digits, then header lines) and `chunks`."""

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], chunks: list[bytes]):
        self.status, self.headers, self.chunks = status, headers, chunks

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(self.status, headers=self.headers, stream=_Answer(self.chunks))


def _mcp_answer(data: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """(status, headers, body) from an input: `NNN` status digits, header lines, a blank line."""
    head, _, body = data.partition(b"\n\n")
    first, *lines = head.split(b"\n")
    status = int(first[:3]) if first[:3].isdigit() and int(first[:3]) >= 100 else 200
    headers = []
    for line in lines:
        name, sep, value = line.partition(b":")
        if sep and name.strip() and all(33 <= c < 127 for c in name.strip()):
            headers.append((name.strip(), value.strip().translate(None, b"\r\n\x00")))
    return status, headers, body


async def _through(status: int, headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> None:
    transport = http_answers.BoundedTransport(_Scripted2(status, headers, chunks))
    request = httpx2.Request(
        "POST", "http://mcp.invalid/mcp", json={"jsonrpc": "2.0", "id": 7, "method": "x"}
    )
    response = await transport.handle_async_request(request)
    encoding = response.headers.get("content-encoding", "").strip().lower()
    try:
        body = await response.aread()
    except httpx2.SSEError:
        assert http_answers.media_type(response) == "text/event-stream"
        return
    if response.status_code == 502 and b"answer refused" in body:
        error = json.loads(body)["error"]
        assert error["code"] == -32603
        return
    assert encoding in ("", "identity"), "a compressed answer was passed on"
    assert len(body) <= MESSAGE_BYTES


def fuzz_mcp(data: bytes) -> None:
    _, chunks = split(data)
    status, headers, body = _mcp_answer(b"".join(chunks))
    _, pieces = split(data[:1] + body)
    anyio.run(_through, status, headers, pieces)
    whole, parts = http_answers.EventMeter(), http_answers.EventMeter()
    largest = whole.feed(body)
    # However the events are cut, none is counted smaller than it is (a line still coming may
    # count before it is known to be a comment, as httpx2's parser counts it).
    metered = max((parts.feed(piece) for piece in pieces), default=0)
    assert metered >= largest, "an event was counted smaller than it is"


# ---- acp -----------------------------------------------------------------------------------


def fuzz_acp(data: bytes) -> None:
    judged = lines.judge(data)
    if judged.answer is not None:
        answer = json.loads(judged.answer)
        assert judged.answer.endswith(b"\n") and answer["jsonrpc"] == "2.0"
        assert isinstance(answer["error"]["code"], int)
    if judged.line is not None:
        message = json.loads(judged.line)
        assert isinstance(message, dict)
        assert "method" in message or "id" in message
        assert not isinstance(message.get("id"), bool | float | list | dict)


TARGETS: dict[str, Target] = {
    "http1": Target(
        fuzz_http1,
        [
            b"\x05HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello",
            b"\x03HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n"
            b"\r\n5;x=y\r\nhello\r\n0\r\nt: v\r\n\r\n",
            b"\x00HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n",
            b"\x07HTTP/1.0 200 OK\r\n\r\nuntil the end",
            b"\x02HTTP/1.1 204 No Content\r\ncontent-length: 9\r\n\r\n",
        ],
    ),
    "http2": Target(
        fuzz_http2,
        [
            b"\x00" + _server_says(_ok),
            b"\x09" + _server_says(_ok),
            b"\x00" + _server_says(_continue_then_reset),
            b"\x04" + _server_says(_goaway),
        ],
    ),
    "mcp": Target(
        fuzz_mcp,
        [
            b"\x03200\ncontent-type: application/json\n\n"
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}',
            b"\x05200\ncontent-type: text/event-stream\n\n"
            b": c\r\ndata: {}\r\n\r\nevent: m\ndata: 1\n\n",
            b"\x00200\ncontent-encoding: gzip\ncontent-type: application/json\n\n\x1f\x8b",
            b"\x02404\nmcp-session-id: s\n\n",
        ],
    ),
    "acp": Target(
        fuzz_acp,
        [
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n',
            b'[{"jsonrpc":"2.0","id":1,"method":"x"}]',
            b'{"jsonrpc":"2.0","id":7,"error":"no"}',
            b'{"jsonrpc":"2.0","id":[1],"result":{}}',
            b'"hi"',
        ],
    ),
}
