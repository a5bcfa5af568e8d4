"""Why an MCP server failed to start, in words a person can act on: its exit status and the
bounded, redacted tail of its stderr (`StderrTail`) for a stdio server, the HTTP status or the
class of the connection failure for an HTTP one. Never its environment, headers or our
exception text. Sans-I/O: the transports feed it, the manager asks it."""

import httpx2

from magi_code.mcp.limits import MESSAGE_BYTES, STDERR_TAIL_BYTES, STDERR_TAIL_LINES
from magi_code.redact import redact


class StderrTail:
    """The last STDERR_TAIL_BYTES of a server's stderr; `text()` its last STDERR_TAIL_LINES
    lines, redacted, with control characters removed."""

    def __init__(self) -> None:
        self.kept = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.kept += chunk
        del self.kept[:-STDERR_TAIL_BYTES]

    def text(self) -> str:
        lines = self.kept.decode("utf-8", "replace").splitlines()
        kept = [_printable(line).rstrip() for line in lines[-STDERR_TAIL_LINES:]]
        return redact("\n".join(line for line in kept if line))


def stdio_reason(returncode: int | None, tail: StderrTail, connect_s: float) -> str:
    """Why a stdio server did not start: how it ended (or that it did not answer in time),
    then the tail of its stderr."""
    if returncode is None:
        said = f"it did not finish starting within {connect_s:g} s"
    elif returncode < 0:
        said = f"it was ended by signal {-returncode}"
    else:
        said = f"it exited with status {returncode}"
    words = tail.text()
    if not words:
        return f"{said}, saying nothing on stderr"
    indented = "\n".join(f"  {line}" for line in words.splitlines())
    return f"{said}; its stderr ended with:\n{indented}"


# Our words for an exchange http_answers.py refused (its REFUSED extension).
REFUSALS = {
    "unreachable": "the connection failed (refused, no such host, or timed out): is the "
    "server running?",
    "malformed": "its HTTP answer was malformed",
    "too_large": f"its answer was over {MESSAGE_BYTES} bytes",
    "compressed": "it sent a compressed answer",
}


def http_reason(
    status: int | None, refused: str | None, failure: BaseException | None, connect_s: float
) -> str:
    """Why an HTTP server did not start: the failed exchange, else its error status, else the
    class of the failure."""
    if refused is not None:
        return REFUSALS.get(refused, "the HTTP exchange failed")
    if status is not None:
        return f"it answered HTTP {status}"
    found = _httpx_error(failure)
    if isinstance(found, httpx2.ConnectError):
        return "the connection failed (refused, or no such host): is the server running?"
    if isinstance(found, httpx2.TimeoutException):
        return "the connection timed out"
    if found is not None:
        return "the HTTP exchange failed"
    if failure is None:
        return f"it did not finish starting within {connect_s:g} s"
    return "it did not complete the MCP handshake"


def _httpx_error(failure: BaseException | None) -> httpx2.HTTPError | None:
    """The HTTP error behind `failure`, through exception groups and causes."""
    seen = 0
    pending = [failure]
    while pending and seen < 64:  # bounded: a cycle of causes cannot hold us
        error = pending.pop()
        seen += 1
        if error is None:
            continue
        if isinstance(error, httpx2.HTTPError):
            return error
        if isinstance(error, BaseExceptionGroup):
            pending += error.exceptions
        pending += [error.__cause__, error.__context__]
    return None


def _printable(line: str) -> str:
    return "".join(c for c in line if c == "\t" or not (ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0))
