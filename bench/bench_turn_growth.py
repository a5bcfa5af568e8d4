"""Per-turn cost against session size, in process.

Prints the median time of a one-line turn (append the prompt, replay, stream, reconcile,
run_finished, fresh revision) in a fresh session and in a session pre-filled with ~8 MB of
history (PREFILL_TURNS prior turns with REPLY_BYTES replies, written directly as records and
then opened), and their ratio; and the time to open the pre-filled session (a full read).
Target: the pre-filled session within 2x of the fresh one.

Two providers: the built-in fixture, whose usage estimate measures what each request added
to the last (a real provider pays for the whole history, by sending it), and a constant one
that answers "ok" without looking at the request, which isolates the runner's and the
session's own bookkeeping.
"""

import os
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from magi_code.providers.base import Completed, ModelRequest, ProviderEvent, TextDelta
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
        out.flush()
        os.fsync(out.fileno())  # or its writeback would be billed to the first turns' fsyncs
    return session_id


class Constant:
    """A provider whose cost does not depend on the request."""

    id = "constant"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        yield TextDelta("ok")
        yield Completed()


async def median_turn(
    admitted: Admitted, store: SessionStore, attachment: Attachment, constant: bool
) -> float:
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
        if constant:
            setup.provider = Constant()
        journal = SessionJournal(attachment)
        finished = await run_turn(setup, journal, quiet, TurnControl(), PROMPT)
        assert finished.outcome == "completed" and finished.revision is not None
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def measure(constant: bool) -> tuple[float, float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        admitted = admit(str(workspace), {"MC_HOME": str(Path(tmp) / "home"), "PATH": "/usr/bin"})
        store = SessionStore(Path(admitted.paths.home))
        selection = Selection("fixture", "fixture-model", None)
        fresh = store.create(admitted.cwd, selection)
        fresh_time = await median_turn(admitted, store, fresh, constant)
        fresh.close()
        session_id = prefill(store, admitted.cwd)
        size = store.path_of(session_id).stat().st_size
        started = time.perf_counter()
        filled, _ = store.open(session_id, admitted.cwd)
        opened = time.perf_counter() - started
        filled_time = await median_turn(admitted, store, filled, constant)
        filled.close()
        return fresh_time, filled_time, opened, size


def main() -> None:
    for constant in (False, True):
        fresh, filled, opened, size = anyio.run(measure, constant)
        name = "constant provider" if constant else "fixture provider"
        print(
            f"one-line turn, in process, {name}: fresh session median {fresh * 1000:.2f} ms; "
            f"session pre-filled with {PREFILL_TURNS} turns ({size / 1e6:.1f} MB) median "
            f"{filled * 1000:.2f} ms over {TURNS} turns each; ratio {filled / fresh:.2f}x "
            f"(target <= 2x); opening the pre-filled session took {opened * 1000:.0f} ms"
        )


if __name__ == "__main__":
    main()
