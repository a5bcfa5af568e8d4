"""The protocol loop of `magi-code serve --stdio`: one thread, one selector, one writer.

It reads 4096-byte batches from the private input fd, frames and validates them, answers
from its own state or hands work to one worker thread or to the runtime it attached
(sides.py), and writes every output frame through one ordered nonblocking queue. Other
threads never touch the fds: they post completions back through a wake-up pipe (the
threads are drawn in local_agent/__init__.py). The loop keeps reading while workers run and
while output stalls; it stops reading on EOF, shutdown or a closing error, then drains under
a deadline.

Exit codes: 0 when the child stopped in order and every frame was delivered; 1 when output
failed (overflow, a frame past its deadline, a broken pipe) or draining missed its
deadline. Nothing is ever written to stderr.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping

from magi_code import limits
from magi_code.local_agent.envelope import Rejection, Request, parse_request, valid_name
from magi_code.local_agent.errors import CLOSING_ERRORS, RequestRejected
from magi_code.local_agent.framing import Frame, FrameDecoder, FrameTooLarge, IncompleteFrame
from magi_code.local_agent.output import (
    FrameEncoder,
    OutputFailed,
    OutputQueue,
    OversizeFrame,
    UnencodableFrame,
)
from magi_code.local_agent.params import exact
from magi_code.local_agent.sides import Host, Runtime

Handler = Callable[["Server", Request], None]


TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import Any


class Server(Host):
    def __init__(
        self,
        in_fd: int,
        out_fd: int,
        cwd: str,
        env: Mapping[str, str],
        attach: Callable[[Host, Any], Runtime] | None = None,
        runtime_methods: tuple[str, ...] = (),
    ) -> None:
        """`attach` makes the runtime once the initialize result is out, and serves
        `runtime_methods` (local_agent/wiring.py); without it the child serves the lifecycle
        only."""
        self.in_fd, self.out_fd, self.cwd, self.env = in_fd, out_fd, cwd, env
        self.methods: dict[str, Handler] = {
            "initialize": Server.on_initialize,
            "status": Server.on_status,
            "shutdown": Server.on_shutdown,
        }
        self.methods |= dict.fromkeys(runtime_methods, Server.through_runtime)
        self._attach = attach
        self.encoder = FrameEncoder()
        self.queue = OutputQueue()
        self.decoder = FrameDecoder()
        self.ids: set[str] = set()
        self.reading = True
        self.stopping = False
        self.closing_deadline: float | None = None
        self.init_state = "none"  # none | pending | ready | failed
        self.init_request: str | None = None
        self.startup_error: str | None = None
        self.admitted: Any = None
        self.init_cancel = threading.Event()  # set when shutdown or EOF cancels startup
        self.mcp_managers: list[Any] = []  # every MCP manager startup produced, even late
        self.runtime: Runtime | None = None
        self._posted: deque[Callable[[], None]] = deque()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._workers: list[threading.Thread] = []
        os.set_blocking(in_fd, False)
        os.set_blocking(out_fd, False)

    # ---- output ----------------------------------------------------------------------------

    def send(self, frame: bytes) -> None:
        """Enqueue, then write at once what the pipe takes: the queue only holds what the
        reader has not yet made room for."""
        self.queue.push(frame, time.monotonic())
        self.flush()

    def flush(self) -> None:
        self.queue.write_some(lambda view: os.write(self.out_fd, view))

    def reply(self, request_id: str | None, result: dict[str, Any]) -> None:
        """Send a result; one that cannot be framed (too large, not Unicode) is content_limit."""
        try:
            frame = self.encoder.response(request_id, result)
        except (OversizeFrame, UnencodableFrame):
            frame = self.encoder.error(request_id, "content_limit")
        self.send(frame)

    def fail(self, request_id: str | None, code: str) -> None:
        self.send(self.encoder.error(request_id, code))

    def event(self, name: str, data: dict[str, Any]) -> None:
        self.send(self.encoder.event(name, data))

    def takes_events(self) -> bool:
        """Whether the output queue has room for run events (responses keep the rest)."""
        return self.queue.takes_events()

    # ---- workers ---------------------------------------------------------------------------

    def post(self, callback: Callable[[], None]) -> None:
        """Thread-safe: run `callback` on the protocol loop soon."""
        self._posted.append(callback)
        self.wake()

    def wake(self) -> None:
        """Thread-safe: make the loop run a turn (it pumps run events every turn)."""
        with contextlib.suppress(BlockingIOError):  # full: the loop is already due to wake
            os.write(self._wake_w, b"\0")

    def start_worker(
        self, work: Callable[[], Any], done: Callable[[Any, BaseException | None], None]
    ) -> None:
        def run() -> None:
            try:
                result, error = work(), None
            except BaseException as exc:  # noqa: BLE001 - handed to the loop, which decides
                result, error = None, exc
            self.post(lambda: done(result, error))

        thread = threading.Thread(target=run, daemon=True)
        self._workers = [t for t in self._workers if t.is_alive()] + [thread]
        thread.start()

    # ---- lifecycle methods -----------------------------------------------------------------

    def capabilities(self) -> list[str]:
        return list(self.methods)

    def on_initialize(self, request: Request) -> None:
        if self.init_state != "none":
            raise RequestRejected("already_initialized")
        exact(request.params, {"required_capabilities": (list,)})
        wanted = request.params["required_capabilities"]
        if len(wanted) > limits.REQUIRED_CAPABILITIES_MAX or not all(map(valid_name, wanted)):
            raise RequestRejected("invalid_params")
        if not set(wanted) <= set(self.methods):
            raise RequestRejected("unsupported_capability")
        self.init_state, self.init_request = "pending", request.id
        from magi_code.runner.startup import admit

        self.start_worker(lambda: admit(self.cwd, self.env, self.init_cancel), self._initialized)

    def _initialized(self, admitted: Any, error: BaseException | None) -> None:
        if getattr(admitted, "mcp", None) is not None:
            self.mcp_managers.append(admitted.mcp)  # closed at cleanup, answered or not
        if self.init_state != "pending":
            return  # cancelled by shutdown or EOF; the answer was already given
        from magi_code.runner.startup import StartupError

        if error is None:
            self.init_state, self.admitted = "ready", admitted
            self.reply(self.init_request, self.initialize_result())
            if self._attach is not None:
                self.runtime = self._attach(self, admitted)
                self.runtime.warm()
        else:
            code = error.code if isinstance(error, StartupError) else "startup_failed"
            self.init_state, self.startup_error = "failed", code
            self.fail(self.init_request, code)
        self.init_request = None

    def initialize_result(self) -> dict[str, Any]:
        return {
            "capabilities": self.capabilities(),
            "limits": {
                "frame_bytes": limits.FRAME_BYTES,
                "json_depth": limits.JSON_DEPTH,
                "id_bytes": limits.ID_BYTES,
                "prompt_bytes": limits.PROMPT_BYTES,
                "history_page_bytes": limits.HISTORY_PAGE_BYTES,
                "history_page_entries": limits.HISTORY_PAGE_ENTRIES,
                "content_chunk_bytes": limits.HISTORY_CHUNK_BYTES,
                "pending_responses": limits.PENDING_OUTPUT_FRAMES,
                "requests_per_child": limits.REQUESTS_PER_CHILD,
                "output_deadline_ms": limits.OUTPUT_DEADLINE_MS,
            },
            "status": self.status(),
        }

    def status(self) -> dict[str, Any]:
        from magi_code.runner.startup import safe_name

        if self.init_state == "pending":
            return {
                "state": "starting",
                "readiness": "initializing",
                "provider": None,
                "model": None,
                "context_id": None,
                "session_id": None,
                "run_id": None,
            }
        admitted = self.admitted
        attached = self.runtime.status() if self.runtime is not None else {}
        run_id = attached.get("run_id")
        if self.init_state == "failed":
            state, readiness = "failed", self.startup_error
        else:
            state, readiness = ("running" if run_id else "idle"), "ready"
        provider = attached.get("provider", getattr(admitted, "provider", None))
        model = attached.get("model", getattr(admitted, "model", None))
        return {
            "state": state,
            "readiness": readiness,
            "provider": safe_name(provider),
            "model": safe_name(model),
            "context_id": getattr(admitted, "context_id", None),
            "session_id": attached.get("session_id"),
            "run_id": run_id,
        }

    def on_status(self, request: Request) -> None:
        exact(request.params, {})
        self.reply(request.id, self.status())

    def through_runtime(self, request: Request) -> None:
        assert self.runtime is not None  # served only once initialized, which attached it
        self.runtime.handle(request)

    def on_shutdown(self, request: Request) -> None:
        exact(request.params, {})
        self.reply(request.id, {"state": "stopping"})
        self.stop()

    # ---- admission -------------------------------------------------------------------------

    def on_frame(self, data: bytes) -> None:
        parsed = parse_request(data)
        if isinstance(parsed, Rejection):
            if parsed.retained and parsed.id is not None and not self._admit_id(parsed.id):
                return
            self.fail(parsed.id, parsed.code)
            if parsed.code in CLOSING_ERRORS:
                self.stop()
            return
        if not self._admit_id(parsed.id):
            return
        handler = self.methods.get(parsed.method)
        try:
            if handler is None:
                raise RequestRejected("unsupported_method")
            if parsed.method not in ("initialize", "shutdown") and self.init_state != "ready":
                if parsed.method != "status" and self.init_state == "failed":
                    raise RequestRejected(self.startup_error or "startup_failed")
                if parsed.method != "status" or self.init_state == "none":
                    raise RequestRejected("not_initialized")
            handler(self, parsed)
        except RequestRejected as rejected:
            self.fail(parsed.id, rejected.code)

    def _admit_id(self, request_id: str) -> bool:
        """Spend a request id; False when it was answered here (duplicate or over the limit)."""
        if request_id in self.ids:
            self.fail(request_id, "duplicate_id")
            return False
        if len(self.ids) >= limits.REQUESTS_PER_CHILD:
            self.fail(request_id, "request_limit")
            self.stop()
            return False
        self.ids.add(request_id)
        return True

    # ---- stopping --------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop admitting input, cancel pending work, and arm the closing deadline within
        which output must drain and any run must deliver its terminal event."""
        self.reading = False
        if self.stopping:
            return
        self.stopping = True
        self.closing_deadline = time.monotonic() + limits.CLOSING_DEADLINE_MS / 1000
        if self.init_state == "pending":
            self.init_cancel.set()
            self.init_state, self.startup_error = "failed", "startup_cancelled"
            self.fail(self.init_request, "startup_cancelled")
            self.init_request = None
        if self.runtime is not None:
            self.runtime.cancel_all()

    def idle(self) -> bool:
        return self.runtime is None or self.runtime.idle()

    # ---- the loop --------------------------------------------------------------------------

    def serve(self) -> int:
        selector = selectors.DefaultSelector()
        selector.register(self.in_fd, selectors.EVENT_READ, "in")
        selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        writing = False
        try:
            while True:
                if self.runtime is not None:
                    self.runtime.pump()
                if not self.reading and self.in_fd in selector.get_map():
                    selector.unregister(self.in_fd)
                if self.stopping and not self.queue and self.idle():
                    return 0
                if bool(self.queue) != writing:
                    writing = bool(self.queue)
                    if writing:
                        selector.register(self.out_fd, selectors.EVENT_WRITE, "out")
                    else:
                        selector.unregister(self.out_fd)
                for key, _ in selector.select(self._timeout()):
                    if key.data == "in":
                        self._read()
                    elif key.data == "wake":
                        self._run_posted()
                    else:
                        self.flush()
                now = time.monotonic()
                self.queue.check(now)
                if self.closing_deadline is not None and now >= self.closing_deadline:
                    from magi_code.debug import note

                    note("the closing deadline passed before output drained")
                    return 1
        except OutputFailed as failed:
            from magi_code.debug import note

            note(f"output failed: {failed}")  # with MC_DEBUG_STDERR=1: why the child exits 1
            self.stop()
            return 1

    def _timeout(self) -> float | None:
        deadlines = [d for d in (self.queue.next_deadline(), self.closing_deadline) if d]
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    def _read(self) -> None:
        try:
            data = os.read(self.in_fd, limits.READ_BATCH_BYTES)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        events = self.decoder.feed(data) if data else self.decoder.end()
        for event in events:
            if not self.reading:
                return
            if isinstance(event, Frame):
                self.on_frame(event.data)
            elif isinstance(event, FrameTooLarge):
                self.fail(None, "frame_too_large")
                self.stop()
            elif isinstance(event, IncompleteFrame):
                self.fail(None, "incomplete_frame")
        if not data:
            self.stop()

    def _run_posted(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 4096):
                pass
        while self._posted:
            self._posted.popleft()()

    def cleanup(self, timeout: float) -> None:
        """Wait at most `timeout` for the runtime and workers; what is slower is left to exit."""
        end = time.monotonic() + timeout
        if self.runtime is not None:
            self.runtime.close(timeout)  # the run, then MCP servers, then the session leases
        for manager in self.mcp_managers:  # idempotent: all connected servers get shutdown
            manager.close(max(0.0, end - time.monotonic()))
        for thread in self._workers:
            thread.join(max(0.0, end - time.monotonic()))
