"""Hostile servers on 127.0.0.1 for the providers' HTTP client. Each accepted connection goes,
on a thread of its own, to a handler the test writes: byte by byte over HTTP/1.1 (plain, or TLS
offering only `http/1.1`: a `Peer`), or over HTTP/2 (TLS offering only `h2`: an `H2Peer`, on
h2's server side, with raw frames for what h2 itself would never send). The server counts the
connections it accepted and the requests its handlers read; a handler's own failure (not the
client going away) is kept in `errors` for the test to see.
"""

import socket
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import DataReceived, StreamEnded
from h2.exceptions import ProtocolError

SSE = [("content-type", "text/event-stream")]


class Peer:
    """One HTTP/1.1 connection (the `index`th the server accepted), as its handler sees it."""

    def __init__(self, server: "HostileServer", sock: socket.socket, index: int) -> None:
        self.server, self.sock, self.index = server, sock, index
        self._buffer = b""

    def request(self) -> bytes | None:
        """The next request whole (its head, then a body of its Content-Length); None once the
        client closed the connection."""
        while b"\r\n\r\n" not in self._buffer:
            if not self._receive():
                return None
        head, _, _ = self._buffer.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        whole = len(head) + 4 + length
        while len(self._buffer) < whole:
            if not self._receive():
                return None
        request, self._buffer = self._buffer[:whole], self._buffer[whole:]
        self.server.counted()
        return request

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _receive(self) -> bool:
        try:
            data = self.sock.recv(65536)
        except (OSError, ValueError):
            return False
        self._buffer += data
        return bool(data)


class H2Peer:
    """One HTTP/2 connection (the `index`th the server accepted), as its handler sees it: h2's
    server side, every frame the client sends read, and its data acknowledged, as requests are
    waited for."""

    def __init__(self, server: "HostileServer", sock: socket.socket, index: int) -> None:
        self.server, self.sock, self.index = server, sock, index
        self.h2 = H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
        self.h2.initiate_connection()
        self.flush()
        self._whole: list[int] = []  # streams whose request has come whole, not yet taken

    def request(self) -> int | None:
        """Read frames until a request is whole: its stream's id; None once the client closed
        or broke the connection."""
        while not self._whole:
            if not self._read():
                return None
        self.server.counted()
        return self._whole.pop(0)

    def respond(
        self, stream_id: int, status: int = 200, headers: list[tuple[str, str]] = SSE
    ) -> None:
        self.h2.send_headers(stream_id, [(":status", str(status)), *headers])
        self.flush()

    def informational(self, stream_id: int, status: int = 103) -> None:
        self.h2.send_headers(stream_id, [(":status", str(status))])
        self.flush()

    def data(self, stream_id: int, data: bytes, end: bool = False) -> None:
        self.h2.send_data(stream_id, data, end_stream=end)
        self.flush()

    def reset(self, stream_id: int, code: ErrorCodes = ErrorCodes.INTERNAL_ERROR) -> None:
        self.h2.reset_stream(stream_id, code)
        self.flush()

    def raw(self, frame: bytes) -> None:
        """Bytes outside h2's state machine: what a conforming server never sends."""
        self.sock.sendall(frame)

    def drain(self) -> None:
        """Read (and acknowledge) what the client sends until it closes the connection."""
        while self._read():
            pass

    def flush(self) -> None:
        data = self.h2.data_to_send()
        if data:
            self.sock.sendall(data)

    def _read(self) -> bool:
        try:
            data = self.sock.recv(65536)
        except (OSError, ValueError):
            return False
        if not data:
            return False
        try:
            events = self.h2.receive_data(data)
        except ProtocolError:
            return False
        for event in events:
            if isinstance(event, DataReceived) and event.flow_controlled_length:
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, StreamEnded) and event.stream_id is not None:
                self._whole.append(event.stream_id)
        self.flush()
        return True


class HostileServer:
    """A listener whose every connection is handed to `handler` as a `Peer` (HTTP/1.1, plain
    without a certificate, TLS with one) or an `H2Peer` (`h2=True`, TLS)."""

    def __init__(
        self,
        handler: Callable[[Any], None],  # given a Peer, or an H2Peer
        certificate: tuple[Path, Path] | None = None,
        h2: bool = False,
    ) -> None:
        self._handler = handler
        self._h2 = h2
        self._tls: ssl.SSLContext | None = None
        if certificate is not None:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.load_cert_chain(*certificate)
            self._tls.set_alpn_protocols(["h2" if h2 else "http/1.1"])
        self._listener = socket.create_server(("127.0.0.1", 0))
        port = self._listener.getsockname()[1]
        self.url = f"https://localhost:{port}" if self._tls else f"http://127.0.0.1:{port}"
        self.connections = 0
        self.requests = 0
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def counted(self) -> None:
        with self._lock:
            self.requests += 1

    def close(self) -> None:
        self._listener.close()

    def __enter__(self) -> "HostileServer":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                index = self.connections
                self.connections += 1
            threading.Thread(target=self._serve, args=(raw, index), daemon=True).start()

    def _serve(self, raw: socket.socket, index: int) -> None:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        raw.settimeout(20)  # a handler never outlives its test by much
        try:
            sock = raw if self._tls is None else self._tls.wrap_socket(raw, server_side=True)
        except OSError:
            raw.close()
            return
        try:
            self._handler(H2Peer(self, sock, index) if self._h2 else Peer(self, sock, index))
        except OSError:
            pass  # the client went away
        except BaseException as exc:  # noqa: BLE001 - told to the test, not lost in a thread
            self.errors.append(exc)
        finally:
            sock.close()
