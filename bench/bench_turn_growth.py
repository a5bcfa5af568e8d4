"""Per-turn cost against session size, in process on the fixture provider.

Prints the median time of a one-line turn (append the prompt, replay, stream, reconcile,
run_finished, fresh revision) in a fresh session and in a session pre-filled with ~8 MB of
history (PREFILL_TURNS prior turns with REPLY_BYTES replies, written directly as records and
then opened), and their ratio. Target: the pre-filled session within 2x of the fresh one.
"""

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from magi_code.runner.events import MessageDelta, RunEvent
from magi_code.runner.journal import SessionJournal
from magi_code.runner.setup import turn_setup
from magi_code.runner.startup import Admitted, admit
from magi_code.runner.turn import TurnControl, run_turn
from magi_code.sessions import Attachment, Selection, SessionStore
from magi_code.sessions.chunking import dumps
from magi_code.tools.approvals import ApprovalBroker

PREFILL_TURNS = 2_000
REPLY_BYTES = 3_800  # 2,000 of them stay within the 8 MiB snapshot budget
TURNS = 40
PROMPT = 'fixture:[{"text":"ok"}]'


class Quiet:
    def delta(self, event: MessageDelta) -> None:
        pass

    async def critical(self, event: RunEvent) -> None:
        pass

    async def announce(self, approval_id: str, summary: str, expires_in_ms: int) -> None:
        pass


def prefill(store: SessionStore, cwd: Path) -> str:
    """Write PREFILL_TURNS completed turns straight into a session file; return its ID."""
    session_id = store.new_id()
    store.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = store.path_of(session_id)
    reply = ("lorem ipsum dolor sit amet " * (REPLY_BYTES // 27 + 1))[:REPLY_BYTES]
    lines: list[dict[str, Any]] = [
        {"type": "session", "cwd": os.path.realpath(cwd), "created_at": "2026-01-01"}
    ]
    for n in range(PREFILL_TURNS):
        run = f"run{n}"
        lines += [
            {"type": "user", "message_id": f"u{n}", "run_id": run, "text": f"question {n}"},
            {"type": "assistant", "message_id": f"a{n}", "run_id": run, "text": reply},
            {"type": "run_finished", "run_id": run, "outcome": "completed", "error_code": None},
        ]
    data = "".join(dumps({"session_id": session_id, **r}) + "\n" for r in lines)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(data)
    return session_id


async def median_turn(admitted: Admitted, store: SessionStore, attachment: Attachment) -> float:
    times = []
    for _ in range(TURNS):
        started = time.perf_counter()
        quiet = Quiet()
        setup = turn_setup(
            admitted,
            ("fixture", None, None),
            attachment.session_id,
            os.urandom(8).hex(),
            ApprovalBroker(quiet.announce),
        )
        journal = SessionJournal(attachment, store.path_of(attachment.session_id))
        finished = await run_turn(setup, journal, quiet, TurnControl(), PROMPT)
        assert finished.outcome == "completed" and finished.revision is not None
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def measure() -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        admitted = admit(workspace, {"MC_HOME": str(Path(tmp) / "home"), "PATH": "/usr/bin"})
        store = SessionStore(admitted.paths.home)
        selection = Selection("fixture", "fixture-model", None)
        fresh = store.create(admitted.cwd, selection)
        fresh_time = await median_turn(admitted, store, fresh)
        fresh.close()
        session_id = prefill(store, admitted.cwd)
        size = store.path_of(session_id).stat().st_size
        filled, _ = store.open(session_id, admitted.cwd)
        filled_time = await median_turn(admitted, store, filled)
        filled.close()
        return fresh_time, filled_time, size


def main() -> None:
    fresh, filled, size = anyio.run(measure)
    print(
        f"one-line turn, in process: fresh session median {fresh * 1000:.2f} ms; session "
        f"pre-filled with {PREFILL_TURNS} turns ({size / 1e6:.1f} MB) median "
        f"{filled * 1000:.2f} ms over {TURNS} turns each; ratio {filled / fresh:.2f}x "
        f"(target <= 2x)"
    )


if __name__ == "__main__":
    main()
