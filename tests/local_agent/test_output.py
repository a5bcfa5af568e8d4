"""Output frames and the writer queue: seq, size bound, overflow, deadline, partial writes."""

import json

import pytest

from magi_code.limits import FRAME_BYTES, OUTPUT_DEADLINE_MS, PENDING_OUTPUT_FRAMES
from magi_code.local_agent.output import (
    FrameEncoder,
    OutputFailed,
    OutputQueue,
    OversizeFrame,
    UnencodableFrame,
)


def test_seq_increases_and_skips_nothing_on_oversize() -> None:
    encoder = FrameEncoder("i")
    assert json.loads(encoder.response("a", {}))["seq"] == 1
    with pytest.raises(OversizeFrame):
        encoder.response("b", {"x": "y" * FRAME_BYTES})
    assert json.loads(encoder.error("c", "busy"))["seq"] == 2


def test_output_frame_edge_includes_lf() -> None:
    encoder = FrameEncoder("i")
    empty = len(encoder.response("a", {"x": ""}))
    fits = encoder.response("a", {"x": "y" * (FRAME_BYTES - empty)})
    assert len(fits) == FRAME_BYTES and fits.endswith(b"\n")
    with pytest.raises(OversizeFrame):
        encoder.response("a", {"x": "y" * (FRAME_BYTES - empty + 1)})


def test_overflow_at_the_limit() -> None:
    queue = OutputQueue()
    for _ in range(PENDING_OUTPUT_FRAMES):
        queue.push(b"x\n", 0.0)
    with pytest.raises(OutputFailed):
        queue.push(b"x\n", 0.0)


def test_deadline_not_reset_by_partial_writes() -> None:
    queue = OutputQueue()
    queue.push(b"abcdef\n", 10.0)
    calls = iter([3])

    def partial(view: memoryview) -> int:
        for n in calls:
            return n
        raise BlockingIOError

    queue.write_some(partial)  # partial progress, then the pipe is full
    deadline = 10.0 + OUTPUT_DEADLINE_MS / 1000
    assert queue.next_deadline() == deadline
    queue.check(deadline - 0.001)
    with pytest.raises(OutputFailed):
        queue.check(deadline)


def test_partial_writes_keep_order() -> None:
    queue = OutputQueue()
    queue.push(b"one\n", 0.0)
    queue.push(b"two\n", 0.0)
    written = bytearray()

    def write(view: memoryview) -> int:
        written.extend(view[:3])
        return min(3, len(view))

    queue.write_some(write)
    assert bytes(written) == b"one\ntwo\n" and len(queue) == 0


def test_broken_pipe_is_output_failure() -> None:
    queue = OutputQueue()
    queue.push(b"x\n", 0.0)

    def broken(view: memoryview) -> int:
        raise BrokenPipeError

    with pytest.raises(OutputFailed):
        queue.write_some(broken)


def test_text_that_is_not_unicode_is_refused_and_spends_no_seq() -> None:
    encoder = FrameEncoder("i")
    with pytest.raises(UnencodableFrame):
        encoder.event("message.delta", {"text": "a\ud800b"})
    assert json.loads(encoder.error("c", "busy"))["seq"] == 1


def test_run_events_take_only_the_lower_half() -> None:
    queue = OutputQueue()
    for _ in range(PENDING_OUTPUT_FRAMES // 2 - 1):
        queue.push(b"x\n", 0.0)
    assert queue.takes_events()
    queue.push(b"x\n", 0.0)
    assert not queue.takes_events()
