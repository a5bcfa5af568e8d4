"""Server-sent events from bytes: a sans-I/O decoder with no clock, no I/O and no awaits.

Rules, in the order they apply to each chunk:
- CR, LF and CRLF end lines; a CR ending one chunk and an LF starting the next are one CRLF.
  Line ends are normalised to LF on bytes (0x0D/0x0A never occur inside a UTF-8 sequence).
- A UTF-8 BOM at the very start of the stream is dropped, even when split across chunks.
- Bytes up to the last blank line are complete events: they are decoded from UTF-8 once, as
  a whole, so a code point split across chunks is whole again. Malformed UTF-8 raises
  `SSEError`; bytes of an incomplete event wait in the buffer and are scanned only once.
- Field semantics follow openai-python's `SSEDecoder` (the provider client): a blank line
  dispatches when event, data, id or retry is set; the last id persists across events.
- At end of stream a final event that arrived whole (it has a data line) is delivered
  although no blank line followed: the provider client's EOF-tail delivery. At a framed end
  of body (a length, a last chunk, HTTP/2's end of stream) the last line is whole without its
  line end, as both official SDKs read it; where only a closed connection ended the body,
  which a cut connection looks like too, a last line without its line end was cut.
- One event may hold at most `max_event_bytes`; a longer one raises `SSEError`.
This is not a browser EventSource: `retry` is reported, never acted on; nothing reconnects.
"""

from typing import Literal, NamedTuple

from magi_code.errors import MagiError
from magi_code.providers.limits import SSE_EVENT_BYTES

_BOM = b"\xef\xbb\xbf"
_LF = 10

SSEErrorReason = Literal["malformed_utf8", "event_too_large"]


class SSEEvent(NamedTuple):  # a tuple: `_events` builds the common ones with `tuple.__new__`
    event: str | None
    data: str
    id: str | None
    retry: int | None


class SSEError(MagiError):
    """The peer sent bytes that are not a valid event stream (a `RemoteProtocolError`);
    `reason` says how."""

    code: Literal["malformed_stream"] = "malformed_stream"

    def __init__(self, reason: SSEErrorReason) -> None:
        super().__init__(reason)
        self.reason: SSEErrorReason = reason


class SSEDecoder:
    def __init__(self, max_event_bytes: int = SSE_EVENT_BYTES) -> None:
        self._buf = bytearray()
        self._scan = 0  # where the next search for a blank line starts within _buf
        self._skip_lf = False  # the previous chunk ended in CR
        self._at_start = True  # a BOM may still come
        self._last_id: str | None = None
        self._max = max_event_bytes

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Take the next bytes of the stream; return the events they complete."""
        if not chunk:
            return []
        if self._skip_lf or b"\r" in chunk:
            chunk = self._normalise(chunk)
        buf = self._buf
        buf += chunk
        if self._at_start and not self._drop_bom():
            return []
        # Everything up to the last blank line is complete: decode it once, split it once.
        last = buf.rfind(b"\n\n", self._scan)
        events: list[SSEEvent] = []
        if last >= 0:
            done = last + 2
            if done > self._max:
                self._check_sizes(buf, done)
            try:
                text = buf[:done].decode("utf-8")
            except UnicodeDecodeError:
                raise SSEError("malformed_utf8") from None
            del buf[:done]
            self._events(text, events)
        # buf starts at a line start with no field pending: leading LFs are whole blank lines.
        if buf[:1] == b"\n":
            blank = len(buf) - len(buf.lstrip(b"\n"))
            del buf[:blank]
            self._blank_lines(blank, events)
        pending = len(buf)
        if pending - (pending > 0 and buf[-1] == _LF) > self._max:
            raise SSEError("event_too_large")
        self._scan = pending - 1 if pending else 0
        return events

    def _events(self, text: str, out: list[SSEEvent]) -> None:
        """Dispatch the events of `text`: whole lines at a line start, ending in a blank line.

        Splitting on "\n\n" gives parts that each end in one blank line; the last part is
        "" or one more blank line. A part holds no "\n\n", so at most one LF leads it.
        """
        parts = text.split("\n\n")
        tail = parts.pop()
        new = tuple.__new__
        append = out.append
        last_id = self._last_id
        for part in parts:
            # The two common shapes, fast: "data: D" and "event: E\ndata: D".
            if part.startswith("data: "):
                if "\n" not in part:
                    append(new(SSEEvent, (None, part[6:], last_id, None)))
                    continue
            elif part.startswith("event: "):
                nl = part.find("\n")
                if nl > 0 and part.startswith("data: ", nl + 1) and part.find("\n", nl + 1) < 0:
                    append(new(SSEEvent, (part[7:nl] or None, part[nl + 7 :], last_id, None)))
                    continue
            if part and part[0] != "\n":
                event = self._parse(part)
                if event is not None:
                    append(event)
            else:  # "" is two blank lines; "\nX" is a blank line, then block X
                self._blank_lines(1, out)
                if part:
                    event = self._parse(part[1:])
                    if event is not None:
                        append(event)
                else:
                    self._blank_lines(1, out)
            last_id = self._last_id
        if tail:
            self._blank_lines(1, out)

    def _blank_lines(self, n: int, out: list[SSEEvent]) -> None:
        # A blank line with no pending fields dispatches only once an id was seen (openai-python).
        if self._last_id:
            out.extend([SSEEvent(None, "", self._last_id, None)] * n)

    def _check_sizes(self, buf: bytearray, done: int) -> None:
        for block in bytes(buf[:done]).split(b"\n\n"):
            if len(block.lstrip(b"\n")) > self._max:
                raise SSEError("event_too_large")

    def end(self, *, framed: bool = True) -> list[SSEEvent]:
        """The stream ended: dispatch the pending event if it arrived whole.

        The buffer starts at a line start and holds no blank line: it is the field lines of
        one event. At a `framed` end the bytes after its last line end are its last line;
        else they are a line cut in the middle, so the event is incomplete and dropped. An
        event without a data line is not dispatched (EventSource's own rule), so lines cut off
        before their data never pass for an event.
        Returns the events the end delivers (none or one), so callers treat end like feed.
        """
        buf = self._buf
        if buf[-1:] == b"\n" or not buf:
            whole = bytes(buf)
        else:
            whole = bytes(buf) + b"\n" if framed else b""
        buf.clear()
        self._scan = 0
        if not whole:
            return []
        try:
            lines = whole.decode("utf-8")[:-1]
        except UnicodeDecodeError:
            raise SSEError("malformed_utf8") from None
        if not any(line.partition(":")[0] == "data" for line in lines.split("\n")):
            return []
        event = self._parse(lines)
        return [] if event is None else [event]

    def _normalise(self, chunk: bytes) -> bytes:
        if self._skip_lf:
            self._skip_lf = False
            if chunk[0] == _LF:
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._skip_lf = chunk[-1] == 13
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        return chunk

    def _drop_bom(self) -> bool:
        """Drop a leading BOM; False while the first bytes could still be one."""
        buf = self._buf
        if len(buf) < len(_BOM) and _BOM.startswith(buf):
            return False
        if buf.startswith(_BOM):
            del buf[: len(_BOM)]
        self._at_start = False
        return True

    def _parse(self, block: str) -> SSEEvent | None:
        """One block of non-blank lines followed by the blank line that dispatches it."""
        event: str | None = None
        data: list[str] = []
        retry: int | None = None
        for line in block.split("\n"):
            if line[0] == ":":
                continue
            name, _, value = line.partition(":")
            if value[:1] == " ":
                value = value[1:]
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value
            elif name == "id":
                if "\0" not in value:
                    self._last_id = value
            elif name == "retry":
                retry = _parse_retry(value, retry)
        if not event and not data and not self._last_id and retry is None:
            return None
        return SSEEvent(event or None, "\n".join(data), self._last_id, retry)


def _parse_retry(value: str, previous: int | None) -> int | None:
    try:
        return int(value)
    except ValueError:
        return previous
