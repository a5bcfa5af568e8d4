"""code: a Python program in its own interpreter, calling the session's tools through a bridge.

The model writes one program; ten tool calls in it cost one model round trip. Rules:
- The program runs in `python -I -S` (tools/code_child.py bootstraps it) inside the session's
  OS sandbox, in every sandbox mode (tools/sandbox: reads of the workspace and Python's own
  files, no writes, no sockets, no processes); where there is none it does not run
  (`sandbox_unavailable`). It runs in the workspace,
  with the tools' scrubbed environment, stdin from /dev/null, in its own session: its group
  is killed on the wall clock, on a cancel and after it exits (nothing it started outlives it).
- Its address space is capped (CODE_MEMORY_BYTES); stdout and stderr are kept up to
  CODE_OUTPUT_BYTES each (head and tail) and drained past that.
- The bridge is a socketpair on a descriptor of its own (never the program's stdout): one
  JSON line per call each way. Every call is handed to `ToolContext.bridge`, where the turn
  decides it with the Code Mode policy, asks through the approval broker, runs hooks and
  makes it an activity. A call line over CODE_BRIDGE_LINE_BYTES, a line that is not JSON (or
  nests deeper than UNTRUSTED_JSON_DEPTH) or more than CODE_BRIDGED_CALLS calls stop the program.
- The result is a status line, the JSON of a top-level `result` when the program sets one,
  and its stdout and stderr, in that order (so the tools' output backstop can only cut the
  last). The call is ok only when the program ran to its end.
- The `code` call itself is a read of the workspace for the direct policy: the program can
  do nothing outside its interpreter but through the bridge, where each call is decided.
"""

import json
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from magi_code import untrusted_json
from magi_code.limits import (
    CODE_BRIDGE_LINE_BYTES,
    CODE_BRIDGED_CALLS,
    CODE_DRAIN_S,
    CODE_KILL_GRACE_S,
    CODE_MAX_TIMEOUT_S,
    CODE_MEMORY_BYTES,
    CODE_OUTPUT_BYTES,
    CODE_RESULT_BYTES,
    CODE_TIMEOUT_S,
)
from magi_code.records import record
from magi_code.tools import args as A
from magi_code.tools.base import Access, Bridge, ToolContext, ToolOutcome
from magi_code.tools.processes import kill_group
from magi_code.tools.sandbox.modes import SandboxUnavailable
from magi_code.tools.sandbox.spawn import SandboxFailed, open_process
from magi_code.tools.shell import Capture
from magi_code.tools.summaries import safe_summary

CHILD = Path(__file__).with_name("code_child.py")


@record
class CodeArgs:
    program: str
    timeout_s: float


@record(frozen=False)
class Conversation:
    """What the bridge saw of one program."""

    calls: int = 0
    done: dict[str, object] | None = None
    broken: str | None = None  # why the bridge stopped the program


class CodeTool:
    name = "code"

    def __init__(
        self,
        tools: tuple[str, ...],
        *,
        default_timeout_s: float = CODE_TIMEOUT_S,
        max_timeout_s: float = CODE_MAX_TIMEOUT_S,
        memory_bytes: int = CODE_MEMORY_BYTES,
    ) -> None:
        self.default_timeout_s, self.max_timeout_s = default_timeout_s, max_timeout_s
        self.memory_bytes = memory_bytes
        self.description = (
            "Run a Python program (standard library only) in a separate interpreter in the "
            "workspace. Call the session's tools from it as functions with keyword arguments, "
            f"e.g. tools.read_file(path='a.txt'); available: {', '.join(tools)}. A call "
            "returns the tool's text or raises ToolError. Files and commands are reachable "
            "only through `tools`. Set a top-level variable `result` to return a JSON value; "
            "stdout and stderr are returned too. Use it to make many tool calls in one step. "
            f"Timeout in seconds (default {default_timeout_s:g}, max {max_timeout_s:g}); "
            f"memory {memory_bytes // (1024 * 1024)} MiB."
        )
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {
                "program": {"type": "string"},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": max_timeout_s},
            },
            "required": ["program"],
            "additionalProperties": False,
        }

    def parse(self, arguments: str) -> CodeArgs:
        f = A.load_object(arguments, {"program"}, {"timeout"})
        timeout = A.number(f, "timeout", self.default_timeout_s, 0.0, self.max_timeout_s)
        return CodeArgs(A.text(f, "program"), timeout)

    def access(self, args: CodeArgs, ctx: ToolContext) -> Access:
        return Access("read", (ctx.workspace,))

    def describe(self, args: CodeArgs, ctx: ToolContext) -> str:
        lines = args.program.strip().splitlines() or [""]
        more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
        return safe_summary(f"code: {lines[0]}{more}")

    async def run(self, args: CodeArgs, ctx: ToolContext) -> ToolOutcome:
        if ctx.bridge is None:
            return ToolOutcome(False, "error: Code Mode is off", "code: off")
        if ctx.sandbox is None:
            return _unavailable("this session has no sandbox")

        try:
            confinement = ctx.sandbox.code_mode(CHILD)
        except SandboxUnavailable as none:
            return _unavailable(str(none))
        except OSError:
            return _unavailable("the kernel refused the sandbox")
        parent, child = socket.socketpair()
        try:
            command = [sys.executable, "-I", "-S", str(CHILD), str(child.fileno())]
            command += [str(self.memory_bytes), str(CODE_RESULT_BYTES)]
            with anyio.CancelScope(shield=True):  # a cancel inside the spawn would orphan it
                process = await open_process(
                    command,
                    confinement,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=ctx.workspace,
                    env=dict(ctx.env),
                    start_new_session=True,
                    pass_fds=(child.fileno(),),
                )
                bridge = await anyio.abc.UNIXSocketStream.from_socket(parent)
        except SandboxFailed:
            parent.close()
            return _unavailable("the sandbox could not be applied")
        except OSError:
            parent.close()
            return ToolOutcome(False, "error: could not start Python", "code: failed to start")
        finally:
            child.close()
        out, err, seen = Capture(CODE_OUTPUT_BYTES), Capture(CODE_OUTPUT_BYTES), Conversation()
        try:
            with anyio.move_on_after(args.timeout_s) as deadline:
                await _supervise(process, bridge, args.program, ctx.bridge, out, err, seen)
        finally:
            exit_code = process.returncode
            with anyio.CancelScope(shield=True):
                await kill_group(process, CODE_KILL_GRACE_S)
                await process.aclose()
                await bridge.aclose()
        timed_out = deadline.cancelled_caught and exit_code is None
        why = self._why(args, seen, timed_out, process.returncode)
        calls = f"{seen.calls} tool call{'' if seen.calls == 1 else 's'}"
        parts = [f"[{why}; {calls}]"]  # first: whatever the backstop on output may cut
        result = (seen.done or {}).get("result")
        if isinstance(result, str):
            parts.append(f"[result]\n{result}")
        parts += [f"[stdout]\n{out.text()}", f"[stderr]\n{err.text()}"]
        summary = f"{self.describe(args, ctx)} ({why})"
        return ToolOutcome(why == "completed", "\n".join(parts), summary)

    def _why(
        self,
        args: CodeArgs,
        seen: Conversation,
        timed_out: bool,
        exit_code: int | None,
    ) -> str:
        status = (seen.done or {}).get("status")
        if timed_out:
            why = f"stopped: wall-clock limit of {args.timeout_s:g} s reached; process killed"
        elif seen.broken is not None:
            why = f"stopped: {seen.broken}; process killed"
        elif status == "memory":
            why = f"stopped: memory limit of {self.memory_bytes // (1024 * 1024)} MiB reached"
        elif status == "ok" and exit_code == 0:
            why = "completed"
        elif status == "error":
            why = "the program raised an exception (see stderr)"
        elif exit_code is not None and exit_code < 0:
            why = f"killed by signal {-exit_code}"
        else:
            why = f"exit code {exit_code}"
        return why


async def _supervise(
    process: anyio.abc.Process,
    bridge: anyio.abc.SocketStream,
    program: str,
    tools: Bridge,
    out: Capture,
    err: Capture,
    seen: Conversation,
) -> None:
    assert process.stdout is not None and process.stderr is not None
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump, process.stdout, out)
        tg.start_soon(_pump, process.stderr, err)
        await _serve(bridge, program, tools, seen)
        if seen.broken is not None:
            tg.cancel_scope.cancel()
            return
        await process.wait()
        drained_by = anyio.current_time() + CODE_DRAIN_S
        tg.cancel_scope.deadline = min(tg.cancel_scope.deadline, drained_by)


async def _serve(
    bridge: anyio.abc.SocketStream, program: str, tools: Bridge, seen: Conversation
) -> None:
    """Hand the program over, then answer its calls until it is done or gone."""
    start = {"program": program, "tools": list(tools.names)}
    await bridge.send(json.dumps(start).encode() + b"\n")
    lines = BufferedByteReceiveStream(bridge)
    while True:
        try:
            line = await lines.receive_until(b"\n", CODE_BRIDGE_LINE_BYTES)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
            return  # the program ended without saying so: its exit code tells
        except anyio.DelimiterNotFound:
            line = None
        if line is None or len(line) > CODE_BRIDGE_LINE_BYTES:  # a read may overshoot the cap
            seen.broken = f"a tool call over {CODE_BRIDGE_LINE_BYTES} bytes"
            return
        message = _message(line)
        if "done" in message and isinstance(message["done"], dict):
            seen.done = message["done"]
            return
        call = message.get("call")
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            seen.broken = "a malformed tool call"
            return
        seen.calls += 1
        if seen.calls > CODE_BRIDGED_CALLS:
            seen.broken = f"more than {CODE_BRIDGED_CALLS} tool calls"
            return
        try:
            arguments = json.dumps(call.get("arguments", {}), ensure_ascii=False)
        except ValueError:
            arguments = "{}"
        outcome = await tools.call(call["name"], arguments)
        reply = {"id": call.get("id"), "ok": outcome.ok, "output": outcome.output}
        try:
            await bridge.send(json.dumps(reply).encode() + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # the program is gone


def _unavailable(why: str) -> ToolOutcome:
    """Code Mode never runs a program outside the OS sandbox."""
    text = f"error: sandbox_unavailable: {why}; Code Mode programs run only inside the sandbox"
    return ToolOutcome(False, text, "code: sandbox unavailable")


def _message(line: bytes) -> dict[str, object]:
    try:
        value = untrusted_json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


async def _pump(stream: anyio.abc.ByteReceiveStream, capture: Capture) -> None:
    async for chunk in stream:
        capture.add(chunk)
