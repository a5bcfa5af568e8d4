"""A real HTTP server on 127.0.0.1 that replays scripted replies, one per request.

Each `Reply` can stream its body in chunks (close-delimited, or framed as HTTP/1.1 chunked
transfer coding), stall, drop the connection before the body is complete, hang until the
client goes away, or close the connection without answering; the server records every
request and whether the client closed a hanging connection, and counts the TCP connections
it accepted (a reply may keep its connection alive for the next request, or announce that and
close it once idle). Small writes go out at once (no Nagle), so a drip reaches the client as
a drip. Given a TLS context, it serves https (a failed handshake still counts a connection).
"""

import json
import select
import socket
import ssl
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    chunks: list[bytes] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # before each chunk
    hang: bool = False  # after the chunks, keep the connection open until the client leaves
    content_length: bool = False
    chunked: bool = False  # frame each chunk with transfer-encoding: chunked
    drop: bool = False  # close the connection after the chunks, before the body's end
    keep_alive: bool = False  # leave the connection open for the next request (framed bodies)
    close_when_idle: bool = False  # with keep_alive: announce it, then close once answered
    unanswered: bool = False  # close the connection without sending a response

    @staticmethod
    def json(value: object, status: int = 200) -> "Reply":
        return Reply(
            status,
            [json.dumps(value).encode()],
            {"content-type": "application/json"},
            content_length=True,
        )


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class LocalServer:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.replies: dict[str, deque[Reply]] = {}
        self.requests: list[Seen] = []
        self.connections = 0  # TCP connections accepted
        self.disconnects = 0  # ... and ended, by either side
        self.client_closed = threading.Event()
        self.stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                server.connections += 1
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def finish(self) -> None:
                super().finish()
                server.disconnects += 1

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                path = self.path.split("?")[0]
                server.requests.append(
                    Seen(
                        self.command,
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
                queue = server.replies.get(path)
                reply = queue.popleft() if queue else Reply(404, [b"no script"])
                self.close_connection = not reply.keep_alive or reply.close_when_idle
                if reply.unanswered:
                    self.close_connection = True
                    return
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.content_length:
                    self.send_header("content-length", str(sum(map(len, reply.chunks))))
                if reply.chunked:
                    self.send_header("transfer-encoding", "chunked")
                if not reply.keep_alive:
                    self.send_header("connection", "close")
                self.end_headers()
                try:
                    for chunk in reply.chunks:
                        if reply.delay_s:
                            time.sleep(reply.delay_s)
                        self.wfile.write(_framed(chunk) if reply.chunked else chunk)
                        self.wfile.flush()
                    if reply.drop:
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if reply.hang:  # the body never ends
                        self._hang()
                    elif reply.chunked:
                        self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    server.client_closed.set()

            def _hang(self) -> None:
                sock: socket.socket = self.connection
                while not server.stop.is_set():
                    ready, _, _ = select.select([sock], [], [], 0.05)
                    if ready and not sock.recv(1024):
                        server.client_closed.set()
                        return

        class Server(ThreadingHTTPServer):
            def get_request(self) -> tuple[socket.socket, object]:
                sock, address = super().get_request()
                if tls is not None:
                    sock = tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
                return sock, address

            def handle_error(self, request: object, client_address: object) -> None:
                if not isinstance(sys.exc_info()[1], ssl.SSLError):  # a refused handshake
                    super().handle_error(request, client_address)

        self.scheme = "http" if tls is None else "https"
        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"{self.scheme}://{host!s}:{port}"

    def script(self, path: str, *replies: Reply) -> None:
        self.replies.setdefault(path, deque()).extend(replies)

    def __enter__(self) -> "LocalServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _framed(chunk: bytes) -> bytes:
    return f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"


def sse(*events: tuple[str | None, object]) -> bytes:
    """An event stream: (event name or None, JSON value or a raw string)."""
    out = b""
    for name, value in events:
        data = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        out += (f"event: {name}\n" if name else "").encode() + b"data: " + data.encode() + b"\n\n"
    return out


def split_every(data: bytes, n: int) -> list[bytes]:
    return [data[i : i + n] for i in range(0, len(data), n)]
