"""A turn's own work does not grow with the session's history (issue 19.8, the soak).

Measured as memory, which unlike time does not depend on the machine's load: the peak a whole
turn allocates (replay, model request, appends, the snapshot after the run) is the same with
a long history as with a short one. Copying the history anywhere in a turn, as the snapshot,
the replay and the request each did, shows as a peak that grows by pointers per entry.
"""

import os
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from magi_code.providers.base import Completed, ModelRequest, ProviderEvent, TextDelta
from magi_code.runner.journal import SessionJournal
from magi_code.runner.setup import turn_setup
from magi_code.runner.startup import Admitted, admit
from magi_code.runner.turn import TurnControl, run_turn
from magi_code.sessions import Attachment, Selection, SessionStore
from magi_code.tools.approvals import ApprovalBroker
from runner.turn_world import Quiet

pytestmark = pytest.mark.anyio

SHORT, LONG = 100, 1_600  # turns of history; LONG stays below the fold (9,000 parts)
SLACK = 8 * 1024  # bytes; one copy of LONG's 3,200 parts is 25 KiB of pointers


class Constant:
    """Answers without looking at the request, so only the runner's own work is measured."""

    id = "constant"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        yield TextDelta("ok")
        yield Completed()


async def _turn(admitted: Admitted, attachment: Attachment, prompt: str) -> None:
    quiet = Quiet()
    setup = turn_setup(
        admitted,
        ("fixture", None, None),
        attachment.session_id,
        os.urandom(8).hex(),
        ApprovalBroker(quiet.announce),
    )
    setup.provider = Constant()
    finished = await run_turn(setup, SessionJournal(attachment), quiet, TurnControl(), prompt)
    assert finished.persistence == "durable" and finished.revision is not None


def _grow_to(attachment: Attachment, turns: int) -> None:
    """Append one-line turns as a run records them, without running them (fast)."""
    journal = SessionJournal(attachment)
    while attachment.history.part_count < 2 * turns:
        run = os.urandom(8).hex()
        number = attachment.history.part_count // 2
        journal.append(
            {"type": "user", "run_id": run, "message_id": f"u{number}", "text": f"q {number}"},
            fsync=False,
        )
        journal.append(
            {"type": "assistant", "run_id": run, "message_id": f"a{number}", "text": "ok"},
            fsync=False,
        )
        journal.append({"type": "run_finished", "run_id": run, "outcome": "completed"}, fsync=False)
        attachment.snapshot()


async def _peak_of_a_turn(admitted: Admitted, attachment: Attachment) -> int:
    await _turn(admitted, attachment, "warm up")  # the replay kept, the snapshot current
    tracemalloc.start()
    try:
        await _turn(admitted, attachment, "measured")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


async def test_a_turn_allocates_no_more_with_a_long_history(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    admitted = admit(str(workspace), {"MC_HOME": str(tmp_path / "home"), "PATH": "/usr/bin"})
    store = SessionStore(Path(admitted.paths.home))
    attachment = store.create(admitted.cwd, Selection("fixture", "fixture-model", None))
    _grow_to(attachment, SHORT)
    short = await _peak_of_a_turn(admitted, attachment)
    _grow_to(attachment, LONG)
    assert attachment.history.part_count >= 2 * LONG
    long = await _peak_of_a_turn(admitted, attachment)
    assert long < short + SLACK, (short, long)
    attachment.close()
