"""What the OS sandbox adds to a spawn: `true` bare against `magi-code sandbox -- true`, a
shell tool call with and without the sandbox (in process), and a Code Mode `pass`.

Target (sandbox issue): at most 5 ms added per shell command. The in-process figures are
medians of interleaved calls. Where the added time goes: `Sandbox.shell()` alone (the plan,
the Landlock ruleset and the seccomp program built for each command), and a spawn with a
no-op `preexec_fn` (subprocess then forks instead of using vfork); the rest is the
confinement applied in the child. A workspace holding `.git` is timed too: there the child
also gets a private mount namespace with `.git` bound read-only (when it may have one).
Code Mode is always sandboxed, so it has no bare figure. A sandboxed shell command runs in a
PID namespace of its own (tools/sandbox/contain.py: two more forks of this process, the
namespace's init and the command); the same calls without it (as MC_NO_PID_NAMESPACE=1) are
interleaved with the rest, so that what containment costs is measured in the same run.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from magi_code.tools.base import Bridge, ToolContext, ToolOutcome
from magi_code.tools.code_mode import CodeTool
from magi_code.tools.sandbox import modes
from magi_code.tools.sandbox.modes import Sandbox, SandboxSettings, support
from magi_code.tools.shell import Shell

SPAWNS = 30  # each way, `true` as a process
CALLS = 50  # each way, shell tool calls
BUILDS = 50  # Sandbox.shell() alone
PROGRAMS = 15  # Code Mode `pass`
TARGET_MS = 5.0
ENV = {"PATH": "/usr/bin:/bin"}
SH_TRUE = ["/bin/sh", "-c", "true"]
UNCONTAINED = "sandboxed, no PID namespace (MC_NO_PID_NAMESPACE=1)"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def timed(run: Callable[[], object]) -> float:
    began = time.perf_counter()
    run()
    return time.perf_counter() - began


def spawns(workspace: Path, env: dict[str, str], sandboxed: bool) -> dict[str, float]:
    """Medians of `/bin/true` bare and (when `sandboxed`) of the console script running it in
    the sandbox, the runs interleaved so load on the machine hits both alike."""
    script = Path(sys.executable).with_name("magi-code")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "magi_code.cli"]
    ways: dict[str, tuple[list[str], Path | None]] = {
        "subprocess.run(['/bin/true'])": (["/bin/true"], None)
    }
    if sandboxed:
        ways["magi-code sandbox -- /bin/true (incl. CLI start-up)"] = (
            [*command, "sandbox", "--", "/bin/true"],
            workspace,
        )
    for argv, cwd in ways.values():  # warm the page cache and .pyc files
        subprocess.run(argv, check=True, cwd=cwd, env=env)
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(SPAWNS):
        for name, (argv, cwd) in ways.items():
            began = time.perf_counter()
            subprocess.run(argv, check=True, cwd=cwd, env=env)
            times[name].append(time.perf_counter() - began)
    return {name: statistics.median(t) for name, t in times.items()}


async def shell_calls(contexts: dict[str, ToolContext]) -> dict[str, float]:
    """Median of a `true` shell tool call under each context, the calls interleaved."""
    shell = Shell()
    args = shell.parse(json.dumps({"command": "true"}))
    probed = (modes.containment(),)
    for name, ctx in contexts.items():  # warm-up: imports, the sandbox's temp folder, probes
        modes._contained = ("bench",) if name == UNCONTAINED else probed
        assert (await shell.run(args, ctx)).ok
    times: dict[str, list[float]] = {name: [] for name in contexts}
    for _ in range(CALLS):
        for name, ctx in contexts.items():
            # The probe's answer, switched per call (each sandbox keeps its own confinement).
            modes._contained = ("bench",) if name == UNCONTAINED else probed
            began = time.perf_counter()
            outcome = await shell.run(args, ctx)
            times[name].append(time.perf_counter() - began)
            assert outcome.ok, outcome
    return {name: statistics.median(t) for name, t in times.items()}


def forks() -> dict[str, float]:
    """Medians of `/bin/sh -c true` spawned bare and with a no-op `preexec_fn`: any
    `preexec_fn` makes subprocess fork instead of vfork, a cost every confined spawn pays."""
    ways: dict[str, dict[str, Any]] = {
        "subprocess.run(sh -c true)": {},
        "the same with a no-op preexec_fn (fork, not vfork)": {"preexec_fn": _nothing},
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(CALLS):
        for name, options in ways.items():
            times[name].append(timed(partial(subprocess.run, SH_TRUE, **options)))
    return {name: statistics.median(t) for name, t in times.items()}


def _nothing() -> None:
    pass


def builds(sandbox: Sandbox, mc_home: Path, home: Path) -> tuple[float, float]:
    """Medians of `Sandbox.shell()`: made anew in a fresh Sandbox (the plan, the Landlock
    ruleset, the seccomp program), and kept from the last command (a few stat calls)."""

    def cold() -> None:
        fresh = Sandbox(sandbox.settings, sandbox.workspace, str(mc_home), str(home))
        confinement = fresh.shell()
        assert confinement is not None
        os.close(confinement.ruleset_fd)

    def warm() -> None:
        assert sandbox.shell() is not None

    warm()
    made = statistics.median(timed(cold) for _ in range(BUILDS))
    return made, statistics.median(timed(warm) for _ in range(BUILDS))


async def echo(name: str, arguments: str) -> ToolOutcome:
    return ToolOutcome(True, f"{name} {arguments}", name)


async def programs(workspace: Path, sandbox: Sandbox) -> float:
    """Median of a Code Mode `code` call whose program is `pass`."""
    tool = CodeTool(("echo",))
    args = tool.parse(json.dumps({"program": "pass"}))
    ctx = ToolContext(workspace, ENV, bridge=Bridge(("echo",), echo), sandbox=sandbox)
    assert (await tool.run(args, ctx)).ok  # warm-up
    times = []
    for _ in range(PROGRAMS):
        began = time.perf_counter()
        outcome = await tool.run(args, ctx)
        times.append(time.perf_counter() - began)
        assert outcome.ok, outcome
    return statistics.median(times)


def table(figures: dict[str, float]) -> None:
    """Each figure, and what it adds to the first."""
    base = next(iter(figures.values()))
    for n, (name, seconds) in enumerate(figures.items()):
        added = f"  (+{(seconds - base) * 1000:.2f} ms)" if n else ""
        print(f"  {name:52} {ms(seconds)}{added}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        workspace, repo, home, mc_home = (root / n for n in ("w", "repo", "h", "mc"))
        for folder in (workspace, repo / ".git", home / ".ssh", mc_home):
            folder.mkdir(parents=True)
        env = dict(os.environ, MC_HOME=str(mc_home), HOME=str(home))
        env.pop("MAGI_SANDBOX_MODE", None)

        why = support()[1]
        if why is not None:
            print(f"sandbox unavailable here: {why}; the sandboxed figures are skipped")
        print(f"spawning true: median of {SPAWNS} interleaved runs each")
        table(spawns(workspace, env, why is None))

        sandbox = Sandbox(SandboxSettings(), workspace, str(mc_home), str(home))
        in_repo = Sandbox(SandboxSettings(), repo, str(mc_home), str(home))
        contexts = {"unsandboxed": ToolContext(workspace, ENV, sandbox=None)}
        if why is None:
            contexts["sandboxed"] = ToolContext(workspace, ENV, sandbox=sandbox)
            contexts["sandboxed, workspace with .git"] = ToolContext(repo, ENV, sandbox=in_repo)
            if modes.containment() is None:
                bare = Sandbox(SandboxSettings(), workspace, str(mc_home), str(home))
                contexts[UNCONTAINED] = ToolContext(workspace, ENV, sandbox=bare)
        calls = anyio.run(shell_calls, contexts)
        print(f"shell tool call `true`, in process: median of {CALLS} interleaved calls each")
        table(calls)
        if why is not None:
            return
        added_ms = (calls["sandboxed"] - calls["unsandboxed"]) * 1000
        verdict = "met" if added_ms <= TARGET_MS else "NOT met"
        print(
            f"  added per command: {added_ms:.2f} ms "
            f"(target: at most {TARGET_MS:g} ms added per command): {verdict}"
        )
        if UNCONTAINED in calls:
            contained_ms = (calls["sandboxed"] - calls[UNCONTAINED]) * 1000
            print(f"  of which the PID namespace (containment): {contained_ms:.2f} ms")
        else:
            print(f"  no PID namespace here: {modes.containment()}")
        print(f"Sandbox.shell() alone, median of {BUILDS}: made anew (plan + Landlock ruleset")
        print("+ seccomp) | kept from the last command (a few stat calls)")
        for label, which in (("workspace", sandbox), ("workspace with .git", in_repo)):
            made, kept = builds(which, mc_home, home)
            print(f"  {label:52} {ms(made)} | {ms(kept)}")
        print(f"fork instead of vfork: median of {CALLS} interleaved spawns each")
        table(forks())
        code = anyio.run(programs, workspace, sandbox)
        print(f"Code Mode `code` running `pass` (always sandboxed), median of {PROGRAMS}:")
        print(f"  {'code call':52} {ms(code)}")


if __name__ == "__main__":
    main()
