"""Bounded text for the model: line-by-line output under a byte budget, bounded line reads,
binary sniffing on open handles.

A budget is never exceeded silently: what did not fit is counted and noted.
"""

from typing import BinaryIO

from magi_code.tools.limits import BINARY_SNIFF_BYTES, LINE_CHARS, LINE_READ_BYTES


class Lines:
    """Collects lines until `limit` UTF-8 bytes; later lines are only counted."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.lines: list[str] = []
        self.dropped = 0

    @property
    def full(self) -> bool:
        return self.dropped > 0

    def add(self, line: str) -> bool:
        cost = len(line.encode("utf-8", "replace")) + 1
        if self.dropped or self.size + cost > self.limit:
            self.dropped += 1
            return False
        self.size += cost
        self.lines.append(line)
        return True

    def render(self, what: str) -> str:
        body = "\n".join(self.lines)
        if self.dropped:
            body += f"\n[... {self.dropped} more {what} not shown: output limit reached]"
        return body


def cut_line(line: str) -> str:
    if len(line) <= LINE_CHARS:
        return line
    return line[:LINE_CHARS] + f" [... line cut at {LINE_CHARS} characters]"


def decode_line(raw: bytes) -> str:
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", "replace")


def is_binary(handle: BinaryIO) -> bool:
    """Sniff the head for NUL and rewind."""
    head = handle.read(BINARY_SNIFF_BYTES)
    handle.seek(0)
    return b"\x00" in head


def read_line(handle: BinaryIO) -> bytes | None:
    """The next line, at most LINE_READ_BYTES of it (the rest is skipped); None at EOF."""
    head = handle.readline(LINE_READ_BYTES)
    if not head:
        return None
    if not head.endswith(b"\n"):
        while (rest := handle.readline(64 * 1024)) and not rest.endswith(b"\n"):
            pass
    return head
