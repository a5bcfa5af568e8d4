"""The wire: one encoding (JSON), three transports, two shapes (calls and events) plus replies.

Rules of this module (sans-I/O, like h11): bytes in, messages or refusals out. No sockets,
no files, no clock. It never raises on bad input: a decoder turns what it cannot read into a
`Refusal` carrying a closed code, and it never echoes the input back.

    call    {"call": "status", "args": []}                 answered by exactly one reply
    reply   {"ok": true, "family": 1, "n": 1, "result": [...]}   (`ok: false` adds "code")
    event   {"event": "listening", "at": "..."}             never answered

The tag key is `event`, everywhere, both directions; a message carrying another tag key
(FOREIGN_TAGS) is refused rather than guessed at. A reader refuses a family newer than its own
(it cannot know that shape) and tolerates an older one it still reads (MIN_FAMILY..FAMILY);
unknown fields are ignored.

Transports: argv (one JSON object on stdout), pipe (NDJSON, split on b"\\n" only), socket
(u32 big-endian length, then JSON). An oversize socket frame is refused and its declared bytes
are skipped, so the connection stays in step; an oversize pipe line is refused up to its newline.
"""

from __future__ import annotations

import struct

from melchior import strict_json
from melchior.limits import (
    FAMILY,
    FRAME_HEADER,
    MAX_ARGV,
    MAX_CALL,
    MAX_FRAME,
    MAX_LINE,
    MAX_TEXT,
    MIN_FAMILY,
)

TAG = "event"
SHAPES = ("call", TAG, "ok")
# Keys other wires have used to say what a message is. None of them may appear on this one.
FOREIGN_TAGS = frozenset({"type", "kind", "tag", "op", "method", "action", "msg_type", "evt"})

# The closed set of refusal codes. Nothing else ever crosses the wire as a reason.
CODES = frozenset(
    {
        # not UTF-8 JSON, a lone surrogate, duplicate keys, NaN, a number past the double
        # range (1e999), or nested too deep
        "bad_json",
        "bad_shape",  # not an object, or not exactly one of call/event/ok, or bad fields
        "bad_tag",  # carries a foreign tag key
        "frame_too_large",  # a frame or line over the limit
        "unknown_family",  # a family this reader does not know
        "unknown_call",  # a call this session does not answer
        "bad_args",  # arguments of the wrong number, type or size
        "unauthenticated",  # no hello yet, or a secret that does not match
        "forbidden",  # the walls do not let this caller do this
        "not_minter",  # only the session that minted a secret may end its session
        "unknown_session",  # no such session in the caller's view
        "gone",  # its socket existed but nobody answered (it was removed)
        "too_busy",  # connection or task limit reached
        "unknown_task",  # no such ask
        "task_final",  # the task is completed, failed, canceled or rejected: it moves no more
        "bad_transition",  # a move its state does not allow (back to submitted; late rejection)
        "no_report",  # nothing stored yet
        "changed",  # the report changed during a paged read
        "report_too_large",
        "usage",  # bad command line
        "no_identity",  # the process has no MAGI_MELCHIOR_* identity
        "unsafe_dir",  # runtime directory owned by another user or too open
        "path_too_long",  # the socket path cannot fit sun_path
        "in_use",  # the session's socket is already answered by a live process
        "timeout",
        "broken",  # the peer closed or broke the connection mid-call
        "harness_unavailable",  # `melchior models`: the harness CLI could not be run
        "harness_failed",  # `melchior models`: the harness answered with no catalog
    }
)


class Refusal:
    """What a decoder yields in place of a message it cannot accept."""

    __slots__ = ("code",)

    def __init__(self, code: str) -> None:
        self.code = code

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Refusal) and other.code == self.code

    def __hash__(self) -> int:
        return hash(self.code)

    def __repr__(self) -> str:
        return f"Refusal({self.code!r})"


TYPE_CHECKING = False  # typing costs a fast-starting `melchior tool` ~20 ms: types only
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    Message: TypeAlias = dict[str, Any]
    Item: TypeAlias = Message | Refusal


def reply(result: list[Any]) -> Message:
    return {"ok": True, "family": FAMILY, "n": len(result), "result": result}


def refusal(code: str) -> Message:
    assert code in CODES, code
    return {"ok": False, "family": FAMILY, "n": 0, "result": [], "code": code}


def call(name: str, args: list[Any] | None = None) -> Message:
    return {"call": name, "args": [] if args is None else args}


def event(name: str, **fields: Any) -> Message:
    return {TAG: name, **fields}


def text_ok(value: object, limit: int = MAX_TEXT) -> bool:
    """A string that encodes to UTF-8 (no lone surrogates) within `limit` bytes."""
    if not isinstance(value, str):
        return False
    try:
        return len(value.encode("utf-8")) <= limit
    except UnicodeEncodeError:
        return False


# ---------------------------------------------------------------- encoding


def encode_json(message: Message) -> bytes:
    """The canonical encoding: compact, keys sorted, UTF-8. Every codec writes exactly this."""
    return strict_json.dumps(message).encode()


def encode_socket(message: Message) -> bytes:
    body = encode_json(message)
    return struct.pack(">I", len(body)) + body


def encode_pipe(message: Message) -> bytes:
    return encode_json(message) + b"\n"


def encode_argv(message: Message) -> bytes:
    return encode_json(message) + b"\n"


# ---------------------------------------------------------------- decoding


def parse(body: bytes, reader_family: int = FAMILY) -> Item:
    """One JSON document (a frame, a line, an argv stdout) to a checked message or refusal."""
    try:
        value = strict_json.loads(body.decode("utf-8"))
        # A `\\uD800`-style escape can decode to a lone surrogate, which no UTF-8 text can
        # hold: refused here, where it enters, so that nothing downstream fails to encode it.
        if b"\\ud" in body or b"\\uD" in body:
            encode_json(value)
    except (ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
        return Refusal("bad_json")
    return check(value, reader_family)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check(value: object, reader_family: int = FAMILY) -> Item:
    """Classify a decoded JSON value as call, event or reply, or refuse it."""
    if not isinstance(value, dict):
        return Refusal("bad_shape")
    if any(key in FOREIGN_TAGS for key in value):
        return Refusal("bad_tag")
    shapes = [key for key in SHAPES if key in value]
    if len(shapes) != 1:
        return Refusal("bad_shape")
    shape = shapes[0]
    if "family" in value or shape == "ok":
        family = value.get("family")
        if not isinstance(family, int) or isinstance(family, bool):
            return Refusal("bad_shape")
        if not MIN_FAMILY <= family <= reader_family:
            return Refusal("unknown_family")
    if shape == "call":
        name, args = value["call"], value.get("args")
        if not isinstance(name, str) or not 0 < len(name) <= MAX_CALL:
            return Refusal("bad_shape")
        if not isinstance(args, list):
            return Refusal("bad_shape")
    elif shape == TAG:
        if not isinstance(value[TAG], str) or not value[TAG]:
            return Refusal("bad_shape")
    else:
        result, n = value.get("result"), value.get("n")
        if not isinstance(value["ok"], bool) or not isinstance(result, list):
            return Refusal("bad_shape")
        if not _is_int(n) or n != len(result):
            return Refusal("bad_shape")
        if not value["ok"] and not isinstance(value.get("code"), str):
            return Refusal("bad_shape")
    return value


class SocketDecoder:
    """Length-prefixed frames. Feed any split of the bytes; get the same items."""

    def __init__(self, max_frame: int = MAX_FRAME, reader_family: int = FAMILY) -> None:
        self._buf = bytearray()
        self._skip = 0
        self._max = max_frame
        self._family = reader_family

    def feed(self, data: bytes) -> list[Item]:
        self._buf += data
        out: list[Item] = []
        while True:
            if self._skip:
                dropped = min(self._skip, len(self._buf))
                del self._buf[:dropped]
                self._skip -= dropped
                if self._skip:
                    return out
            if len(self._buf) < FRAME_HEADER:
                return out
            (size,) = struct.unpack_from(">I", self._buf)
            if size > self._max:
                del self._buf[:FRAME_HEADER]
                self._skip = size
                out.append(Refusal("frame_too_large"))
                continue
            if len(self._buf) < FRAME_HEADER + size:
                return out
            body = bytes(self._buf[FRAME_HEADER : FRAME_HEADER + size])
            del self._buf[: FRAME_HEADER + size]
            out.append(parse(body, self._family))

    @property
    def pending(self) -> bool:
        """True when a frame has started but not finished (a close now truncates it)."""
        return bool(self._buf) or bool(self._skip)


class PipeDecoder:
    """Newline-delimited JSON. Splits bytes on b"\\n" only; a blank line is ignored."""

    def __init__(self, max_line: int = MAX_LINE, reader_family: int = FAMILY) -> None:
        self._buf = bytearray()
        self._discarding = False
        self._max = max_line
        self._family = reader_family

    def feed(self, data: bytes) -> list[Item]:
        out: list[Item] = []
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                self._take(data[start:], out)
                return out
            self._take(data[start:newline], out)
            if self._discarding:
                self._discarding = False
            elif self._buf.strip():
                out.append(parse(bytes(self._buf), self._family))
            self._buf.clear()
            start = newline + 1

    def _take(self, piece: bytes, out: list[Item]) -> None:
        if self._discarding:
            return
        self._buf += piece
        if len(self._buf) > self._max:
            self._buf.clear()
            self._discarding = True
            out.append(Refusal("frame_too_large"))

    def close(self) -> list[Item]:
        """At end of input a last line without its newline is still a line."""
        if self._discarding or not self._buf.strip():
            return []
        item = parse(bytes(self._buf), self._family)
        self._buf.clear()
        return [item]


def decode_argv(stdout: bytes, reader_family: int = FAMILY) -> Item:
    """The argv transport's answer: exactly one JSON object (a trailing newline is allowed)."""
    body = stdout[:-1] if stdout.endswith(b"\n") else stdout
    if len(body) > MAX_ARGV:
        return Refusal("frame_too_large")
    if b"\n" in body:
        return Refusal("bad_json")
    return parse(body, reader_family)
