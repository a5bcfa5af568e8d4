"""Framing, envelope and request-id rules over real pipes, each bound at its edge."""

import fcntl
import json
import subprocess
import time
from pathlib import Path

import pytest

from magi_code import limits
from magi_code.client import ChildGone, LocalAgentClient, environment, serve_command

from .conftest import Spawn, frame, initialize


def padded(request_id: str, size: int, cr: bool = False) -> bytes:
    """A status request of exactly `size` bytes before the LF (a CR counted when present)."""
    body = frame(request_id, "status")[:-1]
    fill = size - len(body) - (1 if cr else 0)
    assert fill >= 0
    return body[:-1] + b" " * fill + b"}" + (b"\r" if cr else b"") + b"\n"


def error_of(child: LocalAgentClient, request_id: str | None) -> str:
    response = child.wait(request_id, timeout=15)
    assert "result" not in response
    code: str = response["error"]["code"]
    assert set(response["error"]) == {"code"}
    return code


@pytest.mark.parametrize("cr", [False, True])
def test_frame_at_the_limit_is_served(spawn: Spawn, cr: bool) -> None:
    child = spawn()
    initialize(child)
    data = padded("big", limits.FRAME_BYTES, cr=cr)
    assert len(data) == limits.FRAME_BYTES + 1
    child.send_raw(data)
    assert child.result("big")["readiness"] == "ready"


@pytest.mark.parametrize("cr", [False, True])
def test_frame_one_byte_over_is_refused_and_closes(spawn: Spawn, cr: bool) -> None:
    child = spawn()
    initialize(child)
    child.send_raw(padded("big", limits.FRAME_BYTES + 1, cr=cr))
    assert error_of(child, None) == "frame_too_large"
    # The child closes without draining what follows; stdin stays open on our side.
    assert child.process.wait(timeout=10) == 0
    assert child.frames[-1]["error"] == {"code": "frame_too_large"}


def test_oversize_detected_on_byte_65537_without_lf(spawn: Spawn) -> None:
    child = spawn()
    child.send_raw(b"x" * limits.FRAME_BYTES)
    time.sleep(0.3)  # nothing to await: prove no error arrives for 65,536 bytes
    assert child.frames == []
    child.send_raw(b"x")
    assert error_of(child, None) == "frame_too_large"
    assert child.process.wait(timeout=10) == 0


def nested(depth: int) -> bytes:
    # The envelope and params are 2 containers; the rest nests inside params.
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    return (
        b'{"protocol":"magi-code.local-agent","version":1,"id":"d","method":"status",'
        + f'"params":{{"x":{inner}}}}}\n'.encode()
    )


def test_depth_edge(spawn: Spawn) -> None:
    child = spawn()
    initialize(child)
    child.send_raw(nested(limits.JSON_DEPTH))
    assert error_of(child, "d") == "invalid_params"
    child.send_raw(nested(limits.JSON_DEPTH + 1))
    assert error_of(child, None) == "invalid_frame"
    assert child.request("status")["readiness"] == "ready"


BAD = [
    (b"\n", "invalid_frame", None),
    (b"\xff\xfe{}\n", "invalid_request", None),
    (b"{not json}\n", "invalid_request", None),
    (b"[1,2]\n", "invalid_request", None),
    (
        b'{"protocol":"magi-code.local-agent","version":1,"id":"a","method":"status","params":{},'
        b'"x":1}\n',
        "invalid_request",
        "a",
    ),
    (
        b'{"protocol":"magi-code.local-agent","version":1,"id":"b","method":"status"}\n',
        "invalid_request",
        "b",
    ),
    (
        b'{"protocol":"magi-code.local-agent","version":1,"id":"c","id":"c","method":"status",'
        b'"params":{}}\n',
        "invalid_request",
        None,
    ),
    (
        b'{"protocol":"magi-code.local-agent","version":1,"id":"e","method":"status",'
        b'"params":{"k":1,"k":2}}\n',
        "invalid_params",
        "e",
    ),
    (
        b'{"protocol":"magi-code.local-agent","version":1,"id":"f","method":"status",'
        b'"params":[]}\n',
        "invalid_params",
        "f",
    ),
    (
        b'{"protocol":"magi-code.local-agent","version":1,"id":"g","method":"status",'
        b'"params":{"k":NaN}}\n',
        "invalid_request",
        None,
    ),
    (frame("bad id", "status"), "invalid_request", None),
    (frame(7, "status"), "invalid_request", None),
    (frame(None, "status"), "invalid_request", None),
    (frame("x" * (limits.ID_BYTES + 1), "status"), "invalid_request", None),
    (frame("h", "sta tus"), "invalid_request", "h"),
    (frame("i", "teleport"), "unsupported_method", "i"),
    (frame("j", "session.destroy"), "unsupported_method", "j"),
    (frame("k", "status", {"extra": True}), "invalid_params", "k"),
]


@pytest.mark.parametrize(("data", "code", "request_id"), BAD)
def test_bad_requests_answer_a_code_and_keep_the_connection(
    spawn: Spawn, data: bytes, code: str, request_id: str | None
) -> None:
    child = spawn()
    initialize(child)
    child.send_raw(data)
    response = child.wait(request_id, timeout=15)
    assert response["error"] == {"code": code}
    assert response["id"] == request_id
    assert len(json.dumps(response)) < 400  # no echo of the input
    assert child.request("status")["readiness"] == "ready"


def test_longest_valid_id(spawn: Spawn) -> None:
    child = spawn()
    initialize(child)
    child.send_raw(frame("x" * limits.ID_BYTES, "status"))
    assert child.result("x" * limits.ID_BYTES)["readiness"] == "ready"


@pytest.mark.parametrize(
    "override",
    [{"protocol": "other"}, {"version": 2}, {"version": "1"}, {"version": True}, {"version": 1.0}],
)
def test_protocol_mismatch_closes(spawn: Spawn, override: dict[str, object]) -> None:
    child = spawn()
    child.send_raw(frame("m", "status", **override))
    assert error_of(child, "m") == "protocol_mismatch"
    assert child.process.wait(timeout=10) == 0


def test_duplicate_id_never_reexecutes(spawn: Spawn) -> None:
    child = spawn()
    child.send_raw(frame("s", "status"))
    assert error_of(child, "s") == "not_initialized"
    init = frame("once", "initialize", {"required_capabilities": ["status"]})
    child.send_raw(init)
    child.result("once")
    child.send_raw(init)
    assert error_of(child, "once") == "duplicate_id"
    child.send_raw(frame("s", "status"))
    assert error_of(child, "s") == "duplicate_id"
    assert child.request("status")["readiness"] == "ready"


def test_request_id_limit_counts_rejected_requests(spawn: Spawn) -> None:
    child = spawn()
    window = 16  # a client bounds its in-flight requests (the child buffers 32 frames)
    for start in range(0, limits.REQUESTS_PER_CHILD, window):
        ids = [f"n{i}" for i in range(start, start + window)]
        child.send_raw(b"".join(frame(i, "status") for i in ids))
        # every one is rejected (not_initialized) but spends its id
        assert all(error_of(child, i) == "not_initialized" for i in ids)
    child.send_raw(frame("n0", "status"))
    assert error_of(child, "n0") == "duplicate_id"
    child.send_raw(frame("one-more", "status"))
    assert error_of(child, "one-more") == "request_limit"
    assert child.process.wait(timeout=10) == 0


def test_eof_without_partial_frame_exits_0_silently(spawn: Spawn) -> None:
    child = spawn()
    initialize(child)
    assert child.finish() == 0
    assert len(child.frames) == 1


def test_eof_with_partial_frame_never_executes_it(spawn: Spawn, home: Path) -> None:
    child = spawn()
    child.send_raw(frame("p", "initialize", {"required_capabilities": ["status"]})[:-1])
    assert child.finish() == 0
    assert [f["error"] for f in child.frames] == [{"code": "incomplete_frame"}]
    assert child.frames[0]["id"] is None
    assert not home.exists()


F_SETPIPE_SZ = 1031


def stalled_child(workspace: Path, home: Path, **extra: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        serve_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=workspace,
        env=environment(home, **extra),
    )
    assert process.stdout is not None
    fcntl.fcntl(process.stdout.fileno(), F_SETPIPE_SZ, 4096)
    return process


def test_parent_that_stops_reading_hits_the_output_deadline(workspace: Path, home: Path) -> None:
    process = stalled_child(workspace, home)
    assert process.stdin is not None
    started = time.monotonic()
    # ~300-byte responses: 4 KiB of pipe holds a dozen, the rest stay pending (< 32).
    process.stdin.write(b"".join(frame(f"q{i}", "status") for i in range(30)))
    process.stdin.flush()
    code = process.wait(timeout=15)
    elapsed = time.monotonic() - started
    assert code == 1
    assert limits.OUTPUT_DEADLINE_MS / 1000 <= elapsed < limits.OUTPUT_DEADLINE_MS / 1000 + 3
    assert process.stderr is not None and process.stderr.read() == b""


def test_pending_output_overflow_exits_1(workspace: Path, home: Path) -> None:
    process = stalled_child(workspace, home)
    assert process.stdin is not None
    started = time.monotonic()
    process.stdin.write(b"".join(frame(f"q{i}", "status") for i in range(200)))
    process.stdin.flush()
    assert process.wait(timeout=15) == 1
    assert time.monotonic() - started < limits.OUTPUT_DEADLINE_MS / 1000
    assert process.stderr is not None and process.stderr.read() == b""


@pytest.mark.parametrize(("requests", "why"), [(30, "deadline"), (200, "overflow")])
def test_a_developer_is_told_why_output_failed(
    workspace: Path, home: Path, requests: int, why: str
) -> None:
    """With MC_DEBUG_STDERR=1 (never on the wire), the exit 1 of an output failure says which."""
    process = stalled_child(workspace, home, MC_DEBUG_STDERR="1")
    assert process.stdin is not None and process.stderr is not None
    process.stdin.write(b"".join(frame(f"q{i}", "status") for i in range(requests)))
    process.stdin.flush()
    assert process.wait(timeout=15) == 1
    assert f"magi-code: output failed: {why}\n" in process.stderr.read().decode()


def test_broken_output_exits_1(workspace: Path, home: Path) -> None:
    process = stalled_child(workspace, home)
    assert process.stdin is not None and process.stdout is not None
    process.stdout.close()
    process.stdin.write(frame("z", "status"))
    process.stdin.flush()
    assert process.wait(timeout=15) == 1
    assert process.stderr is not None and process.stderr.read() == b""


def test_status_is_answered_promptly_after_a_worst_case_frame(spawn: Spawn) -> None:
    """A frame that opens a string and then holds only escaped quotes once stalled the
    single-threaded loop for seconds in the nesting pre-check."""
    child = spawn()
    initialize(child)
    worst = b'"' + b'\\"' * ((limits.FRAME_BYTES - 1) // 2)
    started = time.monotonic()
    child.send_raw(worst + b"\n")
    assert child.request("status", timeout=5)["readiness"] == "ready"
    assert time.monotonic() - started < 1.0
    assert error_of(child, None) == "invalid_request"


def test_a_lost_child_says_its_exit_status_and_its_stderr(spawn: Spawn) -> None:
    child = spawn(MC_DEBUG_STDERR="1")
    initialize(child)
    assert child.stderr is not None
    deadline = time.monotonic() + 10
    while "magi-code: warming" not in child.stderr.read_text() and time.monotonic() < deadline:
        time.sleep(0.01)  # written once the initialize result is out
    child.process.kill()
    with pytest.raises(ChildGone, match=r"exit status: -9; its stderr ends: .*magi-code: "):
        child.next_event(timeout=10)
