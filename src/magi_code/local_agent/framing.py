"""Sans-I/O input framing: bytes in, whole frames out.

Rules (local-agent-protocol.md, "Frames" and "Bounds"):
- A frame is the bytes before an LF; the LF is not counted, a CR before it is.
- A frame may hold at most FRAME_BYTES bytes. The decoder notices on byte FRAME_BYTES + 1,
  reports `FrameTooLarge` once and then refuses everything: the caller closes.
- At EOF, buffered bytes without an LF are an incomplete frame, never a request.
- At most one partial frame is ever buffered.
No I/O, no clock: the server feeds it whatever os.read returned.
"""

from __future__ import annotations

from magi_code.limits import FRAME_BYTES
from magi_code.records import record


@record
class Frame:
    data: bytes  # without the LF


@record
class FrameTooLarge:
    """A frame went past the limit: reported once, then the decoder refuses everything."""


@record
class IncompleteFrame:
    """The input ended inside a frame (no LF after its last bytes)."""


FrameEvent = Frame | FrameTooLarge | IncompleteFrame


class FrameDecoder:
    def __init__(self, limit: int = FRAME_BYTES) -> None:
        self._limit = limit
        self._partial = bytearray()
        self._broken = False

    @property
    def buffered(self) -> int:
        return len(self._partial)

    def feed(self, data: bytes) -> list[FrameEvent]:
        if self._broken:
            return []
        events: list[FrameEvent] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end]
            if len(self._partial) + len(piece) > self._limit:
                self._broken = True
                self._partial.clear()
                events.append(FrameTooLarge())
                return events
            if end < 0:
                self._partial += piece
                return events
            events.append(Frame(bytes(self._partial) + piece if self._partial else piece))
            self._partial.clear()
            start = end + 1

    def end(self) -> list[FrameEvent]:
        """EOF: a buffered partial frame is reported, never executed."""
        if self._broken or not self._partial:
            return []
        self._partial.clear()
        self._broken = True
        return [IncompleteFrame()]
