"""Time a one-line turn over A2A against the same turn over `magi-code exec`, and 16 contexts at
once on one `magi-code a2a serve`.

The A2A round trip is what a session's `a2a_NAME` tool does (a2a/remote.py): send the prompt
to a running server (a new context, so a new session there), stream the reply to its end. The
exec figure is the whole process, start to exit, as bench_exec.py times it. Target (issue 33):
the A2A round trip under 1.5x the exec turn. Then CONTEXTS calls at once, each its own context:
the wall time of all and each one's latency. The fixture model answers, so what is timed is
magi-code and the protocol, not a model.
"""

import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench.bench_exec import console_script, once
from magi_code.a2a.agents import RemoteAgentDef
from magi_code.a2a.remote import RemoteAgentTool
from magi_code.tools.base import ToolContext

RUNS = 20
CONTEXTS = 16
PROMPT = "say hello in one line"


def serve(home: Path, workspace: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A `magi-code a2a serve --port 0` taking CONTEXTS turns at once, and its URL."""
    home.mkdir()
    workspace.mkdir()
    (home / "settings.toml").write_text(f"[a2a]\ntasks_per_token = {CONTEXTS}\n")
    errors = home / "serve.err"
    with open(errors, "wb") as sink:
        process = subprocess.Popen(
            [*console_script(), "a2a", "serve", "--port", "0", str(workspace)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env=dict(os.environ, MC_HOME=str(home)),
        )
    deadline = time.monotonic() + 30
    while " at http" not in errors.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"a2a serve did not start: {errors.read_text()}")
        time.sleep(0.02)
    return process, errors.read_text().split(" at ")[1].split()[0]


async def round_trip(tool: RemoteAgentTool, ctx: ToolContext) -> float:
    started = time.perf_counter()
    outcome = await tool.run(tool.parse(f'{{"prompt": "{PROMPT}"}}'), ctx)
    elapsed = time.perf_counter() - started
    assert outcome.ok, outcome.output
    return elapsed


async def a2a_figures(url: str, workspace: Path) -> tuple[list[float], float, list[float]]:
    tool = RemoteAgentTool(RemoteAgentDef("bench", url, None), {})
    ctx = ToolContext(workspace, {})
    await round_trip(tool, ctx)  # the card is fetched once; the server warms
    single = [await round_trip(tool, ctx) for _ in range(RUNS)]
    latencies: list[float] = []

    async def one() -> None:
        latencies.append(await round_trip(tool, ctx))

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(CONTEXTS):
            group.start_soon(one)
    return single, time.perf_counter() - started, latencies


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "exec-home").mkdir()
        (root / "exec-home" / "settings.toml").write_text('provider = "fixture"\n')
        env = dict(os.environ, MC_HOME=str(root / "exec-home"))
        command = [*console_script(), "exec", PROMPT]
        once(command, env, tmp)  # warm the page cache
        exec_runs = [once(command, env, tmp)[0] for _ in range(RUNS)]
        process, url = serve(root / "serve-home", root / "served")
        try:
            figures: Any = anyio.run(a2a_figures, url, root / "served")
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(15)
    single, wall, latencies = figures
    a2a_ms = statistics.median(single) * 1000
    exec_ms = statistics.median(exec_runs) * 1000
    print(f"one-line turn over exec: median {exec_ms:.0f} ms ({RUNS} runs)")
    print(f"one-line turn over A2A: median {a2a_ms:.0f} ms ({RUNS} runs, server warm)")
    print(f"A2A / exec: {a2a_ms / exec_ms:.2f}x (target under 1.5x)")
    ordered = sorted(latencies)
    print(
        f"{CONTEXTS} contexts at once on one server: wall {wall * 1000:.0f} ms; per context "
        f"median {statistics.median(ordered) * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"
    )
    print(f"(load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)", flush=True)


if __name__ == "__main__":
    main()
