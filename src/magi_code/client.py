"""A typed Python client for frontend authors: spawn `magi-code serve --stdio`, send
requests with fresh ids, correlate responses by id, and read run events in order.

    with LocalAgentClient.spawn(cwd=workspace) as agent:
        agent.request("initialize", {"required_capabilities": ["status"]})
        print(agent.request("status"))

A reader thread owns the child's stdout; `request` waits for the response with its id and
raises `ErrorResponse` carrying the code. Events queue up for `next_event`. The client never
replays a request whose answer it did not see.
"""

import contextlib
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from magi_code.limits import PROTOCOL, PROTOCOL_VERSION
from magi_code.records import record


class ErrorResponse(Exception):
    def __init__(self, code: str, request_id: str | None) -> None:
        super().__init__(code)
        self.code, self.request_id = code, request_id


class ChildGone(Exception):
    """The child closed its output before the awaited frame arrived."""


@record
class Event:
    name: str
    data: dict[str, Any]
    seq: int


def serve_command() -> list[str]:
    return [sys.executable, "-m", "magi_code.cli", "serve", "--stdio"]


class LocalAgentClient:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.instance_id: str | None = None
        self.stderr: Path | None = None  # where the child's stderr goes, when it is kept
        self.frames: list[dict[str, Any]] = []  # every frame, in arrival order
        self._ids = (f"c{n}" for n in itertools.count(1))
        self._responses: dict[str | None, list[dict[str, Any]]] = {}
        self._events: queue.Queue[Event | None] = queue.Queue()
        self._cond = threading.Condition()
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def spawn(
        cls,
        cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        command: Sequence[str] | None = None,
        stderr: Path | None = None,
    ) -> Self:
        """`stderr`: a file for the child's stderr (it writes there only with
        MC_DEBUG_STDERR=1); its end is told when the child is gone."""
        with open(stderr or os.devnull, "ab") as errors:
            process = subprocess.Popen(
                list(command or serve_command()),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                cwd=cwd,
                env=dict(env) if env is not None else None,
            )
        client = cls(process)
        client.stderr = stderr
        return client

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            frame = json.loads(line)
            with self._cond:
                self.frames.append(frame)
                self.instance_id = frame.get("instance_id")
                if frame.get("type") == "response":
                    self._responses.setdefault(frame.get("id"), []).append(frame)
                    self._cond.notify_all()
            if frame.get("type") == "event":
                self._events.put(Event(frame["event"], frame["data"], frame["seq"]))
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._events.put(None)

    def send(self, method: str, params: Mapping[str, Any] | None = None) -> str:
        request_id = next(self._ids)
        self.send_raw(
            json.dumps(
                {
                    "protocol": PROTOCOL,
                    "version": PROTOCOL_VERSION,
                    "id": request_id,
                    "method": method,
                    "params": dict(params or {}),
                }
            ).encode()
            + b"\n"
        )
        return request_id

    def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def wait(self, request_id: str | None, timeout: float = 30.0) -> dict[str, Any]:
        """The response frame for `request_id` (None: the next id-less error response)."""
        with self._cond:
            ok = self._cond.wait_for(
                lambda: bool(self._responses.get(request_id)) or self._closed, timeout
            )
            if self._responses.get(request_id):
                return self._responses[request_id].pop(0)
        raise self._gone() if ok else TimeoutError(request_id)

    def result(self, request_id: str, timeout: float = 30.0) -> dict[str, Any]:
        frame = self.wait(request_id, timeout)
        if "error" in frame:
            raise ErrorResponse(frame["error"]["code"], request_id)
        result: dict[str, Any] = frame["result"]
        return result

    def request(
        self, method: str, params: Mapping[str, Any] | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        return self.result(self.send(method, params), timeout)

    def next_event(self, timeout: float = 30.0) -> Event:
        event = self._events.get(timeout=timeout)
        if event is None:
            self._events.put(None)
            raise self._gone()
        return event

    def _gone(self) -> ChildGone:
        """Why the output closed, as far as the exit status tells (the child writes no stderr)."""
        try:
            status: int | str = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            status = "still running"
        said = ""
        if self.stderr is not None:
            with contextlib.suppress(OSError):
                said = "; its stderr ends: " + self.stderr.read_text(errors="replace")[-2000:]
        return ChildGone(f"the child closed its output; exit status: {status}{said}")

    def close_input(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()

    def finish(self, timeout: float = 10.0) -> int:
        self.close_input()
        code = self.process.wait(timeout)
        self._reader.join(timeout)
        return code

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close_input()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def environment(mc_home: Path | str, **extra: str) -> dict[str, str]:
    """A child environment with its own MC_HOME (what tests and the demo use)."""
    env = dict(os.environ, MC_HOME=str(mc_home))
    env.update(extra)
    return env
