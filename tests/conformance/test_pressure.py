"""A client that stops reading during a fast stream, over real pipes: deltas give way to
responses and critical events, and their part numbers show a gap only where text was lost."""

import json
import time
from pathlib import Path

import pytest

from magi_code.client import environment
from support.sessions import script

from .turns import PausableClient, attach, delta_parts, reconciled, start, until

STALL_S = 0.4


def pausable(workspace: Path, home: Path) -> PausableClient:
    return PausableClient.spawn(cwd=workspace, env=environment(home))


@pytest.mark.parametrize("method", ["turn.cancel", "status"])
def test_a_stalled_reader_still_gets_its_response_and_the_terminal(
    workspace: Path, home: Path, method: str
) -> None:
    with pausable(workspace, home) as child:
        sid = attach(child)
        run_id = start(child, sid, script({"text": "y" * 500, "repeat": 2_000, "hang": True}))
        until(child, "message.delta")
        child.reading.clear()
        time.sleep(STALL_S)  # deltas fill the pipe, the output queue and the channel
        ids = {"session_id": sid, "run_id": run_id}
        request_id = child.send(method, ids if method == "turn.cancel" else {})
        time.sleep(STALL_S / 2)  # the response waits behind the deltas
        child.reading.set()
        answer = child.result(request_id, timeout=10)
        if method == "status":
            assert answer["run_id"] == run_id
            child.request("turn.cancel", ids)
        else:
            assert answer == {"cancellation_requested": True}
        finished = until(child, "run.finished", timeout=10)[-1].data
        assert (finished["run_id"], finished["outcome"]) == (run_id, "cancelled")
        assert child.request("shutdown") == {"state": "stopping"}
        assert child.process.wait(10) == 0


def test_coalesced_deltas_leave_no_part_gap(workspace: Path, home: Path) -> None:
    # 3,600 distinct characters as 1-character deltas: more than the pipe, the output queue
    # and the channel's delta half hold one by one, less than merging into one queued delta
    # (LIVE_CHUNK_BYTES) absorbs, so nothing is dropped.
    text = "".join(f"{n:05d}," for n in range(600))
    with pausable(workspace, home) as child:
        sid = attach(child)
        start(child, sid, "fixture:" + json.dumps([{"text": text, "deltas": len(text)}]))
        until(child, "message.delta")
        child.reading.clear()
        time.sleep(STALL_S)  # the channel merges 1-character deltas into queued ones
        child.reading.set()
        events = until(child, "run.finished")
        assert events[-1].data["outcome"] == "completed"
        (message, parts), *others = delta_parts(events).items()
        assert not others and reconciled(events)[message] == text
        assert len(parts) < len(text)  # the stall did make the channel merge deltas
        numbers = [part for part, _ in parts]
        first = numbers[0]  # the delta `until` consumed was part 0 or earlier
        assert numbers == list(range(first, first + len(numbers)))
        assert text.endswith("".join(piece for _, piece in parts))  # nothing was lost
