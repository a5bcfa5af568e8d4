"""Reports: what a session stores as its result, cut into pages that each fit a frame, and who
may read one whose session has ended.

Pure: bytes in, records out. The server owns the file (written whole, atomically, in the state
directory); this module only encodes, decodes, pages and judges. A stored report is a JSON
object {"body", "revision", "sha256", "owner"}; an older one without `owner`, or an older
plain-text report file (read as revision 0), is still read.

`owner` records what the walls need once the session and its registry entries are gone:
{"project", "id", "role", "parent", "key", "parent_key"}, where `key` and `parent_key` are the
sha256 digests of the owner's and its parent's secrets (never a secret). A finished session's
report is read by the fork link alone, its parent, or the session itself, proved by a secret
that matches one of those digests.
"""

from __future__ import annotations

from melchior import wire
from melchior.limits import (
    MAX_REPORT,
    REPORT_PAGE,
    REVISION_COUNT_MAX,
    REVISION_MAX,
    SHA256_HEX,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class Report:
    __slots__ = ("_sha256", "body", "edges", "owner", "revision")

    def __init__(self, body: bytes, revision: int, owner: dict[str, Any] | None = None) -> None:
        self.body, self.revision = body, revision  # body: UTF-8 text
        self.owner = owner
        self.edges = boundaries(body)
        self._sha256: str | None = None

    @property
    def sha256(self) -> str:
        if self._sha256 is None:
            from melchior.digests import sha256_hex

            self._sha256 = sha256_hex(self.body)
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


def read(report: Report | None, args: list[Any]) -> wire.Message:
    """The `report` call's answer: [page] or [page, revision], refused with `changed` when the
    revision moved."""
    index = args[0] if args else None
    if not 1 <= len(args) <= 2 or not isinstance(index, int) or isinstance(index, bool):
        return wire.refusal("bad_args")
    if report is None:
        return wire.refusal("no_report")
    if len(args) == 2 and args[1] != report.revision:
        return wire.refusal("changed")
    text = page(report, index)
    if text is None:
        return wire.refusal("bad_args")
    return wire.reply([{**report.summary(), "page": index, "text": text}])


def note_fields(extra: dict[str, Any]) -> dict[str, Any] | None:
    """What a `report` note carries beside its text, checked: `revision` (a count, or a short
    printable ASCII label), `sha256` (lowercase hex) and `bytes` (a size a report can have),
    each optional; other keys are dropped. None when one of them is malformed."""
    fields = {k: extra[k] for k in _NOTE_CHECKS if k in extra}
    return fields if all(_NOTE_CHECKS[k](v) for k, v in fields.items()) else None


def _count(value: object, top: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= top


def _label(value: object) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= REVISION_MAX
        and value.isascii()
        and value.isprintable()
    )


def _hex_digest(value: object) -> bool:
    return isinstance(value, str) and len(value) == SHA256_HEX and _HEX.issuperset(value)


_HEX = frozenset("0123456789abcdef")
_NOTE_CHECKS: dict[str, Callable[[object], bool]] = {
    "revision": lambda value: _count(value, REVISION_COUNT_MAX) or _label(value),
    "sha256": _hex_digest,
    "bytes": lambda value: _count(value, MAX_REPORT),
}


def owned_by(report: Report, key: str) -> bool:
    """Is this stored report the session's whose secret digests to `key`? (An id may be minted
    again once its session is gone; an older report without an owner is taken as its own.)"""
    from melchior.digests import same

    mine = report.owner.get("key") if report.owner else None
    return mine is None or (isinstance(mine, str) and same(mine, key))


def may_read(report: Report, reader: str, key: str) -> bool:
    """May `reader`, whose secret digests to `key`, read this report of an ended session? Only
    across the fork link (its parent) or as itself, and only with a recorded digest to prove
    it: a report with no owner record is read through its live session alone."""
    from melchior.digests import same

    owner = report.owner or {}
    for who, digest in (
        (owner.get("id"), owner.get("key")),
        (owner.get("parent"), owner.get("parent_key")),
    ):
        if who == reader and isinstance(digest, str) and same(digest, key):
            return True
    return False


def encode_stored(report: Report) -> bytes:
    doc: dict[str, Any] = {
        "body": report.body.decode("utf-8"),
        "revision": report.revision,
        "sha256": report.sha256,
    }
    if report.owner is not None:
        doc["owner"] = report.owner
    import json  # only where a report is stored or read: `melchior serve` boots without it

    return json.dumps(doc, ensure_ascii=False).encode()


def decode_stored(data: bytes) -> Report:
    """A stored report; bytes that are not our JSON object are an older plain-text report."""
    import json

    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        doc = None
    body = doc.get("body") if isinstance(doc, dict) else None
    if isinstance(body, str) and _encodable(body):
        revision, owner = doc.get("revision"), doc.get("owner")
        return Report(
            body.encode(),
            revision if isinstance(revision, int) else 0,
            owner if isinstance(owner, dict) else None,
        )
    return Report(data.decode("utf-8", errors="replace").encode(), 0)


def _encodable(text: str) -> bool:
    """False for a text holding a lone surrogate (a `\\ud800` escape in a damaged file)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
