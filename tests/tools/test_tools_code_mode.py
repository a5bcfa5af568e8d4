"""The `code` tool on its own: a real interpreter per program, stopped by its limits with a clear
outcome, killed on cancel, confined to its bridge, bounded in what it returns."""

import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from magi_code.limits import (
    CODE_BRIDGE_LINE_BYTES,
    CODE_BRIDGED_CALLS,
    CODE_OUTPUT_BYTES,
    CODE_RESULT_BYTES,
    UNTRUSTED_JSON_DEPTH,
)
from magi_code.tools.base import Bridge, ToolContext, ToolOutcome
from magi_code.tools.code_mode import CodeTool
from magi_code.tools.sandbox.modes import Sandbox, SandboxSettings

pytestmark = pytest.mark.anyio

ENV = {"PATH": "/usr/bin:/bin"}
Call = Callable[[str, str], Awaitable[ToolOutcome]]


async def echo(name: str, arguments: str) -> ToolOutcome:
    return ToolOutcome(True, f"{name} {arguments}", name)


def context(
    workspace: Path, call: Call = echo, names: tuple[str, ...] = ("echo", "ping")
) -> ToolContext:
    sandbox = Sandbox(SandboxSettings(), workspace, str(workspace / ".mc"), None)
    return ToolContext(workspace, ENV, bridge=Bridge(names, call), sandbox=sandbox)


async def run(
    workspace: Path, program: str, call: Call = echo, **tool_options: float
) -> ToolOutcome:
    tool = CodeTool(("echo", "ping"), **tool_options)  # type: ignore[arg-type]
    ctx = context(workspace, call)
    return await tool.run(tool.parse(json.dumps({"program": program})), ctx)


async def test_tools_answer_and_result_stdout_stderr_come_back(tmp_path: Path) -> None:
    outcome = await run(
        tmp_path,
        "import sys\nsaid = tools.echo(x=1)\nprint('out', said)\nprint('err', file=sys.stderr)\n"
        "result = {'said': said}",
    )
    assert outcome.ok
    assert outcome.output == (
        '[completed; 1 tool call]\n[result]\n{"said": "echo {\\"x\\": 1}"}\n'
        '[stdout]\nout echo {"x": 1}\n\n[stderr]\nerr\n'
    )


async def test_cancel_mid_program_kills_it_within_a_second(tmp_path: Path) -> None:
    running, pids = anyio.Event(), []

    async def ping(name: str, arguments: str) -> ToolOutcome:
        pids.append(json.loads(arguments)["pid"])
        running.set()
        return ToolOutcome(True, "", "")

    program = "import os\ntools.ping(pid=os.getpid())\nwhile True:\n    pass\n"
    async with anyio.create_task_group() as tg:
        tg.start_soon(run, tmp_path, program, ping)
        await running.wait()
        cancelled_at = time.monotonic()
        tg.cancel_scope.cancel()
    assert time.monotonic() - cancelled_at < 1.0
    with pytest.raises(ProcessLookupError):
        os.kill(pids[0], 0)


async def test_a_program_that_loops_forever_is_stopped_by_its_wall_clock(tmp_path: Path) -> None:
    began = time.monotonic()
    tool = CodeTool(("echo",))
    args = tool.parse(json.dumps({"program": "while True:\n    pass", "timeout": 0.5}))
    outcome = await tool.run(args, context(tmp_path, echo, ("echo",)))
    assert time.monotonic() - began < 3
    assert not outcome.ok
    assert outcome.output.startswith(
        "[stopped: wall-clock limit of 0.5 s reached; process killed; 0 tool calls]"
    )


async def test_a_program_that_allocates_without_bound_is_stopped_by_its_memory_limit(
    tmp_path: Path,
) -> None:
    program = "chunks = []\nwhile True:\n    chunks.append(bytearray(16 * 1024 * 1024))"
    outcome = await run(tmp_path, program, memory_bytes=256 * 1024 * 1024)
    assert not outcome.ok
    assert "MemoryError: the program reached its memory limit" in outcome.output
    assert outcome.output.startswith("[stopped: memory limit of 256 MiB reached; 0 tool calls]")
    assert "memory limit" in outcome.summary


async def test_the_program_reads_the_workspace_and_changes_nothing_but_through_the_bridge(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("n0tes\n")
    attempts = {
        "write": "open('made.txt', 'w')",
        "os_open": "import os; os.open('made2.txt', os.O_CREAT | os.O_WRONLY)",
        "remove": "import os; os.remove('notes.txt')",
        "system": "import os; assert os.system('touch made3.txt') == 0",
        "subprocess": "import subprocess; subprocess.run(['touch', 'made4.txt'])",
        "fork": "import os; os.fork()",
        "socket": "import socket; socket.create_connection(('127.0.0.1', 9))",
        "unix_socket": "import socket; socket.socket(socket.AF_UNIX)",
    }
    program = "refused = []\n" + "".join(
        f"try:\n    {code}\nexcept (OSError, AssertionError):\n    refused.append({name!r})\n"
        for name, code in attempts.items()
    )
    program += "import json, re, ctypes, os\n"  # the standard library still imports
    program += "result = [refused, open('notes.txt').read(), sorted(os.listdir('.'))]"
    outcome = await run(tmp_path, program)
    assert outcome.ok, outcome.output
    expected = [list(attempts), "n0tes\n", ["notes.txt"]]
    assert f"[result]\n{json.dumps(expected)}" in outcome.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


async def test_stdout_is_bounded(tmp_path: Path) -> None:
    outcome = await run(tmp_path, "print('x' * 2_000_000)")
    stdout = outcome.output.split("[stdout]")[1].split("[stderr]")[0]
    assert len(stdout.encode()) < CODE_OUTPUT_BYTES + 200
    assert "bytes of output omitted" in stdout


async def test_result_is_bounded_at_its_exact_edge(tmp_path: Path) -> None:
    for size, kept in ((CODE_RESULT_BYTES, True), (CODE_RESULT_BYTES + 1, False)):
        outcome = await run(tmp_path, f"result = 'r' * {size - 2}")  # JSON adds two quotes
        assert (f'[result]\n"{"r" * (size - 2)}"' in outcome.output) is kept
        assert (f"(result over {CODE_RESULT_BYTES} bytes of JSON)" in outcome.output) is not kept


async def test_a_call_line_is_bounded_at_its_exact_edge(tmp_path: Path) -> None:
    """The request line (without its newline) may be CODE_BRIDGE_LINE_BYTES, not one more."""
    for size, kept in ((CODE_BRIDGE_LINE_BYTES, True), (CODE_BRIDGE_LINE_BYTES + 1, False)):
        frame = len(json.dumps({"call": {"id": 1, "name": "ping", "arguments": {"x": ""}}}))
        program = f"tools.ping(x='y' * {size - frame})"
        outcome = await run(tmp_path, program, lambda n, a: _ok())
        stopped = f"[stopped: a tool call over {CODE_BRIDGE_LINE_BYTES} bytes; process killed"
        assert (stopped in outcome.output) is not kept, size
        assert outcome.ok is kept


MALFORMED = "[stopped: a malformed tool call; process killed; 0 tool calls]"


def nested_call(depth: int) -> str:
    """A program calling `ping` with arguments that make its call line nest `depth` deep."""
    lists = depth - 3  # {"call": {"arguments": {"x": ...}}} holds the lists
    return f"x = []\nfor _ in range({lists - 1}):\n    x = [x]\ntools.ping(x=x)"


async def test_a_call_line_nests_at_most_its_bound(tmp_path: Path) -> None:
    """UNTRUSTED_JSON_DEPTH containers pass, one more stops the program as a malformed call."""
    for depth, kept in ((UNTRUSTED_JSON_DEPTH, True), (UNTRUSTED_JSON_DEPTH + 1, False)):
        outcome = await run(tmp_path, nested_call(depth), lambda n, a: _ok())
        assert outcome.ok is kept, outcome.output
        assert outcome.output.startswith(MALFORMED) is not kept, outcome.output


@pytest.mark.parametrize("depth", [100_000, 950])
async def test_a_deep_bridge_line_stops_the_program_not_the_tool(
    tmp_path: Path, depth: int
) -> None:
    """Written straight onto the bridge (past the program's own json), a line nested 100_000
    deep or just under Python's recursion limit is the program's malformed call: before, the
    parent's parser raised RecursionError out of the tool."""
    program = (
        f"tools._writer.write(b'[' * {depth} + b']' * {depth} + b'\\n')\n"
        "tools._writer.flush()\ntools.ping()"
    )
    outcome = await run(tmp_path, program)
    assert not outcome.ok
    assert outcome.output.startswith(MALFORMED), outcome.output


async def test_bridged_calls_are_bounded_at_their_exact_edge(tmp_path: Path) -> None:
    for count, kept in ((CODE_BRIDGED_CALLS, True), (CODE_BRIDGED_CALLS + 1, False)):
        outcome = await run(tmp_path, f"for _ in range({count}):\n    tools.ping()")
        assert outcome.ok is kept
        stopped = f"stopped: more than {CODE_BRIDGED_CALLS} tool calls"
        assert (stopped in outcome.output) is not kept


async def test_a_failing_call_raises_tool_error_in_the_program(tmp_path: Path) -> None:
    async def refuse(name: str, arguments: str) -> ToolOutcome:
        return ToolOutcome(False, "not allowed", "denied")

    program = "try:\n    tools.ping()\nexcept ToolError as e:\n    result = str(e)"
    outcome = await run(tmp_path, program, refuse)
    assert '[result]\n"not allowed"' in outcome.output


async def _ok() -> ToolOutcome:
    return ToolOutcome(True, "", "")


async def test_the_standard_library_imports_and_a_failure_shows_its_traceback(
    tmp_path: Path,
) -> None:
    """Imports list and read Python's own folders after confinement (they failed before)."""
    program = "import collections.abc, email.message, xml.dom.minidom\nraise ValueError('boom')"
    outcome = await run(tmp_path, program)
    assert not outcome.ok
    assert "Traceback (most recent call last)" in outcome.output
    assert "ValueError: boom" in outcome.output
    assert outcome.output.startswith("[the program raised an exception (see stderr); 0 tool calls]")


async def test_stdout_is_bounded_at_its_exact_edge(tmp_path: Path) -> None:
    for size, whole in ((CODE_OUTPUT_BYTES, True), (CODE_OUTPUT_BYTES + 1, False)):
        program = f"import sys\nsys.stdout.write('o' * {size})"
        stdout = (await run(tmp_path, program)).output.split("[stdout]\n")[1]
        stdout = stdout.split("\n[stderr]")[0]
        assert (stdout == "o" * size) is whole
        assert ("bytes of output omitted" in stdout) is not whole


def test_timeout_argument_at_its_exact_edge() -> None:
    from magi_code.limits import CODE_MAX_TIMEOUT_S
    from magi_code.tools.base import ToolInputError

    tool = CodeTool(("echo",))
    assert tool.parse(json.dumps({"program": "pass", "timeout": CODE_MAX_TIMEOUT_S})).timeout_s == (
        CODE_MAX_TIMEOUT_S
    )
    with pytest.raises(ToolInputError):
        tool.parse(json.dumps({"program": "pass", "timeout": CODE_MAX_TIMEOUT_S + 0.001}))
