"""Reports: what a session stores as its result, cut into pages that each fit a frame.

Pure: bytes in, records out. The server owns the file (written whole, atomically); this module
only encodes, decodes and pages. A stored report is a JSON object {"body", "revision",
"sha256"}; an older plain-text report file is still read, as revision 0.
"""

from __future__ import annotations

import json

from melchior.limits import REPORT_PAGE


class Report:
    __slots__ = ("_sha256", "body", "edges", "revision")

    def __init__(self, body: bytes, revision: int) -> None:
        self.body, self.revision = body, revision  # body: UTF-8 text
        self.edges = boundaries(body)
        self._sha256: str | None = None

    @property
    def sha256(self) -> str:
        if self._sha256 is None:
            import hashlib

            self._sha256 = hashlib.sha256(self.body).hexdigest()
        return self._sha256

    def summary(self) -> dict[str, object]:
        return {
            "revision": self.revision,
            "sha256": self.sha256,
            "bytes": len(self.body),
            "pages": len(self.edges) - 1,
        }


def cut(body: bytes, size: int) -> list[int]:
    """Offsets that cut UTF-8 `body` into pieces of at most `size` bytes, never inside a
    character (so `size` must be at least 4). Always starts with 0 and ends with len(body); an
    empty body is one page."""
    edges = [0]
    while len(body) - edges[-1] > size:
        edge = edges[-1] + size
        while body[edge] & 0xC0 == 0x80:  # a continuation byte: back up to the start
            edge -= 1
        edges.append(edge)
    edges.append(len(body))
    return edges


def boundaries(body: bytes) -> list[int]:
    return cut(body, REPORT_PAGE)


def page(report: Report, index: int) -> str | None:
    edges = report.edges
    if not 0 <= index < len(edges) - 1:
        return None
    return report.body[edges[index] : edges[index + 1]].decode("utf-8")


def encode_stored(report: Report) -> bytes:
    doc = {
        "body": report.body.decode("utf-8"),
        "revision": report.revision,
        "sha256": report.sha256,
    }
    return json.dumps(doc, ensure_ascii=False).encode()


def decode_stored(data: bytes) -> Report:
    """A stored report; bytes that are not our JSON object are an older plain-text report."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("body"), str):
        revision = doc.get("revision")
        return Report(doc["body"].encode(), revision if isinstance(revision, int) else 0)
    return Report(data.decode("utf-8", errors="replace").encode(), 0)
