"""shell: one command through `/bin/sh -c` in the workspace, owned from spawn to the last child.

Rules:
- The child starts a new session, so it leads its own process group; that group is what we
  signal. It gets stdin from /dev/null and one fresh pipe for stdout and stderr together:
  never a descriptor of ours (the protocol's fds are non-inheritable, and fd 0-2 are
  replaced), so no tool output can reach the wire.
- The group is always reaped before `run` returns or raises: SIGTERM, a grace period, then
  SIGKILL. That happens on timeout, on cancellation (in a shielded scope, after which the
  cancellation propagates), and after a normal exit for background processes left behind.
- Output keeps the first and last halves of SHELL_OUTPUT_BYTES with a note of what was
  dropped; the pipe is drained to the end so a chatty child never blocks on it.
- The command runs in the session's OS sandbox (tools/sandbox) unless its mode is full-access
  or the user allowed this run outside it; the status line says which. A command that failed
  with the sandbox's refusal in its output is marked `sandbox_denied`, so the turn can offer
  to run it again outside.
- With a host that runs commands (`ctx.host.run`: a client terminal over ACP), the host owns
  the process, its kill and its output (whose tail it keeps); the bound on that output holds.
- A face that takes detail events (`ctx.detail`) watches the output as it arrives
  (tools/live_output.py); the result the model gets is the same either way.
"""

import codecs
import subprocess

import anyio
import anyio.abc

from magi_code.records import record
from magi_code.tools import args as A
from magi_code.tools.base import Access, ToolContext, ToolOutcome
from magi_code.tools.host_io import HostRunner
from magi_code.tools.limits import (
    SHELL_DRAIN_S,
    SHELL_KILL_GRACE_S,
    SHELL_MAX_TIMEOUT_S,
    SHELL_OUTPUT_BYTES,
    SHELL_TIMEOUT_S,
)
from magi_code.tools.live_output import LiveFeed
from magi_code.tools.processes import kill_group
from magi_code.tools.sandbox.spawn import SandboxFailed, open_process
from magi_code.tools.summaries import safe_summary

SHELL = "/bin/sh"
SANDBOX_FAILED = ToolOutcome(
    False, "error: the sandbox could not be applied, so the command did not run", "run: failed"
)


@record
class ShellArgs:
    command: str
    timeout_s: float


class Capture:
    """Keeps the first `limit` bytes, then the head half and a sliding tail half."""

    def __init__(self, limit: int = SHELL_OUTPUT_BYTES) -> None:
        self.limit = limit
        self.half = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.eof = False

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.head)
        self.head += chunk[:room]
        rest = chunk[room:]
        if rest:
            self.tail += rest
            del self.tail[: max(0, len(self.tail) - (self.limit - self.half))]

    def text(self) -> str:
        if self.total <= self.limit:
            return bytes(self.head).decode("utf-8", "replace")
        front = codecs.getincrementaldecoder("utf-8")("replace").decode(self.head[: self.half])
        back = bytes(self.head[self.half :] + self.tail)[-(self.limit - self.half) :]
        back = back.lstrip(bytes(range(0x80, 0xC0)))  # no torn character at the cut
        dropped = self.total - self.half - len(back)
        note = f"\n[... {dropped} bytes of output omitted ...]\n"
        return front + note + back.decode("utf-8", "replace")


class Shell:
    name = "shell"

    def __init__(
        self,
        default_timeout_s: float = SHELL_TIMEOUT_S,
        max_timeout_s: float = SHELL_MAX_TIMEOUT_S,
        output_bytes: int = SHELL_OUTPUT_BYTES,
    ) -> None:
        self.default_timeout_s = default_timeout_s
        self.max_timeout_s = max_timeout_s
        self.output_bytes = output_bytes
        self.description = (
            "Run a command with /bin/sh -c in the workspace; stdout and stderr are combined, "
            f"stdin is empty. Timeout in seconds (default {default_timeout_s:g}, "
            f"max {max_timeout_s:g}); the whole process group is killed when it expires. "
            "Background processes left running at exit are killed too."
        )
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": max_timeout_s},
            },
            "required": ["command"],
            "additionalProperties": False,
        }

    def parse(self, arguments: str) -> ShellArgs:
        f = A.load_object(arguments, {"command"}, {"timeout"})
        timeout = A.number(f, "timeout", self.default_timeout_s, 0.0, self.max_timeout_s)
        return ShellArgs(A.text(f, "command"), timeout)

    def access(self, args: ShellArgs, ctx: ToolContext) -> Access:
        return Access("shell", (), args.command)

    def describe(self, args: ShellArgs, ctx: ToolContext) -> str:
        return safe_summary(f"run: {args.command}")

    async def run(self, args: ShellArgs, ctx: ToolContext) -> ToolOutcome:
        if ctx.host is not None and ctx.host.run is not None:
            return await self.run_on_host(args, ctx.host.run, ctx)
        capture = Capture(self.output_bytes)
        sandbox = None if ctx.unconfined else ctx.sandbox
        try:
            confinement = sandbox.shell() if sandbox is not None else None
        except OSError:  # the kernel refused the ruleset: nothing runs unconfined
            return SANDBOX_FAILED
        env = sandbox.env(ctx.env) if sandbox and confinement else dict(ctx.env)
        try:
            # Shielded: a cancellation landing inside the spawn would orphan a started child.
            with anyio.CancelScope(shield=True):
                process = await open_process(
                    [SHELL, "-c", args.command],
                    confinement,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    cwd=ctx.workspace,
                    env=env,
                    start_new_session=True,
                )
        except SandboxFailed:
            return SANDBOX_FAILED
        except OSError:
            return ToolOutcome(False, "error: could not start /bin/sh", "run: failed to start")
        live = LiveFeed(ctx.detail, ctx.activity_id, self.name) if ctx.detail else None
        try:
            with anyio.move_on_after(args.timeout_s) as deadline:
                await _collect(process, capture, live)
            if live is not None:
                await live.end()
        finally:
            exit_code = process.returncode  # None: still running, about to be killed
            with anyio.CancelScope(shield=True):
                await kill_group(process, SHELL_KILL_GRACE_S)
                await process.aclose()
        timed_out = deadline.cancelled_caught and exit_code is None
        where = ""  # no sandbox in this context: nothing to say
        if ctx.sandbox is not None:
            where = f"sandbox: {ctx.sandbox.describe()}" if confinement else "outside the sandbox"
        return _outcome(args, process.returncode, capture, timed_out, where)

    async def run_on_host(self, args: ShellArgs, run: HostRunner, ctx: ToolContext) -> ToolOutcome:
        """The command in the client's terminal; the client owns the process and its kill."""
        try:
            ended = await run(
                args.command, ctx.workspace, ctx.env, args.timeout_s, self.output_bytes
            )
        except Exception:  # noqa: BLE001 - the client's refusal, whatever its words
            return ToolOutcome(False, "error: the client could not run it", "run: failed to start")
        text, data = ended.output, ended.output.encode("utf-8", "replace")
        if len(data) > self.output_bytes:  # a client that ignored the limit: keep its tail
            text = data[-self.output_bytes :].decode("utf-8", "ignore")
        if ended.truncated or len(data) > self.output_bytes:
            text = "[... earlier output omitted ...]\n" + text
        if ended.timed_out:
            status = f"timed out after {args.timeout_s:g} s; process killed"
        elif ended.exit_code is None:
            status = f"killed by signal {ended.signal or 'unknown'}"
        else:
            status = f"exit code {ended.exit_code}"
        ok = not ended.timed_out and ended.exit_code == 0
        if not text.endswith("\n"):
            text += "\n" if text else "(no output)\n"
        return ToolOutcome(ok, f"{text}[{status}]", f"run: {args.command} ({status})")


async def _collect(process: anyio.abc.Process, capture: Capture, live: LiveFeed | None) -> None:
    """Read until EOF; once the shell exits, leftover writers get SHELL_DRAIN_S to finish.
    Meanwhile `live` (if any) shows a person what arrives."""
    stream = process.stdout
    assert stream is not None

    async def pump() -> None:
        async for chunk in stream:
            capture.add(chunk)
            if live is not None:
                live.add(chunk)
        capture.eof = True

    async with anyio.create_task_group() as reporting:
        if live is not None:
            reporting.start_soon(live.report)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(pump)
                await process.wait()
                drain_until = anyio.current_time() + SHELL_DRAIN_S
                tg.cancel_scope.deadline = min(tg.cancel_scope.deadline, drain_until)
        finally:
            reporting.cancel_scope.cancel()


# What a command says when the sandbox refused it (the kernel's EACCES, EPERM and EROFS).
SANDBOX_REFUSALS = ("Permission denied", "Operation not permitted", "Read-only file system")


def _outcome(
    args: ShellArgs, code: int | None, capture: Capture, timed_out: bool, where: str
) -> ToolOutcome:
    text = capture.text()
    if timed_out:
        status = f"timed out after {args.timeout_s:g} s; process group killed"
    elif code is not None and code < 0:
        status = f"killed by signal {-code}"
    else:
        status = f"exit code {code}"
    if not timed_out and not capture.eof:
        status += "; background processes holding the output were killed"
    ok = not timed_out and code == 0
    confined = where.startswith("sandbox:")
    denied = not ok and confined and any(refusal in text for refusal in SANDBOX_REFUSALS)
    if not text.endswith("\n"):
        text += "\n" if text else "(no output)\n"
    output = f"{text}[{status}{'; ' if where else ''}{where}]"
    summary = f"run: {args.command} ({status})"
    return ToolOutcome(ok, output, summary, sandbox_denied=denied)
