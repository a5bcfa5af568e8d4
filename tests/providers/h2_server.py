"""A real HTTP/2 server on 127.0.0.1 over TLS (ALPN `h2` only), on h2's server side, that
replays scripted replies per path.

Each connection runs on a thread of its own, one socket and one h2 state machine, so no two
threads touch either; a reply's chunks go out on a schedule (a delay before each), a reply may
leave its stream open (the client must reset it), refuse its stream, or end its connection
after it, with a GOAWAY or without a word; data goes out within the client's flow-control
windows. The server records every request (pseudo-headers
included), every stream the client reset and with what code, the peak of streams open at
once, and counts the connections it accepted and the ones that ended.
"""

import socket
import ssl
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    RequestReceived,
    StreamEnded,
    StreamReset,
)
from h2.exceptions import ProtocolError


@dataclass
class H2Reply:
    status: int = 200
    chunks: list[bytes] = field(default_factory=list)
    headers: list[tuple[str, str]] = field(default_factory=list)
    delay_s: float = 0.0  # before each chunk
    open_ended: bool = False  # after the chunks, leave the stream open
    then: str = ""  # "goaway" or "close": end the connection once this reply is out
    refuse: bool = False  # reset the stream with REFUSED_STREAM instead of answering


@dataclass
class H2Seen:
    headers: dict[str, str]  # pseudo-headers included
    body: bytes
    stream_id: int


class H2Server:
    def __init__(self, certificate: tuple[object, object]) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*certificate)  # type: ignore[arg-type]
        context.set_alpn_protocols(["h2"])
        self.context = context
        self.replies: dict[str, deque[H2Reply]] = {}
        self.requests: list[H2Seen] = []
        self.resets: list[tuple[int, int]] = []  # (stream id, error code) the client sent
        self.goaways_received = 0
        self.connections = 0
        self.ended = 0  # connections over (either side closed)
        self.peak_streams = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"https://localhost:{self.port}"
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def script(self, path: str, *replies: H2Reply) -> None:
        self.replies.setdefault(path, deque()).extend(replies)

    def close(self) -> None:
        self._stop.set()
        self._listener.close()

    def __enter__(self) -> "H2Server":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # ---- the server's threads ---------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                raw, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            tls = self.context.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            self._end()
            return
        try:
            _Connection(self, tls).run()
        finally:
            tls.close()
            self._end()

    def _end(self) -> None:
        with self._lock:
            self.ended += 1


class _Connection:
    """One client connection: reads frames, answers requests on their schedules."""

    def __init__(self, server: H2Server, tls: ssl.SSLSocket) -> None:
        self.server, self.tls = server, tls
        self.h2 = H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
        self.headers: dict[int, dict[str, str]] = {}
        self.bodies: dict[int, bytearray] = {}
        # (when, stream, reply, next chunk, bytes of it already sent)
        self.due: list[tuple[float, int, H2Reply, int, int]] = []
        self.ending = ""

    def run(self) -> None:
        self.h2.initiate_connection()
        self._send()
        self.tls.settimeout(0.005)
        while not self.server._stop.is_set():
            try:
                data = self.tls.recv(65536)
                if not data:
                    return
            except (TimeoutError, ssl.SSLWantReadError):
                data = b""
            except OSError:
                return
            if data:
                try:
                    events = self.h2.receive_data(data)
                except ProtocolError:
                    return
                for event in events:
                    self._on(event)
            self._answer_due()
            if not self._send():
                return
            if self.ending and not self.due:
                if self.ending == "goaway":
                    self.h2.close_connection(last_stream_id=self.h2.highest_inbound_stream_id)
                    self._send()
                return

    def _on(self, event: object) -> None:
        server = self.server
        if isinstance(event, RequestReceived):
            self.headers[event.stream_id] = dict(event.headers)  # type: ignore[arg-type]
            self.bodies[event.stream_id] = bytearray()
            with server._lock:
                server.peak_streams = max(server.peak_streams, self.h2.open_inbound_streams)
        elif isinstance(event, DataReceived):
            self.bodies[event.stream_id] += event.data
            self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, StreamEnded):
            self._received(event.stream_id)
        elif isinstance(event, StreamReset):
            with server._lock:
                server.resets.append((event.stream_id, event.error_code))
            self.due = [d for d in self.due if d[1] != event.stream_id]
        elif isinstance(event, ConnectionTerminated):
            with server._lock:
                server.goaways_received += 1

    def _received(self, stream_id: int) -> None:
        headers = self.headers.pop(stream_id)
        seen = H2Seen(headers, bytes(self.bodies.pop(stream_id)), stream_id)
        with self.server._lock:
            self.server.requests.append(seen)
            queue = self.server.replies.get(headers[":path"].split("?")[0])
            reply = queue.popleft() if queue else H2Reply(status=404)
        if reply.refuse:
            self.h2.reset_stream(stream_id, ErrorCodes.REFUSED_STREAM)
            return
        fields = [(":status", str(reply.status)), *reply.headers]
        self.h2.send_headers(
            stream_id, fields, end_stream=not reply.chunks and not reply.open_ended
        )
        if reply.chunks:
            self.due.append((time.monotonic() + reply.delay_s, stream_id, reply, 0, 0))
        elif reply.then:
            self.ending = reply.then

    def _answer_due(self) -> None:
        """Send what is due, within the client's flow-control windows: the rest of a chunk
        waits for its window to open."""
        now, later = time.monotonic(), []
        for when, stream_id, reply, index, sent in self.due:
            chunk = reply.chunks[index]
            room = min(
                self.h2.local_flow_control_window(stream_id), self.h2.max_outbound_frame_size
            )
            if when > now or (room <= 0 and chunk):
                later.append((when, stream_id, reply, index, sent))
                continue
            part = chunk[sent : sent + room]
            whole = sent + len(part) == len(chunk)
            last = whole and index == len(reply.chunks) - 1
            self.h2.send_data(stream_id, part, end_stream=last and not reply.open_ended)
            if not whole:
                later.append((now, stream_id, reply, index, sent + len(part)))
            elif not last:
                later.append((now + reply.delay_s, stream_id, reply, index + 1, 0))
            elif reply.then:
                self.ending = reply.then
        self.due = later

    def _send(self) -> bool:
        data = self.h2.data_to_send()
        if not data:
            return True
        try:
            self.tls.settimeout(5)
            self.tls.sendall(data)
            self.tls.settimeout(0.005)
        except OSError:
            return False
        return True
