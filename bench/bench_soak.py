"""A soak: SOAK_TURNS one-line fixture turns in one session, in process.

Prints, at each checkpoint turn, the resident set size and the median wall and CPU time of
the WINDOW turns ending there (wall time includes the prompt's fsync, whose cost varies with
the disk, not the session), the turns at which the session compacted (the history nearing its
snapshot budget folds it, sessions/reader.py) and whether every run finished durable with a
revision; then reopens the session as a fresh attachment would. Target: turn time and RSS
flat within 10% between compactions, no cliff (before issue 19.8 the 10,000-part budget was
passed near turn 3,075 and each later turn re-read the whole file).

Run twice: with the built-in fixture provider (it finds its script from the end of the
request and sizes the request for its usage figure by what the turn added: a real provider
would send the whole history, which no change here can make flat); and with a constant
provider that answers "ok" without looking, which isolates the runner's and the session's own
cost per turn. Each run is its own process, so that its RSS is its own.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from magi_code.providers.base import Completed, ModelRequest, ProviderEvent, TextDelta
from magi_code.runner.events import Activity, Diagnostic, MessageDelta, RunEvent
from magi_code.runner.journal import SessionJournal
from magi_code.runner.setup import turn_setup
from magi_code.runner.startup import admit
from magi_code.runner.turn import TurnControl, run_turn
from magi_code.sessions import Selection, SessionStore
from magi_code.tools.approvals import ApprovalBroker

SOAK_TURNS = int(os.environ.get("SOAK_TURNS", "5000"))
CHECKPOINTS = (10, 1_000, 2_000, 3_000, 4_000, 5_000)
WINDOW = 100  # turns per median


class Counting:
    def __init__(self) -> None:
        self.compactions = 0
        self.warnings = 0

    def delta(self, event: MessageDelta) -> None:
        pass

    async def critical(self, event: RunEvent) -> None:
        if isinstance(event, Activity) and event.kind == "compaction" and event.state == "started":
            self.compactions += 1
        elif isinstance(event, Diagnostic):
            self.warnings += 1

    async def announce(self, approval_id: str, summary: str, expires_in_ms: int) -> None:
        pass


class Constant:
    """A provider whose cost does not depend on the request."""

    id = "constant"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        yield TextDelta("ok")
        yield Completed()


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def soak(constant: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        admitted = admit(str(workspace), {"MC_HOME": str(Path(tmp) / "home"), "PATH": "/usr/bin"})
        store = SessionStore(Path(admitted.paths.home))
        attachment = store.create(admitted.cwd, Selection("fixture", "fixture-model", None))
        path = store.path_of(attachment.session_id)
        times: list[float] = []
        cpu: list[float] = []
        compacted_at: list[int] = []
        warned_at: list[int] = []
        all_durable = True
        for turn in range(1, SOAK_TURNS + 1):
            counting = Counting()
            setup = turn_setup(
                admitted,
                ("fixture", None, None),
                attachment.session_id,
                os.urandom(8).hex(),
                ApprovalBroker(counting.announce),
            )
            if constant:
                setup.provider = Constant()
            journal = SessionJournal(attachment)
            started, started_cpu = time.perf_counter(), time.process_time()
            finished = await run_turn(setup, journal, counting, TurnControl(), f"question {turn}")
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
            all_durable &= finished.persistence == "durable" and finished.revision is not None
            if counting.compactions:
                compacted_at.append(turn)
            if counting.warnings:
                warned_at.append(turn)
            if turn in CHECKPOINTS:
                first = max(1, turn - WINDOW + 1)
                print(
                    f"turn {turn:>5}: RSS {rss_mb():6.1f} MB, median turn "
                    f"{statistics.median(times[-WINDOW:]) * 1000:5.2f} ms wall, "
                    f"{statistics.median(cpu[-WINDOW:]) * 1000:5.2f} ms CPU "
                    f"(turns {first}-{turn}); "
                    f"{attachment.history.part_count} history parts",
                    flush=True,
                )
        size = path.stat().st_size
        attachment.close()
        started = time.perf_counter()
        reopened, _ = store.open(attachment.session_id, admitted.cwd)
        opened = time.perf_counter() - started
        print(
            f"{SOAK_TURNS} turns: compactions at turns {compacted_at or 'none'}; warnings at "
            f"{_ranges(warned_at)}; every run durable with a revision: {all_durable}; slowest "
            f"turn {max(times) * 1000:.1f} ms; file {size / 1e6:.1f} MB reopened in "
            f"{opened * 1000:.0f} ms with {reopened.history.part_count} history parts"
        )
        reopened.close()


def _ranges(turns: list[int]) -> str:
    if not turns:
        return "none"
    return f"{len(turns)} turns from {turns[0]} to {turns[-1]}"


def main() -> None:
    for provider in ("fixture", "constant"):
        print(f"-- {provider} provider", flush=True)
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        command = [sys.executable, "-m", "bench.bench_soak", provider]
        subprocess.run(command, cwd=here, check=True)


if __name__ == "__main__":
    if sys.argv[1:]:
        anyio.run(soak, sys.argv[1] == "constant")
    else:
        main()
