"""Output frames and the one ordered, nonblocking writer queue.

Every frame carries protocol, version, type, instance_id and a seq that starts at 1 and
strictly increases across all frames of the child. No frame exceeds FRAME_BYTES including
its LF: a caller asking for a larger one gets `OversizeFrame`, and one whose text is not
Unicode (a lone surrogate) gets `UnencodableFrame`; either must send something else. Neither
spends a seq.

The queue holds at most PENDING_OUTPUT_FRAMES frames (the one being written included), run
events only in its lower half. Each
frame's deadline is fixed when it is enqueued and is not moved by partial writes. The queue
owns no fd and no clock: the server passes `now` and a write function.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable

from magi_code.ids import uuid4
from magi_code.limits import (
    FRAME_BYTES,
    OUTPUT_DEADLINE_MS,
    PENDING_OUTPUT_FRAMES,
    PROTOCOL,
    PROTOCOL_VERSION,
)

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import Any


class OversizeFrame(Exception):
    pass


class UnencodableFrame(Exception):
    pass


class OutputFailed(Exception):
    """The child can no longer deliver output: overflow, a missed deadline, a broken pipe."""


class FrameEncoder:
    def __init__(self, instance_id: str | None = None) -> None:
        self.instance_id = instance_id or uuid4()
        self._seq = 0

    def encode(self, kind: str, body: dict[str, Any]) -> bytes:
        head = {
            "protocol": PROTOCOL,
            "version": PROTOCOL_VERSION,
            "type": kind,
            "instance_id": self.instance_id,
            "seq": self._seq + 1,
        }
        text = json.dumps(head | body, ensure_ascii=False, separators=(",", ":"))
        try:
            data = text.encode() + b"\n"
        except UnicodeEncodeError:
            raise UnencodableFrame from None
        if len(data) > FRAME_BYTES:
            raise OversizeFrame
        self._seq += 1
        return data

    def response(self, request_id: str | None, result: dict[str, Any]) -> bytes:
        return self.encode("response", {"id": request_id, "result": result})

    def error(self, request_id: str | None, code: str) -> bytes:
        return self.encode("response", {"id": request_id, "error": {"code": code}})

    def event(self, name: str, data: dict[str, Any]) -> bytes:
        return self.encode("event", {"event": name, "data": data})


class OutputQueue:
    def __init__(
        self,
        limit: int = PENDING_OUTPUT_FRAMES,
        deadline_s: float = OUTPUT_DEADLINE_MS / 1000,
    ) -> None:
        self._limit = limit
        self._deadline_s = deadline_s
        self._frames: deque[tuple[memoryview, float]] = deque()

    def __len__(self) -> int:
        return len(self._frames)

    def takes_events(self) -> bool:
        """Run events enter only while the queue is under half full: the upper half is kept
        for responses, so a client that stops reading during a fast stream still gets the
        answer to its `turn.cancel` or `status` (events wait, merge or drop upstream)."""
        return len(self._frames) < self._limit // 2

    def push(self, frame: bytes, now: float) -> None:
        if len(self._frames) >= self._limit:
            raise OutputFailed("overflow")
        self._frames.append((memoryview(frame), now + self._deadline_s))

    def next_deadline(self) -> float | None:
        return self._frames[0][1] if self._frames else None

    def check(self, now: float) -> None:
        if self._frames and now >= self._frames[0][1]:
            raise OutputFailed("deadline")

    def write_some(self, write: Callable[[memoryview], int]) -> None:
        """Write as much as the fd takes now; `write` raises BlockingIOError when full."""
        while self._frames:
            view, deadline = self._frames[0]
            try:
                n = write(view)
            except BlockingIOError:
                return
            except OSError as exc:
                raise OutputFailed("broken") from exc
            if n == len(view):
                self._frames.popleft()
            else:
                self._frames[0] = (view[n:], deadline)
