"""Code Mode against direct tool calls: ten reads in one turn, in process, on the fixture provider.

Three ways to read the same ten files in one turn:
- direct, one call per model round (the usual agent loop): 11 model requests;
- direct, ten calls in one model round (parallel tool calls): 2 model requests;
- one `code` call whose program makes ten bridged `read_file` calls: 2 model requests.
Prints the median turn time of each over TURNS turns, with the model requests it made, first
with the instant fixture model, then with a simulated round trip of LATENCY_MS per request
(what a real provider costs, where Code Mode's saving lies); then the cost of one bridged call
and of a program's interpreter (a program that calls nothing, less a turn of direct reads).
The baseline is the first way.
"""

import json
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from magi_code.providers.base import ModelRequest, Provider, ProviderEvent
from magi_code.runner.events import MessageDelta, RunEvent
from magi_code.runner.journal import SessionJournal
from magi_code.runner.setup import turn_setup
from magi_code.runner.startup import admit
from magi_code.runner.turn import TurnControl, run_turn
from magi_code.sessions import Selection, SessionStore
from magi_code.tools.approvals import ApprovalBroker

FILES = 10
TURNS = 20
LATENCY_MS = 50


class Quiet:
    def delta(self, event: MessageDelta) -> None:
        pass

    async def critical(self, event: RunEvent) -> None:
        pass

    async def announce(self, approval_id: str, summary: str, expires_in_ms: int) -> None:
        pass


class Counted:
    """The fixture model, counting requests, with an optional round-trip delay."""

    id = "counted"

    def __init__(self, inner: Provider, latency_s: float) -> None:
        self.inner, self.latency_s, self.requests = inner, latency_s, 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self.requests += 1
        if self.latency_s:
            await anyio.sleep(self.latency_s)
        async for event in self.inner.stream(request):  # type: ignore[attr-defined]
            yield event


def read(n: int) -> dict[str, object]:
    return {"name": "read_file", "arguments": {"path": f"f{n}.txt"}}


PROGRAM = f"result = sum(len(tools.read_file(path=f'f{{n}}.txt')) for n in range({FILES}))"
WAYS = {
    "direct, one call a round": [{"tools": [read(n)]} for n in range(FILES)] + [{"text": "ok"}],
    "direct, ten calls in one round": [
        {"tools": [read(n) for n in range(FILES)]},
        {"text": "ok"},
    ],
    "code, ten bridged calls": [
        {"tools": [{"name": "code", "arguments": {"program": PROGRAM}}]},
        {"text": "ok"},
    ],
    "code, no call (interpreter only)": [
        {"tools": [{"name": "code", "arguments": {"program": "result = 0"}}]},
        {"text": "ok"},
    ],
}


async def measure(workspace: Path, home: Path, latency_s: float) -> dict[str, tuple[float, int]]:
    admitted = admit(str(workspace), {"MC_HOME": str(home), "PATH": "/usr/bin:/bin"})
    store = SessionStore(Path(admitted.paths.home))
    figures = {}
    for way, rounds in WAYS.items():
        times, requests = [], 0
        prompt = "fixture:" + json.dumps(rounds)
        for _ in range(TURNS):
            attachment = store.create(admitted.cwd, Selection("fixture", "fixture-model", None))
            setup = turn_setup(
                admitted, (None, None, None), attachment.session_id, "r", ApprovalBroker(_deny)
            )
            provider = setup.provider = Counted(setup.provider, latency_s)
            journal = SessionJournal(attachment)
            began = time.perf_counter()
            finished = await run_turn(setup, journal, Quiet(), TurnControl(), prompt)
            times.append(time.perf_counter() - began)
            assert finished.outcome == "completed", finished
            requests = provider.requests
            attachment.close()
        figures[way] = (statistics.median(times), requests)
    return figures


async def _deny(approval_id: str, summary: str, expires_in_ms: int) -> None:
    raise AssertionError("no approval expected: reads are allowed")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace, home = Path(tmp) / "w", Path(tmp) / "h"
        workspace.mkdir()
        home.mkdir()
        (home / "settings.toml").write_text("code_mode = true\n")
        for n in range(FILES):
            (workspace / f"f{n}.txt").write_text(f"file {n}\n" * 50)
        for latency_ms in (0, LATENCY_MS):
            figures = anyio.run(measure, workspace, home, latency_ms / 1000)
            base = figures["direct, one call a round"][0]
            where = "instant fixture model" if not latency_ms else f"{latency_ms} ms a request"
            print(f"ten reads in one turn, {where}: median of {TURNS} turns")
            for way, (seconds, requests) in figures.items():
                print(
                    f"  {way:34} {seconds * 1000:8.1f} ms  {requests:2} model requests  "
                    f"{seconds / base:5.2f}x the baseline"
                )
            if not latency_ms:
                bridged = figures["code, ten bridged calls"][0]
                alone = figures["code, no call (interpreter only)"][0]
                direct = figures["direct, ten calls in one round"][0]
                print(
                    f"  one bridged call: {(bridged - alone) / FILES * 1000:.2f} ms; "
                    f"a program's interpreter, start to stop: {(alone - direct) * 1000:.1f} ms "
                    "(the turns without reads apart)"
                )


if __name__ == "__main__":
    main()
