"""What a misbehaving peer sends, over the real socket: text no UTF-8 can hold (refused with a
reply, never a dropped connection), report notes with malformed extras or from outside the fork
link, and connections that hold slots without proving themselves or finishing a frame."""

from __future__ import annotations

import socket
import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mel_harness import Melchior, Raw, Session, wait_until

from melchior import wire
from melchior.limits import (
    HELLO_TIMEOUT,
    MAX_CONNECTIONS,
    MAX_REPORT,
    MAX_UNPROVEN,
    RESERVED_SELF,
    REVISION_COUNT_MAX,
    REVISION_MAX,
    SHA256_HEX,
)

# A `melchior serve` whose frame and idle deadlines are short enough to watch in a test.
SHORT_FRAME, SHORT_IDLE = 0.5, 1.0
SHORT_SERVE = [
    sys.executable,
    "-c",
    "import sys; from melchior import cli, limits; "
    f"limits.FRAME_TIMEOUT = {SHORT_FRAME}; limits.IDLE_TIMEOUT = {SHORT_IDLE}; "
    "sys.exit(cli.main(['serve']))",
]
HALF_FRAME = struct.pack(">I", 40) + b'{"call":"hel'


@pytest.fixture
def pair(mel: Melchior) -> tuple[Session, Session]:
    parent = mel.start()
    return parent, mel.start(parent)


def frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def closed_within(sock: socket.socket, seconds: float) -> float | None:
    """How long until the server closes `sock` (reading and dropping what it sends), or None
    if it is still open after `seconds`."""
    start = time.monotonic()
    while (left := start + seconds - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            if not sock.recv(1 << 16):
                return time.monotonic() - start
        except TimeoutError:
            return None
        except ConnectionResetError:
            return time.monotonic() - start
    return None


def is_open(sock: socket.socket) -> bool:
    """True if the server has not closed `sock` (nothing to read, no end of input)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    finally:
        sock.settimeout(10.0)


# ---------------------------------------------------------------- text no UTF-8 can hold


def test_a_lone_surrogate_is_refused_with_a_reply(pair: tuple[Session, Session]) -> None:
    parent, child = pair
    raw = Raw(child.at)
    try:
        raw.send(frame(b'{"call":"hello","args":[{"id":"x","token":"\\ud800"}]}'))
        assert raw.read() == wire.refusal("bad_json")
        assert raw.hello(parent.identity)["ok"]
        for body in (
            b'{"call":"tell","args":["hi","report",{"revision":"\\ud800"}]}',  # as found
            b'{"call":"tell","args":["a\\uDFFF b"]}',
            b'{"call":"ask","args":["\\ud83d"]}',
            b'{"call":"task","args":["\\udc00@1"]}',
        ):
            raw.send(frame(body))
            assert raw.read() == wire.refusal("bad_json"), body
        assert raw.call("tell", ["still here"])["ok"]
        assert child.next_event()["text"] == "still here"
    finally:
        raw.close()
    # The harness's pipe refuses it the same way.
    assert child.proc.stdin is not None
    child.proc.stdin.write(b'{"event":"answer","task":"x@1","text":"\\ud800"}\n')
    child.proc.stdin.flush()
    assert child.next_event() == {"event": "refused", "code": "bad_json"}


# ---------------------------------------------------------------- frames that are not JSON

TELL = b'{"call":"tell","args":[%s]}'
# Every way a frame can fail to decode, and the code it is answered with: JSON that is not an
# object is `bad_shape` (the wire's more specific code); everything else is `bad_json`.
UNDECODABLE = [
    (b"{not json", "bad_json"),
    (b"{{{{", "bad_json"),
    (b"\xff\xfe{}", "bad_json"),  # not UTF-8
    (b'{"call":"tell","args":["\xc3"]}', "bad_json"),  # a UTF-8 sequence cut short
    (b"\xef\xbb\xbf{}", "bad_json"),  # a BOM
    (b"[1,2]", "bad_shape"),  # JSON, but an array
    (b'"call"', "bad_shape"),
    (b"", "bad_json"),
    (b"  ", "bad_json"),
    (b'{"call":"status","args":[]} {}', "bad_json"),
    (b'{"call":"status","args":[],}', "bad_json"),
    (b'{"call":"status","args":[1 2]}', "bad_json"),
    (b'{"call":"tell","args":["open', "bad_json"),
    (b'{"call":"tell","args":["\\q"]}', "bad_json"),
    (b'{"call":"tell","args":["\x01"]}', "bad_json"),  # a raw control character
    (b'{"call":"status","args":[],"call":"end"}', "bad_json"),  # a duplicate key
    (TELL % b"NaN", "bad_json"),
    (TELL % (b"[" * 100_000 + b"]" * 100_000), "bad_json"),  # nested too deep
    (b"[" * 100_000, "bad_json"),
    (b"{" * 100_000, "bad_json"),
    (TELL % (b"1" * 5000), "bad_json"),  # more digits than Python reads as an int
    (TELL % b"1e999", "bad_json"),  # a number no double holds
    (TELL % b"-1e400", "bad_json"),
]


def test_undecodable_frames_are_refused_and_the_connection_stays(
    mel: Melchior, tmp_path: Path
) -> None:
    """A frame that is not JSON is answered (`bad_json`), before `hello` and after, and the
    same connection answers the next good call. The session writes nothing to stderr."""
    stderr_path = tmp_path / "stderr"
    with stderr_path.open("wb") as stderr:
        parent = mel.start(stderr=stderr)
        child = mel.start(parent, stderr=stderr)
    raw = Raw(child.at)
    try:
        for body in (b"{not json", b"{{{{", b"\xff"):  # before the connection is proven
            raw.send(frame(body))
            assert raw.read() == wire.refusal("bad_json"), body
        assert raw.hello(parent.identity)["ok"]
        for body, code in UNDECODABLE:
            raw.send(frame(body))
            assert raw.read() == wire.refusal(code), body[:40]
            assert raw.call("status")["result"][0]["id"] == child.id, body[:40]
        # Several bad frames in one write, then a good one: each answered, in order.
        raw.send(b"".join(frame(body) for body, _ in UNDECODABLE[:4]) + frame(TELL % b'"hi"'))
        for _, code in UNDECODABLE[:4]:
            assert raw.read() == wire.refusal(code)
        assert raw.read()["ok"]
        assert child.next_event()["text"] == "hi"
    finally:
        raw.close()
    # The harness's pipe answers the same lines with `refused` events and goes on.
    assert child.proc.stdin is not None
    for line in (b"{not json", b"{{{{", b"\xff", b"[1]", b"[" * 100_000, TELL % b"1e999"):
        child.proc.stdin.write(line + b"\n")
        child.proc.stdin.flush()
        event = child.next_event()
        assert event["event"] == "refused" and event["code"] in ("bad_json", "bad_shape"), line
    raw = Raw(child.at)
    try:
        assert raw.hello(parent.identity)["ok"]
        assert raw.call("status")["ok"]
    finally:
        raw.close()
    assert child.close() == 0 and parent.close() == 0
    assert stderr_path.read_bytes() == b""


# ---------------------------------------------------------------- report notes


@pytest.fixture
def link(pair: tuple[Session, Session]) -> Iterator[tuple[Session, Session, Raw]]:
    """The parent, its child, and a connection to the parent proven as the child."""
    parent, child = pair
    raw = Raw(parent.at)
    assert raw.hello(child.identity)["ok"]
    yield parent, child, raw
    raw.close()


GOOD = [
    {},
    {"revision": 0, "sha256": "0" * SHA256_HEX, "bytes": 0},
    {"revision": REVISION_COUNT_MAX, "sha256": "f" * SHA256_HEX, "bytes": MAX_REPORT},
    {"revision": "r" * REVISION_MAX},
    {"revision": "v2 ~!"},
]
BAD = [
    {"revision": "\x01"},
    {"revision": "r" * (REVISION_MAX + 1)},
    {"revision": ""},
    {"revision": "é"},
    {"revision": REVISION_COUNT_MAX + 1},
    {"revision": -1},
    {"revision": True},
    {"revision": 1.5},
    {"revision": {"a": 1}},
    {"revision": ["x"]},
    {"sha256": "0" * (SHA256_HEX - 1)},
    {"sha256": "0" * (SHA256_HEX + 1)},
    {"sha256": "A" * SHA256_HEX},
    {"sha256": "g" * SHA256_HEX},
    {"sha256": None},
    {"bytes": -1},
    {"bytes": MAX_REPORT + 1},
    {"bytes": "1"},
    {"bytes": False},
    {"bytes": 2.0},
]


def deep(levels: int) -> object:
    value: object = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_report_note_extras_are_checked_at_their_edges(
    link: tuple[Session, Session, Raw],
) -> None:
    parent, child, raw = link
    for extra in GOOD:
        answer = raw.call("tell", ["stored", "report", {**extra, "pages": 3, "other": [1]}])
        assert answer["ok"], extra
        assert parent.next_event() == {
            "event": "message",
            "who": child.label,
            "sort": "report",
            "text": "stored",
            **extra,
        }
    for extra in [*BAD, {"revision": deep(500)}, {"bytes": {"n": 1}}, {"sha256": deep(3)}]:
        assert raw.call("tell", ["stored", "report", extra])["code"] == "bad_args", extra
    # Nothing was delivered for the refused notes: the next event is this one.
    assert raw.call("tell", ["marker"])["ok"]
    assert parent.next_event()["text"] == "marker"


def test_only_a_child_sends_report_notes(mel: Melchior, pair: tuple[Session, Session]) -> None:
    parent, child = pair
    sibling = mel.start(parent)
    # A sibling, the parent (down the link) and the child to a session not its parent.
    for caller, target in ((sibling, child), (parent, child), (child, sibling)):
        raw = Raw(target.at)
        try:
            assert raw.hello(caller.identity)["ok"]
            answer = raw.call("tell", ["done", "report", {"revision": 1}])
            assert answer["code"] == "forbidden", (caller.id, target.id)
            assert raw.call("tell", ["done", "report"])["code"] == "forbidden"
            assert raw.call("tell", ["done", "note"])["ok"]
            assert target.next_event()["sort"] == "note"
        finally:
            raw.close()
    # The child's own report reaches its parent as a report note.
    answer, code = child.tool("--verb=report", "--message=the parser is done")
    assert code == 0
    note = parent.next_event()
    assert (note["sort"], note["who"], note["revision"]) == ("report", child.label, 1)
    assert (note["sha256"], note["bytes"]) == (answer["result"][0]["sha256"], 18)


# ---------------------------------------------------------------- slots and deadlines


def half_open(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10.0)
    sock.connect(path)
    sock.sendall(HALF_FRAME)
    return sock


def test_half_open_connections_lock_nobody_out(pair: tuple[Session, Session]) -> None:
    parent, child = pair
    opened = time.monotonic()
    held = [half_open(child.at) for _ in range(MAX_CONNECTIONS)]
    try:
        answer, code = parent.exec_tool("--verb=status", f"--who={child.id}")
        assert code == 0 and answer["result"][0]["id"] == child.id, answer
        answer, code = child.exec_tool("--verb=status")
        assert code == 0 and answer["result"][0]["id"] == child.id, answer
        # The ones that gave their slots up are gone at once, the rest by the hello deadline.
        for sock in held:
            left = opened + HELLO_TIMEOUT + 2.0 - time.monotonic()
            assert closed_within(sock, left) is not None
        assert time.monotonic() - opened >= HELLO_TIMEOUT - 0.1
    finally:
        for sock in held:
            sock.close()


def test_unproven_connections_at_their_edge(pair: tuple[Session, Session]) -> None:
    _, child = pair
    held = [half_open(child.at) for _ in range(MAX_UNPROVEN)]
    try:
        assert all(is_open(sock) for sock in held)
        held.append(half_open(child.at))  # one more: the oldest gives its slot up
        assert closed_within(held[0], 1.0) is not None
        assert all(is_open(sock) for sock in held[1:])
    finally:
        for sock in held:
            sock.close()


def test_a_slow_drip_before_hello_is_closed_by_the_hello_deadline(
    pair: tuple[Session, Session],
) -> None:
    _, child = pair
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(child.at)
    start = time.monotonic()
    try:
        for byte in frame(b'{"call":"hello","args":[{}]}'):
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            if closed_within(sock, 0.3) is not None:
                break
        elapsed = time.monotonic() - start
        assert HELLO_TIMEOUT - 0.1 <= elapsed <= HELLO_TIMEOUT + 1.0, elapsed
    finally:
        sock.close()


def test_proven_connections_at_their_edge(pair: tuple[Session, Session]) -> None:
    parent, child = pair
    peers = []
    try:
        for _ in range(MAX_CONNECTIONS):
            peers.append(Raw(child.at))
            assert peers[-1].hello(parent.identity)["ok"]
        extra = Raw(child.at)
        assert extra.hello(parent.identity)["code"] == "too_busy"
        assert closed_within(extra.sock, 1.0) is not None
        # The session itself still gets in: its reserved slots, and no more.
        own = []
        for _ in range(RESERVED_SELF):
            own.append(Raw(child.at))
            assert own[-1].hello(child.identity)["ok"]
            assert own[-1].call("status")["ok"]
        late = Raw(child.at)
        assert late.hello(child.identity)["code"] == "too_busy"
        peers.extend([extra, late, *own])
        # A slot let go is taken again.
        peers.pop(0).close()

        def one_more() -> bool:
            again = Raw(child.at)
            peers.append(again)
            return bool(again.hello(parent.identity)["ok"])

        wait_until(one_more)
    finally:
        for raw in peers:
            raw.close()


def test_a_frame_has_an_absolute_deadline(mel: Melchior) -> None:
    parent = mel.start()
    child = mel.start(parent, command=SHORT_SERVE)
    raw = Raw(child.at)
    try:
        assert raw.hello(parent.identity)["ok"]
        body = wire.encode_socket(wire.call("status"))
        raw.send(body[:5])  # a frame begun
        start = time.monotonic()
        for byte in body[5:-1]:  # one byte at a time, each well inside any per-byte timeout
            if closed_within(raw.sock, 0.1) is not None:
                break
            raw.send(bytes([byte]))
        elapsed = time.monotonic() - start
        assert SHORT_FRAME - 0.05 <= elapsed <= SHORT_FRAME + 1.0, elapsed
    finally:
        raw.close()
    # A proven connection that says nothing is closed after the idle deadline, not before.
    raw = Raw(child.at)
    try:
        assert raw.hello(parent.identity)["ok"]
        assert closed_within(raw.sock, SHORT_IDLE - 0.3) is None
        assert raw.call("status")["ok"]
        assert closed_within(raw.sock, SHORT_IDLE + 1.0) is not None
    finally:
        raw.close()
