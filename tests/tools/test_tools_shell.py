"""shell with real /bin/sh processes: groups killed on timeout and cancellation, bounded output,
no inherited descriptors."""

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from magi_code.tools.base import ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.limits import SHELL_KILL_GRACE_S, SHELL_MAX_TIMEOUT_S, SHELL_OUTPUT_BYTES
from magi_code.tools.shell import Capture, Shell

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc"),
]

SHELL = Shell()
SRC = Path(__file__).resolve().parents[2] / "src"


async def run(ctx: ToolContext, command: str, **extra: object) -> ToolOutcome:
    return await SHELL.run(SHELL.parse(json.dumps({"command": command, **extra})), ctx)


def live_members(group: int) -> list[int]:
    """Pids of non-zombie processes in process group `group`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if int(fields[2]) == group and fields[0] not in (b"Z", b"X"):
            found.append(int(name))
    return found


async def wait_for(predicate: Callable[[], bool], seconds: float = 5.0) -> None:
    with anyio.fail_after(seconds):
        while not predicate():
            await anyio.sleep(0.01)


def group_of(ws: Path) -> int:
    return int((ws / "pgid").read_text())


# The shell writes its own pid ($$): as a session leader, that is its process group id.
TWO_SLEEPS = "echo $$ > pgid; sleep 100 & sleep 100"


async def test_exit_status_and_combined_output(ctx: ToolContext) -> None:
    out = await run(ctx, "echo out; echo err >&2; exit 3")
    assert not out.ok
    assert out.output == "out\nerr\n[exit code 3]"
    assert out.summary == "run: echo out; echo err >&2; exit 3 (exit code 3)"
    good = await run(ctx, "pwd")
    assert good.ok and good.output == f"{ctx.workspace}\n[exit code 0]"


async def test_a_missing_workspace_is_an_outcome(ctx: ToolContext, tmp_path: Path) -> None:
    gone = ToolContext(tmp_path / "missing", ctx.env)
    out = await run(gone, "echo hi")
    assert not out.ok and out.output == "error: could not start /bin/sh"


async def test_env_comes_from_the_context(ctx: ToolContext) -> None:
    out = await run(ctx, 'echo "$HOME"')
    assert out.output.split("\n")[0] == ctx.env["HOME"]


async def test_timeout_kills_the_whole_group(ctx: ToolContext, ws: Path) -> None:
    seen: list[int] = []

    async def watch() -> None:
        await wait_for(lambda: (ws / "pgid").exists() and len(live_members(group_of(ws))) >= 3)
        seen.extend(live_members(group_of(ws)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        started = time.monotonic()
        out = await run(ctx, TWO_SLEEPS, timeout=1.0)
    assert len(seen) >= 3  # sh and both sleeps were alive in the group
    assert live_members(group_of(ws)) == []
    assert not out.ok and "timed out after 1 s" in out.output
    assert time.monotonic() - started < 1.0 + SHELL_KILL_GRACE_S


async def test_cancellation_kills_the_whole_group(ctx: ToolContext, ws: Path) -> None:
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, ctx, TWO_SLEEPS)
            await wait_for(lambda: (ws / "pgid").exists() and len(live_members(group_of(ws))) >= 3)
            scope.cancel()
    assert scope.cancelled_caught
    assert live_members(group_of(ws)) == []


async def test_term_ignoring_group_gets_sigkill(ctx: ToolContext, ws: Path) -> None:
    started = time.monotonic()
    out = await run(ctx, "trap '' TERM; echo $$ > pgid; sleep 100 & sleep 100", timeout=0.2)
    assert "timed out" in out.output
    assert live_members(group_of(ws)) == []
    assert time.monotonic() - started >= SHELL_KILL_GRACE_S  # it took the SIGKILL path


async def test_background_leftovers_are_killed_after_exit(ctx: ToolContext, ws: Path) -> None:
    out = await run(ctx, "echo $$ > pgid; sleep 100 & echo started")
    assert out.ok
    assert out.output.startswith("started\n")
    assert "background processes holding the output were killed" in out.output
    assert live_members(group_of(ws)) == []


async def test_output_cap_edge(ctx: ToolContext) -> None:
    exact = await run(ctx, f"head -c {SHELL_OUTPUT_BYTES} /dev/zero | tr '\\0' x")
    assert exact.output == "x" * SHELL_OUTPUT_BYTES + "\n[exit code 0]"
    over = await run(ctx, f"head -c {SHELL_OUTPUT_BYTES + 1} /dev/zero | tr '\\0' x")
    head, note, tail = over.output.partition("\n[... 1 bytes of output omitted ...]\n")
    assert note
    assert len(head) + len(tail.removesuffix("\n[exit code 0]")) == SHELL_OUTPUT_BYTES
    assert set(head + tail.removesuffix("\n[exit code 0]")) == {"x"}


async def test_large_output_drains_without_blocking(ctx: ToolContext) -> None:
    out = await run(ctx, "head -c 5000000 /dev/zero; echo; echo END", timeout=20)
    assert out.ok
    assert out.output.endswith("END\n[exit code 0]")
    assert f"{5000000 + 5 - SHELL_OUTPUT_BYTES} bytes of output omitted" in out.output


def test_capture_never_tears_a_character() -> None:
    capture = Capture(limit=8)
    capture.add("aé".encode() + "€€€".encode())  # 1 + 2 + 9 = 12 bytes
    text = capture.text()
    assert "\ufffd" not in text
    front, _, back = text.partition("\n[...")
    assert front == "aé" and back.endswith("€")
    assert len(front.encode()) + len(back.split("\n")[-1].encode()) <= 8


HELPER = """
import json, os, sys
from pathlib import Path
import anyio
from magi_code.tools.base import ToolContext
from magi_code.tools.shell import Shell

wire = os.dup(1)  # the private protocol descriptor (non-inheritable, as the server makes it)
os.dup2(2, 1)  # fd 1 now points at stderr

async def main() -> None:
    shell = Shell()
    command = sys.argv[1].replace("{FD}", str(wire))
    args = shell.parse(json.dumps({"command": command, "timeout": 5}))
    out = await shell.run(args, ToolContext(Path.cwd().resolve(), dict(os.environ)))
    os.write(wire, json.dumps({"output": out.output}).encode() + b"\\n")

anyio.run(main)
"""


def run_in_server_like_parent(tmp_path: Path, command: str) -> tuple[str, bytes]:
    """Run the tool in a child whose stdin is an open pipe we never write or close, and whose
    stdout is moved to a private fd; return the tool output and the child's stderr."""
    helper = tmp_path / "helper.py"
    helper.write_text(HELPER)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(SRC),
    }
    child = subprocess.Popen(
        [sys.executable, str(helper), command],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None and child.stdin is not None
    stdout = child.stdout.read()  # until the helper exits; its stdin stays open meanwhile
    child.stdin.close()
    stderr = child.stderr.read()
    assert child.wait(timeout=30) == 0, stderr
    lines = stdout.split(b"\n")
    assert lines[1:] == [b""]  # exactly one line on the real stdout
    return json.loads(lines[0])["output"], stderr


def test_stdin_is_dev_null(tmp_path: Path) -> None:
    output, _ = run_in_server_like_parent(tmp_path, "readlink /proc/$$/fd/0; cat; echo done")
    assert output == "/dev/null\ndone\n[exit code 0]"


def test_child_cannot_reach_the_parents_stdout(tmp_path: Path) -> None:
    """The command reaches neither the private wire fd nor the diverted fd 1: its output goes
    to the tool's pipe only."""
    output, stderr = run_in_server_like_parent(
        tmp_path,
        "echo LEAK-1; echo LEAK-2 >&{FD}; "
        "if [ -e /proc/$$/fd/{FD} ]; then echo WIRE-OPEN; else echo WIRE-CLOSED; fi",
    )
    assert "LEAK-1" in output  # the command's own stdout went to the tool's pipe
    assert "WIRE-CLOSED" in output
    assert "LEAK-2" not in output
    assert b"LEAK" not in stderr


@pytest.mark.parametrize(
    "arguments",
    [
        {"command": ""},
        {"command": "ls", "timeout": 0},
        {"command": "ls", "timeout": -1},
        {"command": "ls", "timeout": SHELL_MAX_TIMEOUT_S + 1},
        {"command": "ls", "timeout": True},
        {"command": "ls", "cwd": "/"},
    ],
)
def test_shell_parse_rejects_bad_arguments(arguments: dict[str, object]) -> None:
    with pytest.raises(ToolInputError):
        SHELL.parse(json.dumps(arguments))


def test_shell_timeout_bounds_accept_the_maximum() -> None:
    assert SHELL.parse(json.dumps({"command": "ls", "timeout": SHELL_MAX_TIMEOUT_S})).timeout_s == (
        SHELL_MAX_TIMEOUT_S
    )
