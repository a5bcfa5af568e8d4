"""A running command's output as a person watches it (tools/live_output.py), through the real
shell tool and real subprocesses: deltas arrive while the command runs, at most one per
LIVE_OUTPUT_INTERVAL_MS, each at most LIVE_OUTPUT_BYTES (what it skipped counted), a secret
split between two of them never shown, and the model's result untouched."""

import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import pytest

from magi_code.records import replace
from magi_code.tools.base import ToolContext
from magi_code.tools.limits import LIVE_OUTPUT_BYTES, LIVE_OUTPUT_INTERVAL_MS
from magi_code.tools.live_output import ToolOutputDelta
from magi_code.tools.shell import Shell

pytestmark = pytest.mark.anyio

WAIT_FOR_GO = "while [ ! -e go ]; do sleep 0.01; done"


class Watcher:
    def __init__(self) -> None:
        self.seen: list[tuple[float, ToolOutputDelta]] = []

    async def detail(self, event: Any) -> None:
        assert isinstance(event, ToolOutputDelta)
        self.seen.append((time.monotonic(), event))

    def text(self) -> str:
        return "".join(event.text for _, event in self.seen)


def watched(ctx: ToolContext, watcher: Watcher) -> ToolContext:
    return replace(ctx, detail=watcher.detail, activity_id="act-1")


async def test_output_arrives_while_the_command_runs(ctx: ToolContext, ws: Path) -> None:
    watcher, shell = Watcher(), Shell()
    args = shell.parse(f'{{"command": "echo first line; {WAIT_FOR_GO}; echo last line"}}')
    async with anyio.create_task_group() as tg:
        tg.start_soon(shell.run, args, watched(ctx, watcher))
        with anyio.fail_after(5):
            while "first line" not in watcher.text():
                await anyio.sleep(0.01)
        assert "last line" not in watcher.text()  # the command has not ended
        (ws / "go").touch()
    assert watcher.text() == "first line\nlast line\n"
    assert {(e.activity_id, e.name) for _, e in watcher.seen} == {("act-1", "shell")}


async def test_a_burst_is_coalesced_and_bounded_with_what_it_skipped_counted(
    ctx: ToolContext,
) -> None:
    watcher, shell = Watcher(), Shell()
    total = 50 * LIVE_OUTPUT_BYTES
    args = shell.parse(
        f'{{"command": "head -c {total} /dev/zero | tr \\"\\\\\\\\0\\" x; sleep 0.3; echo"}}'
    )
    await shell.run(args, watched(ctx, watcher))
    events = [event for _, event in watcher.seen]
    assert all(len(e.text.encode()) <= LIVE_OUTPUT_BYTES for e in events)
    assert sum(e.skipped_bytes for e in events) + len(watcher.text().encode()) == total + 1
    assert any(e.skipped_bytes for e in events)
    times = [at for at, _ in watcher.seen[:-1]]  # the last is sent at the end, not on a tick
    gaps = [later - earlier for earlier, later in pairwise(times)]
    assert all(gap >= LIVE_OUTPUT_INTERVAL_MS / 1000 * 0.9 for gap in gaps)


async def test_a_secret_split_between_two_deltas_is_never_shown(ctx: ToolContext) -> None:
    watcher, shell = Watcher(), Shell()
    secret = "sk-" + "A1b2C3d4E5f6G7h8J9k0"
    first, second = secret[:8], secret[8:]
    args = shell.parse(
        f'{{"command": "printf {first}; sleep {3 * LIVE_OUTPUT_INTERVAL_MS / 1000}; '
        f'printf \\"{second} done\\\\n\\""}}'
    )
    outcome = await shell.run(args, watched(ctx, watcher))
    assert secret in outcome.output  # the model's result is untouched
    assert first not in watcher.text() and second not in watcher.text()
    assert watcher.text().endswith(" done\n")
