"""A sandboxed shell command cannot leave a process behind: the attacks, over real processes.

Each attack is a real command run by the real shell tool in the session's sandbox. It starts
processes that leave its process group every way a command can (a new session, a group of
their own, a double-forked daemon, nohup, bash's disown, one that also ignores SIGTERM), each
writing its pid and PID namespace (as it sees them: the command has a /proc of its own) to a
file, then sleeping a minute. When the call ends (normal exit, timeout, cancellation) or the
agent running it is killed, none of them may still run: found from outside by that namespace
and pid (support/escapes.py).

Then what must not change: output, exit codes, death by a signal, stdin's and stdout's EOF,
a background job the command waits for, a trapped signal sent to the command's own group.
Without a PID namespace (MC_NO_PID_NAMESPACE=1 or where the kernel refuses one) the sandbox
says so, and the old gap is still there: that is tested too, so that it is never hidden.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from sandbox_places import Places, places

from magi_code.tools.base import ToolContext, ToolOutcome
from magi_code.tools.limits import SANDBOX_LEFTOVER_S, SHELL_KILL_GRACE_S
from magi_code.tools.sandbox import modes
from magi_code.tools.sandbox.modes import Sandbox, SandboxSettings
from magi_code.tools.shell import Shell
from support import escapes
from support.escapes import ATTACK, PYTHON, running, survivors
from support.exec import MAGI_CODE

__all__ = ["places"]  # the fixture

pytestmark = pytest.mark.anyio

SHELL = Shell()


def context(where: Places, settings: SandboxSettings | None = None) -> ToolContext:
    sandbox = Sandbox(
        settings or SandboxSettings(), where.workspace, str(where.mc_home), str(where.home)
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(where.home)}
    return ToolContext(where.workspace, env | {"LANG": "C.UTF-8"}, sandbox=sandbox)


async def run(ctx: ToolContext, command: str, timeout: float = 30) -> ToolOutcome:
    return await SHELL.run(SHELL.parse(json.dumps({"command": command, "timeout": timeout})), ctx)


@pytest.fixture
def armed(places: Places) -> Iterator[Callable[[], dict[str, str]]]:
    """The attack armed in the workspace; gives a reader of what it marked, and kills any
    still running afterwards."""
    escapes.arm(places.workspace)
    seen: dict[str, str] = {}

    def read() -> dict[str, str]:
        seen.update(escapes.marks(places.workspace))
        return dict(seen)

    yield read
    for marked in seen.values():
        escapes.end(marked)


async def wait_until(predicate: Callable[[], bool], seconds: float) -> None:
    with anyio.fail_after(seconds):
        while not predicate():
            await anyio.sleep(0.02)


def report(when: str, found: dict[str, str]) -> None:
    """What the attack left, as `pytest -s` shows it."""
    said = (f"{name} {'RUNNING' if running(m) else 'gone'}" for name, m in found.items())
    print(f"{when}: {', '.join(said)}")


def require_containment() -> None:
    why = modes.containment()
    if why is not None:
        pytest.skip(f"this kernel gives no PID namespace here: {why}")


# --- the attacks ----------------------------------------------------------------------------


async def test_nothing_outlives_a_command_that_exits(
    places: Places, armed: Callable[[], dict[str, str]]
) -> None:
    require_containment()
    out = await run(context(places), ATTACK)
    pids = armed()
    report("normal exit", pids)
    assert out.ok and out.output.startswith("escaped\n"), out.output
    assert "processes not contained" not in out.output
    assert survivors(pids) == []


async def test_nothing_outlives_a_command_that_times_out(
    places: Places, armed: Callable[[], dict[str, str]]
) -> None:
    require_containment()
    started = time.monotonic()
    out = await run(context(places), ATTACK + "\nsleep 60", timeout=8)
    pids = armed()
    report("timeout", pids)
    assert "timed out after 8 s" in out.output
    assert survivors(pids) == []
    # `stubborn` ignores SIGTERM: it costs the kill grace, as a group member doing so does.
    assert time.monotonic() - started < 8 + SHELL_KILL_GRACE_S + 2


async def test_nothing_outlives_a_cancelled_command(
    places: Places, armed: Callable[[], dict[str, str]]
) -> None:
    require_containment()
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, context(places), ATTACK + "\nsleep 60")
            await wait_until(lambda: escapes.ready(places.workspace), 20)
            scope.cancel()
    assert scope.cancelled_caught
    pids = armed()
    report("cancelled", pids)
    assert survivors(pids) == []


AGENT = """
import anyio, json, sys
from pathlib import Path
from magi_code.tools.base import ToolContext
from magi_code.tools.sandbox.modes import Sandbox, SandboxSettings
from magi_code.tools.shell import Shell
workspace, mc_home, home, command = sys.argv[1:]
sandbox = Sandbox(SandboxSettings(), Path(workspace), mc_home, home)
ctx = ToolContext(Path(workspace), {"PATH": "/usr/bin:/bin", "HOME": home}, sandbox=sandbox)
shell = Shell()
anyio.run(shell.run, shell.parse(json.dumps({"command": command, "timeout": 60})), ctx)
"""


async def test_nothing_outlives_the_agent_killed_mid_command(
    places: Places, armed: Callable[[], dict[str, str]]
) -> None:
    """An agent SIGKILLed (no clean-up of its own runs) takes the command's namespace along:
    the tracked process dies with it, and init with the tracked process."""
    require_containment()
    paths = (str(places.workspace), str(places.mc_home), str(places.home))
    agent = subprocess.Popen(
        [PYTHON, "-c", AGENT, *paths, ATTACK + "\nsleep 60"], cwd=places.workspace
    )
    try:
        await wait_until(lambda: escapes.ready(places.workspace), 20)
    finally:
        agent.kill()
        agent.wait()
    pids = armed()
    # SIGKILL and the parent-death signals are delivered asynchronously: a bounded wait, well
    # short of SANDBOX_LEFTOVER_S (init's own last resort).
    await wait_until(lambda: survivors(pids) == [], 2)
    report("agent killed", pids)


def test_what_a_command_left_dies_when_magi_code_sandbox_exits(places: Places) -> None:
    """`magi-code sandbox` ends no group when the command exits (the shell tool does): init
    sees it end (its pidfd) and takes what the command left along, SIGTERM ignored or not."""
    require_containment()
    escapes.arm(places.workspace)
    script = escapes.ESCAPES["stubborn"] + "\nsh marked.sh stubborn"
    done = subprocess.run(
        [MAGI_CODE, "sandbox", "--", "sh", "-c", script],
        cwd=places.workspace,
        env=places.env(),
        capture_output=True,
        timeout=30,
    )
    ended = time.monotonic()
    assert done.returncode == 0, done.stderr
    marked = (places.workspace / "pids" / "stubborn").read_text()
    try:
        while running(marked) and time.monotonic() - ended < SANDBOX_LEFTOVER_S / 2:
            time.sleep(0.02)
        assert not running(marked)
    finally:
        escapes.end(marked)


@pytest.mark.slow("waits out SANDBOX_LEFTOVER_S, init's last resort")
def test_what_a_command_left_dies_even_when_no_one_ends_its_group(
    places: Places, armed: Callable[[], dict[str, str]]
) -> None:
    """The agent lives on but never ends the command's group (the shell tool always does; this
    test does not): init ends what is left SANDBOX_LEFTOVER_S after the command at the latest."""
    require_containment()
    sandbox = Sandbox(SandboxSettings(), places.workspace, str(places.mc_home), str(places.home))
    confinement = sandbox.shell()
    assert confinement is not None
    done = subprocess.run(
        ["sh", "-c", ATTACK],
        cwd=places.workspace,
        env=sandbox.env(places.env()),
        stdout=subprocess.DEVNULL,
        timeout=30,
        preexec_fn=confinement.apply,
        start_new_session=True,
    )
    ended = time.monotonic()
    assert done.returncode == 0
    pids = armed()
    assert survivors(pids)  # nothing ended them yet
    while survivors(pids):
        assert time.monotonic() - ended < SANDBOX_LEFTOVER_S + 2
        time.sleep(0.05)


# --- what must not change -------------------------------------------------------------------


async def test_output_and_exit_codes_are_as_before(places: Places) -> None:
    require_containment()
    ctx = context(places)
    out = await run(ctx, "echo out; echo err >&2; exit 3")
    assert out.output == "out\nerr\n[exit code 3; sandbox: workspace-write, network off]"
    assert (await run(ctx, "pwd")).output.startswith(f"{places.workspace}\n[exit code 0;")
    for signum in (signal.SIGTERM, signal.SIGKILL, signal.SIGSEGV):
        killed = await run(ctx, f"kill -{signum.name.removeprefix('SIG')} $$")
        assert f"[killed by signal {int(signum)};" in killed.output, killed.output


async def test_the_command_gets_the_signal_state_it_had(places: Places) -> None:
    """The tracked process and init block every signal; the command gets back the mask its
    spawner had, and the same dispositions, as outside the sandbox."""
    require_containment()
    script = "grep -E '^(SigBlk|SigIgn)' /proc/self/status"
    inside = await run(context(places), script)
    outside = await run(context(places, SandboxSettings(mode="full-access")), script)
    assert inside.output.split("\n[")[0] == outside.output.split("\n[")[0], inside.output


async def test_stdin_and_stdout_reach_eof_at_once(places: Places) -> None:
    """Neither the tracked process nor init holds the command's descriptors: `cat` sees
    EOF on stdin (else `cat` would wait out the timeout), and the output ends when the
    command does (else the drain would end first, and the status would say so)."""
    require_containment()
    out = await run(context(places), "cat; echo rc=$?", timeout=20)
    assert out.output == "rc=0\n[exit code 0; sandbox: workspace-write, network off]"


def test_stdin_eof_through_magi_code_sandbox(places: Places) -> None:
    require_containment()
    done = subprocess.run(
        [MAGI_CODE, "sandbox", "--", "sh", "-c", "cat; echo done"],
        cwd=places.workspace,
        env=places.env(),
        input=b"fed\n",
        capture_output=True,
        timeout=30,
    )
    assert (done.returncode, done.stdout) == (0, b"fed\ndone\n"), done.stderr


async def test_a_background_job_the_command_waits_for_is_heard(places: Places) -> None:
    require_containment()
    ctx = context(places)
    out = await run(ctx, "(sleep 0.2; echo late) & wait; echo after")
    assert out.output.startswith("late\nafter\n[exit code 0;"), out.output
    # Left behind in the group and still writing: drained, then ended, as before.
    left = await run(ctx, "(sleep 0.1; echo late) & sleep 60 & echo early")
    assert left.output.startswith("early\nlate\n[exit code 0; background processes"), left.output


async def test_a_command_may_trap_a_signal_sent_to_its_own_group(places: Places) -> None:
    """The tracked process is in the command's group: it must not die of a signal the
    command sends its group and traps (it would take the namespace with it)."""
    require_containment()
    script = "trap 'echo trapped' USR1 TERM; kill -USR1 0; kill -TERM 0; echo still; exit 4"
    out = await run(context(places), script)
    assert out.output.startswith("trapped\ntrapped\nstill\n[exit code 4;"), out.output


async def test_pids_inside_are_the_namespaces(places: Places) -> None:
    require_containment()
    out = await run(context(places), "echo $$ $PPID; sh -c 'echo $PPID'")
    assert out.output.startswith("2 1\n2\n"), out.output


# --- where there is no PID namespace --------------------------------------------------------


@pytest.fixture
def uncontained(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process behaves as where the kernel refuses a PID namespace."""
    monkeypatch.setattr(modes, "_contained", ("the kernel refuses us a PID namespace", False))


@pytest.mark.usefixtures("uncontained")
async def test_without_a_pid_namespace_it_is_said_and_the_old_gap_remains(
    places: Places, armed: Callable[[], dict[str, str]]
) -> None:
    ctx = context(places)
    assert ctx.sandbox is not None
    said = "processes not contained (the kernel refuses us a PID namespace)"
    assert ctx.sandbox.describe() == f"workspace-write, network off, {said}"
    notice = ctx.sandbox.unavailable_notice()
    assert notice is not None and "cannot contain a command's processes" in notice
    assert ctx.sandbox.unavailable_notice() is None  # once per session
    out = await run(ctx, ATTACK)
    assert out.ok and out.output.startswith("escaped\n") and said in out.output
    pids = armed()
    # Confined all the same (the workspace is all it may write), but not contained: this is
    # the gap the PID namespace closes, kept visible here (the fixture kills them). What
    # stayed in the command's process group (nohup, bash's disown) is ended with it.
    report("without a PID namespace", pids)
    assert survivors(pids) == ["setsid", "setpgid", "daemon", "stubborn"]
    refused = await run(ctx, "echo x > ../outside")
    assert "Permission denied" in refused.output


NESTED = """
import anyio, json, os, sys
from pathlib import Path
from magi_code.tools.base import ToolContext
from magi_code.tools.sandbox.modes import Sandbox, SandboxSettings, containment
from magi_code.tools.shell import Shell
print(containment())
workspace = Path.cwd()
sandbox = Sandbox(SandboxSettings(), workspace, sys.argv[1], os.environ["HOME"])
ctx = ToolContext(workspace, {"PATH": "/usr/bin:/bin"}, sandbox=sandbox)
shell = Shell()
arguments = shell.parse(json.dumps({"command": "echo ran; exit 3"}))
print(anyio.run(shell.run, arguments, ctx).output)
"""


def test_where_the_kernel_refuses_a_pid_namespace_commands_run_uncontained(
    places: Places,
) -> None:
    """A real refusal: inside a sandboxed command (whose seccomp filter refuses namespaces),
    an agent's probe fails, and its own commands run confined, uncontained, and say so."""
    require_containment()  # the outer command's sandbox is the real one
    done = subprocess.run(
        [MAGI_CODE, "sandbox", "--", PYTHON, "-c", NESTED, str(places.mc_home)],
        cwd=places.workspace,
        env=places.env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    why = "the kernel refuses us " + ("a PID namespace" if os.geteuid() == 0 else "a user")
    assert done.stdout.startswith(why), done.stderr
    said = f"processes not contained ({done.stdout.splitlines()[0]})"
    assert done.stdout.endswith(
        f"ran\n[exit code 3; sandbox: workspace-write, network off, {said}]\n"
    )


def test_mc_no_pid_namespace_turns_it_off(places: Places) -> None:
    script = textwrap.dedent(
        """
        from magi_code.tools.sandbox import modes
        print(modes.containment())
        """
    )
    done = subprocess.run(
        [PYTHON, "-c", script],
        env=places.env(MC_NO_PID_NAMESPACE="1"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.stdout == "MC_NO_PID_NAMESPACE=1 turns PID namespaces off\n", done.stderr


# As a user, not root: a user namespace holds the PID and mount namespaces, and its maps are
# written through /proc/self, which is root's while the process is not dumpable (magi-code
# never is). Everything is imported before the process drops to `nobody`: the interpreter's
# own files may be out of its reach.
AS_A_USER = """
import os, pwd, shutil, subprocess, sys, tempfile
from pathlib import Path
from magi_code.tools.sandbox import confine, landlock, modes, seccomp
from magi_code.tools.sandbox.modes import Sandbox, SandboxSettings
workspace = Path(sys.argv[1])
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
confine.mark_undumpable()
print(modes.containment(), modes.own_proc(), confine.can_bind_read_only())
sandbox = Sandbox(SandboxSettings(), workspace, str(workspace / "mc"), str(workspace))
script = "id -u; ls /proc | grep -c '^[0-9]'; touch made; touch .git/x || echo git-read-only"
done = subprocess.run(
    ["sh", "-c", script], preexec_fn=sandbox.shell().apply, cwd=workspace, capture_output=True
)
print(done.stdout.decode() + done.stderr.decode(), end="")
"""


def test_as_a_user_not_dumpable_commands_are_contained_and_git_read_only(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    if os.geteuid() != 0:
        pytest.skip("not root: the rest of this file already runs the sandbox as a user")
    workspace = Path(tempfile.mkdtemp(prefix="magi-code-as-a-user-"))
    try:
        (workspace / ".git").mkdir()
        for folder in (workspace, workspace / ".git"):
            os.chown(folder, 65534, 65534)
        done = subprocess.run(
            [PYTHON, "-c", AS_A_USER, str(workspace)], capture_output=True, text=True, timeout=60
        )
        said = done.stdout.splitlines()
        assert said[0] == "None True True", done.stdout + done.stderr
        assert said[1] == "65534" and int(said[2]) <= 4, done.stdout  # init, sh, ls, grep
        assert said[3:] == ["git-read-only"] or "Read-only file system" in done.stdout
        assert (workspace / "made").exists() and not (workspace / ".git" / "x").exists()
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
