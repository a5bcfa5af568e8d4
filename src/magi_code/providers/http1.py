"""HTTP/1.1 framing for the client side, sans-I/O (RFC 9112): the bytes of one request, and a
reader that turns the bytes of its response into the head, the body's data and the end (a
2xx answer to CONNECT has no body: a proxy's tunnel begins after its head).

No sockets, no clock: bytes in, events or `ProtocolError` out. A response is untrusted input:
its head (each skipped 1xx head alike, and how many 1xx heads come), a chunk-size line and the
trailer section are bounded (`limits`); body data is handed on as it comes, never buffered
whole. A reader knows one exchange, and says whether its connection may carry the next one
(`reusable`): not if any byte it was fed follows its response's end (bytes that come later
are the pool's to see: `connections.take`).
"""

from __future__ import annotations

from magi_code.providers.limits import CHUNK_LINE_BYTES, INFORMATIONAL_HEADS, RESPONSE_HEAD_BYTES
from magi_code.records import record

# RFC 9110's tchar: what a token (a method, a header name) is made of.
_TCHAR = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_HEX = b"0123456789abcdefABCDEF"
_NO_BODY_STATUSES = (204, 304)


class ProtocolError(Exception):
    """The peer broke HTTP/1.1 framing, or a request header is not sendable."""


@record
class Head:
    """A response's status and headers (names lower-cased, values latin-1, in order)."""

    status: int
    headers: list[tuple[str, str]]


@record
class Marker:
    """A reader's event that carries nothing: `END` or `NEED_DATA`."""

    name: str

    def __repr__(self) -> str:
        return self.name


END = Marker("END")  # the response is complete; asked again, the reader says it again
NEED_DATA = Marker("NEED_DATA")  # feed the reader what the peer sends next (or b"" at close)


def request_bytes(method: str, target: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    """`METHOD target HTTP/1.1`, the header lines, a blank line, then `body` as it is (the
    caller frames it with Content-Length). Refuses what would break the request's framing."""
    if not _is_token(method):
        raise ProtocolError("the request method is not a token")
    if not target or " " in target or not (target.isascii() and target.isprintable()):
        raise ProtocolError("the request target is empty or holds whitespace or controls")
    lines = [f"{method} {target} HTTP/1.1"]
    for name, value in headers:
        if not _is_token(name):
            raise ProtocolError("a request header name is not a token")
        if "\r" in value or "\n" in value or "\0" in value:
            raise ProtocolError("a request header value holds CR, LF or NUL")
        lines.append(f"{name}: {value}")
    lines += ("", "")
    return "\r\n".join(lines).encode() + body


class ResponseReader:
    """The response to one request of `method`: fed with `receive`, read with `next_event`,
    which gives a `Head` (after at most `INFORMATIONAL_HEADS` 1xx heads other than 101,
    skipped), then the body's data as `bytes` (all that the bytes received so far complete),
    then `END`; `NEED_DATA` whenever it must be fed first. After a `ProtocolError` the reader
    is spent."""

    __slots__ = (
        "_buffer",
        "_closed",
        "_error",
        "_informational",
        "_keep_alive",
        "_left",
        "_no_body",
        "_scan",
        "_state",
        "_tunnel",
    )

    def __init__(self, method: str) -> None:
        self._no_body = method == "HEAD"
        self._tunnel = method == "CONNECT"  # a 2xx head ends it: the tunnel's bytes follow
        self._buffer = bytearray()
        self._closed = False  # the peer closed its side
        # "head", then the body's framing: "length"; "chunk-size", "chunk-data", "chunk-end"
        # and "trailers"; or "until-close". Finally "done".
        self._state = "head"
        self._left = 0  # bytes of the body ("length") or of the chunk ("chunk-data") to come
        self._scan = 0  # where to look on for the end of an incomplete head or trailer section
        self._keep_alive = False
        self._informational = 0  # 1xx heads skipped so far
        self._error: ProtocolError | None = None  # for the next call, after the data before it

    def receive(self, data: bytes) -> None:
        """Bytes the peer sent next; `b""` when it closed the connection."""
        if data:
            self._buffer += data
        else:
            self._closed = True

    @property
    def reusable(self) -> bool:
        """The response ended, framed, over HTTP/1.1 without `Connection: close`, and nothing
        beyond it arrived: the connection may carry another exchange."""
        return self._state == "done" and self._keep_alive and not self._buffer and not self._closed

    @property
    def overrun(self) -> bool:
        """Bytes came after the response's end (a tunnel's, after a CONNECT's 2xx head)."""
        return self._state == "done" and bool(self._buffer)

    def next_event(self) -> Head | bytes | Marker:
        if self._error:
            raise self._error
        if self._state == "head":
            head = self._head()
            if head is not None:
                return head
        else:
            data = self._body()
            if data:
                return data
            if self._state == "done":
                return END
        if self._closed:
            where = "the response head" if self._state == "head" else "the body's end"
            raise ProtocolError(f"the connection closed before {where}")
        return NEED_DATA

    # ---- the head ------------------------------------------------------------------------

    def _head(self) -> Head | None:
        """The final response's head, once all of it came (1xx heads skipped on the way)."""
        while (lines := self._section()) is not None:
            if not lines:
                raise ProtocolError("the response has no status line")
            status, http11 = _status(lines[0])
            headers = [_field(line) for line in lines[1:]]
            if status == 101:
                raise ProtocolError("the server switched protocols unasked")
            if status >= 200:
                self._frame(status, http11, headers)
                return Head(status, headers)
            self._informational += 1
            if self._informational > INFORMATIONAL_HEADS:
                raise ProtocolError("too many informational (1xx) responses")
        return None

    def _frame(self, status: int, http11: bool, headers: list[tuple[str, str]]) -> None:
        """Choose the body's framing (RFC 9112 section 6.3), and whether the connection
        outlives it."""
        coding: list[str] = []
        lengths: list[str] = []
        connection: list[str] = []
        for name, value in headers:
            if name == "transfer-encoding":
                coding += value.split(",")
            elif name == "content-length":
                lengths += value.split(",")
            elif name == "connection":
                connection += value.lower().split(",")
        self._keep_alive = http11 and "close" not in (token.strip() for token in connection)
        if self._no_body or status in _NO_BODY_STATUSES or (self._tunnel and status < 300):
            self._state = "done"
        elif coding:  # it wins over Content-Length, and a response with both is not trusted
            self._keep_alive &= not lengths
            self._state = "chunk-size" if coding[-1].strip().lower() == "chunked" else "until-close"
        elif lengths:
            self._left = _content_length(lengths)
            self._state = "length"
        else:
            self._state = "until-close"

    def _section(self) -> list[bytes] | None:
        """Once a whole head or trailer section (its lines, then a blank line) is buffered:
        takes it and gives its lines, their ends stripped; None before. Bounded by
        RESPONSE_HEAD_BYTES, complete or not."""
        buffer = self._buffer
        if buffer.startswith(b"\n"):
            end = 1
        elif buffer.startswith(b"\r\n"):
            end = 2
        else:
            lf, crlf = buffer.find(b"\n\n", self._scan), buffer.find(b"\n\r\n", self._scan)
            if lf < 0 and crlf < 0:
                if len(buffer) > RESPONSE_HEAD_BYTES:
                    raise ProtocolError("a response head or trailer section is too long")
                self._scan = max(len(buffer) - 2, 0)
                return None
            end = lf + 2 if crlf < 0 or 0 <= lf < crlf else crlf + 3
        if end > RESPONSE_HEAD_BYTES:
            raise ProtocolError("a response head or trailer section is too long")
        section = bytes(buffer[:end])
        del buffer[:end]
        self._scan = 0
        return [_line(raw) for raw in section.split(b"\n")[:-2]]

    # ---- the body ------------------------------------------------------------------------

    def _body(self) -> bytes:
        """All the body data the buffer completes now (maybe none), moving the state on."""
        buffer, state = self._buffer, self._state
        if state == "until-close":
            data = bytes(buffer)
            buffer.clear()
            if self._closed:
                self._state = "done"
            return data
        if state == "length":
            data = self._take()
            if not self._left:
                self._state = "done"
            return data
        return self._chunks()

    def _chunks(self) -> bytes:
        """The data of all the chunks the buffer completes now (maybe none). A framing error
        that follows some of it is raised by the next call, so that whatever the split, the
        data before the error is handed on."""
        buffer, state = self._buffer, self._state
        parts = []
        try:
            while state != "done":
                if state == "chunk-size":
                    line = self._chunk_line()
                    if line is None:
                        break
                    size = line.split(b";", 1)[0].rstrip(b" \t")
                    if not size or size.strip(_HEX):
                        raise ProtocolError("a chunk size is not a hexadecimal number")
                    self._left = int(size, 16)
                    state = "chunk-data" if self._left else "trailers"
                elif state == "chunk-data":
                    parts.append(self._take())
                    if self._left:
                        break
                    state = "chunk-end"
                elif state == "chunk-end":
                    if buffer.startswith(b"\n"):
                        del buffer[:1]
                    elif buffer.startswith(b"\r\n"):
                        del buffer[:2]
                    elif not buffer or buffer == b"\r":
                        break
                    else:
                        raise ProtocolError("a chunk's data does not end with its line end")
                    state = "chunk-size"
                else:  # "trailers": read and dropped
                    trailers = self._section()
                    if trailers is None:
                        break
                    for line in trailers:
                        _field(line)
                    state = "done"
        except ProtocolError as error:
            if not parts:
                raise
            self._error = error
        else:
            self._state = state
        return b"".join(parts)

    def _take(self) -> bytes:
        """What the buffer holds of the body's or the chunk's bytes still to come."""
        n = min(self._left, len(self._buffer))
        data = bytes(self._buffer[:n])
        del self._buffer[:n]
        self._left -= n
        return data

    def _chunk_line(self) -> bytes | None:
        """A chunk-size line (its end stripped) once all of it came; bounded by
        CHUNK_LINE_BYTES, complete or not."""
        buffer = self._buffer
        end = buffer.find(b"\n") + 1
        if not end:
            if len(buffer) > CHUNK_LINE_BYTES:
                raise ProtocolError("a chunk-size line is too long")
            return None
        if end > CHUNK_LINE_BYTES:
            raise ProtocolError("a chunk-size line is too long")
        raw = bytes(buffer[: end - 1])
        del buffer[:end]
        return _line(raw)


def _is_token(text: str) -> bool:
    return bool(text) and not text.strip(_TCHAR)


def _line(raw: bytes) -> bytes:
    """A line without its LF and the CR before it; a CR anywhere else is refused."""
    line = raw[:-1] if raw.endswith(b"\r") else raw
    if b"\r" in line:
        raise ProtocolError("a bare CR in a line of the response")
    return line


def _status(line: bytes) -> tuple[int, bool]:
    """The status code of `HTTP/1.x SP 3DIGIT [SP reason]`, and whether it is HTTP/1.1."""
    version, code, rest = line[:8], line[9:12], line[12:]
    if (
        version not in (b"HTTP/1.1", b"HTTP/1.0")
        or line[8:9] != b" "
        or len(code) != 3
        or not code.isdigit()
        or code < b"100"
        or rest[:1] not in (b"", b" ")
    ):
        raise ProtocolError("a malformed status line")
    return int(code), version == b"HTTP/1.1"


def _field(line: bytes) -> tuple[str, str]:
    """A header (or trailer) line as (lower-cased name, value without surrounding blanks)."""
    if line.startswith((b" ", b"\t")):
        raise ProtocolError("a header line is folded (obsolete line folding)")
    name, colon, value = line.decode("latin-1").partition(":")
    if not colon:
        raise ProtocolError("a header line has no colon")
    if name.endswith((" ", "\t")):
        raise ProtocolError("whitespace before a header's colon")
    if not _is_token(name):
        raise ProtocolError("a header name is not a token")
    if "\0" in value:
        raise ProtocolError("a header value holds NUL")
    return name.lower(), value.strip(" \t")


def _content_length(values: list[str]) -> int:
    """The one length all Content-Length values (repeated or comma-separated) give; at most
    18 digits, more than any body."""
    lengths = set()
    for value in values:
        digits = value.strip(" \t")
        if not (digits.isascii() and digits.isdigit()) or len(digits) > 18:
            raise ProtocolError("a Content-Length value is not a decimal number")
        lengths.add(int(digits))
    if len(lengths) != 1:
        raise ProtocolError("Content-Length values differ")
    return lengths.pop()
