"""A local mock OpenAI Responses provider for the benchmarks: every POST to .../responses
streams one assistant message of `deltas` text deltas (keep-alive), then `response.completed`.
Any other request gets an empty 404. Every system under test talks to it.

By default the whole stream is one body. With `per_second`, the deltas are paced as a model
streams them: one event per HTTP/1.1 chunk, delta n sent at n / per_second seconds after the
first (a fixed schedule, so a slow reader never slows the model down).
"""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _event(kind: str, value: dict[str, object]) -> bytes:
    value = {"type": kind, **value}
    return f"event: {kind}\ndata: {json.dumps(value)}\n\n".encode()


def reply_stream(deltas: list[str], n: int) -> bytes:
    """One whole Responses stream holding `deltas` (the n-th reply has its own ids)."""
    return b"".join(reply_events(deltas, n))


def reply_events(deltas: list[str], n: int) -> list[bytes]:
    """The Responses stream holding `deltas`, one SSE event each: two before the deltas, two
    after them."""
    rid, mid = f"resp_{n}", f"msg_{n}"
    text = "".join(deltas)
    out = [
        _event("response.created", {"response": {"id": rid, "status": "in_progress"}}),
        _event(
            "response.output_item.added",
            {
                "output_index": 0,
                "item": {"type": "message", "id": mid, "role": "assistant", "content": []},
            },
        ),
    ]
    out += [
        _event(
            "response.output_text.delta",
            {"item_id": mid, "output_index": 0, "content_index": 0, "delta": d},
        )
        for d in deltas
    ]
    message = {
        "type": "message",
        "id": mid,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": len(deltas),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10 + len(deltas),
    }
    out += [
        _event("response.output_item.done", {"output_index": 0, "item": message}),
        _event(
            "response.completed",
            {"response": {"id": rid, "status": "completed", "output": [message], "usage": usage}},
        ),
    ]
    return out


class MockResponses:
    """Serves the reply of `deltas` for each request (paced at `per_second` deltas a second
    when given); counts requests."""

    def __init__(self, per_second: float | None = None) -> None:
        self.deltas: list[str] = ["Hello."]
        self.per_second = per_second
        self.requests = 0
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self) -> None:
                self._empty(404)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                if not self.path.split("?")[0].endswith("/responses"):
                    self._empty(404)
                    return
                mock.requests += 1
                if mock.per_second is not None:
                    self._paced(reply_events(mock.deltas, mock.requests), mock.per_second)
                    return
                body = reply_stream(mock.deltas, mock.requests)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

            def _paced(self, events: list[bytes], per_second: float) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                started = time.perf_counter()
                try:
                    for n, event in enumerate(events):
                        due = started + max(0, n - 2) / per_second  # deltas start at index 2
                        time.sleep(max(0.0, due - time.perf_counter()))
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:  # the client went away mid-reply (a bench stopped it)
                    self.close_connection = True

            def _empty(self, status: int) -> None:
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> "MockResponses":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
