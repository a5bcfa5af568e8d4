"""The `agent` tool: one subagent, a child magi-code run headless for one turn.

    melchior fork --role=sub (as this session) -> spawn `magi-code serve --stdio` with the fork's
    environment and the delegation (runner/delegation.py) -> initialize, session.create,
    turn.start(prompt) -> forward its approvals, keep its final text -> its report -> end it

Rules:
- A child is a separate process (driven by `magi_code.client.LocalAgentClient`, the local-agent
  protocol) with its own `melchior serve`; it is invoked as `subagent` and runs the chosen
  subagent profile (instructions, model, tool allow-list) under its parent's ceiling.
- At most `max_concurrent` children run at once per session, and none is started at
  `max_depth` (limits.py; settings may lower them): over the bound the call fails, it never
  queues.
- The parent's turn owns a foreground child: cancelling the turn cancels the child's run,
  closes its input and kills it after CHILD_EXIT_MS/2, so the child and its socket are gone
  within CHILD_EXIT_MS. A background child is owned by the session and ended when it closes.
- A child's approval is forwarded to the parent's face through the parent's broker, labelled
  with the child; whatever the parent's broker says (deny on expiry, cancel, close) is the
  answer. A background child has no broker: its approvals are denied.
- The parent emits `activity` kind `subagent` (started, completed, failed) with a safe summary:
  the profile and the child's id, never its prompt or text.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.from_thread
import anyio.to_thread

from magi_code import limits
from magi_code.records import field, record
from magi_code.runner.checkpointing import READ_ONLY_TOOLS
from magi_code.runner.events import Activity
from magi_code.runner.turn import new_id
from magi_code.tools import args as A
from magi_code.tools.base import Access, ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.summaries import clip_utf8, safe_summary

if TYPE_CHECKING:
    from magi_code.client import LocalAgentClient
    from magi_code.context.profiles import Profile

Approve = Callable[[str], bool]  # a labelled summary -> allowed (blocking; from a thread)


@record
class AgentArgs:
    prompt: str
    profile: str
    background: bool


@record(frozen=False)
class Child:
    """One subagent as its parent sees it (what Mission Control lists)."""

    agent_id: str
    profile: str
    background: bool
    state: str = "starting"  # starting | running | completed | failed | cancelled
    session_id: str | None = None
    pid: int | None = None
    socket: str | None = None
    started: float = field(default_factory=time.monotonic)
    first_event_s: float | None = None  # from the tool call to the child's first run event
    text: str = ""
    client: LocalAgentClient | None = None
    up: threading.Event = field(default_factory=threading.Event)  # its session exists, or it failed

    def view(self) -> dict[str, Any]:
        return {
            "kind": "subagent",
            "id": self.agent_id,
            "profile": self.profile,
            "state": self.state,
            "background": self.background,
            "session_id": self.session_id,
        }


class Children:
    """The children of one session: the concurrency bound, a name minted ahead, and ending
    them all."""

    def __init__(self, max_concurrent: int) -> None:
        self.max_concurrent = max_concurrent
        self.all: dict[str, Child] = {}
        self._lock = threading.Lock()
        self._slots = 0
        # One `melchior fork` done ahead, so that the next child starts without waiting for an
        # exec; melchior removes a minted key whose child never came up when this session ends.
        self._spare: dict[str, Any] | None = None
        self._minting = False

    def name(self, command: list[str], env: dict[str, str]) -> dict[str, Any] | None:
        """A fork spec for the next child: the spare, else a fresh fork. Blocking."""
        with self._lock:
            spec, self._spare = self._spare, None
        return spec or fork(command, env)

    def mint_ahead(self, command: list[str], env: dict[str, str]) -> None:
        """Mint the spare on a thread, once a child has ended (not while one starts: on a
        busy machine the two execs would slow each other)."""
        with self._lock:
            if self._minting or self._spare is not None:
                return
            self._minting = True

        def mint() -> None:
            spec = fork(command, env)
            with self._lock:
                self._spare, self._minting = spec, False

        threading.Thread(target=mint, name="melchior-fork", daemon=True).start()

    def reserve(self) -> bool:
        with self._lock:
            if self._slots >= self.max_concurrent:
                return False
            self._slots += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._slots -= 1

    def running(self) -> list[Child]:
        return [c for c in self.all.values() if c.state in ("starting", "running")]

    def stop_all(self) -> None:
        for child in self.running():
            stop(child)


def reads_only(profile: Profile) -> bool:
    """Whether a child of `profile` changes no file: its tool allow-list names only tools that
    never do (READ_ONLY_TOOLS; a glob might match any), and it runs no Code Mode."""
    return (
        profile.tools is not None
        and all(name in READ_ONLY_TOOLS for name in profile.tools)
        and profile.code_mode is not True
    )


def stop(child: Child) -> None:
    """Cancel the child's run, close its input, and kill it if it is not gone in time."""
    client = child.client
    if client is None:
        return
    if child.state in ("starting", "running"):
        child.state = "cancelled"
    client.close_input()
    try:
        client.process.wait(limits.CHILD_EXIT_MS / 2000)
    except subprocess.TimeoutExpired:
        client.process.kill()
        client.process.wait()


def fork(command: list[str], env: Mapping[str, str]) -> dict[str, Any] | None:
    """`melchior fork --role=sub` as this session: the child's id and environment, or None."""
    from magi_code.runner.peers import exec_json

    spec = exec_json(command, ["fork", "--role=sub"], env)
    if not isinstance(spec, dict) or not isinstance(spec.get("environment"), dict):
        return None
    return spec


def drive(child: Child, client: LocalAgentClient, prompt: str, approve: Approve) -> str:
    """Run one turn in the child; its outcome (`run.finished`), keeping its final text."""
    started = child.started
    client.request("initialize", {"required_capabilities": []})
    session = client.request("session.create")
    child.session_id = str(session["session_id"])  # its melchior is up: it can be followed
    child.state = "running"
    child.up.set()
    client.request("turn.start", {"session_id": child.session_id, "prompt": prompt})
    texts: dict[str, list[str]] = {}
    last = ""
    while True:
        event = client.next_event(limits.STREAM_INACTIVITY_S)
        if child.first_event_s is None:
            child.first_event_s = time.monotonic() - started
        data = event.data
        if event.name == "message.reconcile":
            parts = texts.setdefault(str(data["message_id"]), [])
            parts.append(str(data["text"]))
            if data.get("last_part"):
                last = "".join(parts)
        elif event.name == "approval.requested":
            allow = approve(f"subagent {child.agent_id}: {data.get('summary', '')}")
            client.send(
                "approval.answer",
                {
                    "session_id": child.session_id,
                    "run_id": data["run_id"],
                    "approval_id": data["approval_id"],
                    "allow": allow,
                },
            )
        elif event.name == "run.finished":
            child.text = clip_utf8(last, limits.SUBAGENT_TEXT_BYTES)
            return str(data.get("outcome", "failed"))


class AgentTool:
    """The `agent` tool of one session."""

    name = "agent"

    def __init__(
        self,
        children: Children,
        profiles: list[Profile],
        spawn: Callable[[dict[str, str]], LocalAgentClient],
        child_env: Callable[[str, dict[str, str]], dict[str, str]],
        fork_env: Callable[[], dict[str, str] | None],
        command: list[str],
        report: Callable[[str], str | None],
    ) -> None:
        self.children, self.spawn, self.child_env = children, spawn, child_env
        self.fork_env, self.command, self.report = fork_env, command, report
        self.profiles = {p.name: p for p in profiles}
        listing = "; ".join(f"{p.name}: {p.description}" for p in profiles)
        self.description = (
            "Start a subagent: a separate agent that does one task and returns its final text "
            f"and report. Profiles: {listing}. With background true it returns at once with "
            "the agent's id, which melchior_status and melchior_task follow."
        )
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "the task, self-contained"},
                "profile": {"type": "string", "enum": sorted(self.profiles)},
                "background": {"type": "boolean"},
            },
            "required": ["prompt"],
            "additionalProperties": False,
        }

    def parse(self, arguments: str) -> AgentArgs:
        fields = A.load_object(arguments, {"prompt"}, {"profile", "background"})
        prompt = A.text(fields, "prompt")
        if len(prompt.encode("utf-8", "surrogatepass")) > limits.PROMPT_BYTES:
            raise ToolInputError("arguments_too_large")
        profile = A.text(fields, "profile", "general")
        if profile not in self.profiles:
            raise ToolInputError("invalid_arguments")
        return AgentArgs(prompt, profile, A.flag(fields, "background"))

    def access(self, args: AgentArgs, ctx: ToolContext) -> Access:
        # The child asks for its own actions, through this session: starting one is a read.
        # What it changes in the workspace is this turn's (runner/checkpointing.py).
        writes = not reads_only(self.profiles[args.profile])
        return Access("read", (ctx.workspace,), delegated_writes=writes)

    def describe(self, args: AgentArgs, ctx: ToolContext) -> str:
        mode = "background subagent" if args.background else "subagent"
        return safe_summary(f"{mode} {args.profile}")

    def _name(self) -> dict[str, Any] | None:
        """A fork spec for the next child, as this session (waits while melchior boots);
        None without melchior. Blocking."""
        env = self.fork_env()
        return self.children.name(self.command, env) if env is not None else None

    async def run(self, args: AgentArgs, ctx: ToolContext) -> ToolOutcome:
        summary, called = self.describe(args, ctx), time.monotonic()
        if not self.children.reserve():
            return ToolOutcome(False, json.dumps({"error": "too_many_subagents"}), summary)
        reserved = True
        try:
            spec = await anyio.to_thread.run_sync(self._name)
            if spec is None:
                return ToolOutcome(False, json.dumps({"error": "melchior_unavailable"}), summary)
            child = Child(str(spec["id"]), args.profile, args.background, started=called)
            self.children.all[child.agent_id] = child
            activity = new_id()
            await _emit(ctx, Activity(activity, "subagent", "started", "agent", _label(child)))
            env = self.child_env(args.profile, {k: str(v) for k, v in spec["environment"].items()})
            if args.background:
                reserved = False  # the thread below releases the slot
                self._background(child, env, args.prompt)
                await anyio.to_thread.run_sync(
                    child.up.wait, limits.MELCHIOR_START_MS / 1000, abandon_on_cancel=True
                )
                output = {
                    "agent": child.agent_id,
                    "session": child.session_id,
                    "state": child.state,
                }
                await _emit(ctx, Activity(activity, "subagent", "completed", "agent", summary))
                return ToolOutcome(True, json.dumps(output), f"{summary} {child.agent_id}")
            try:
                outcome = await self._foreground(child, env, args.prompt, ctx)
            except anyio.get_cancelled_exc_class():
                child.state = "cancelled"
                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    await _emit(
                        ctx, Activity(activity, "subagent", "failed", "agent", _label(child))
                    )
                raise
            state: Literal["completed", "failed"] = (
                "completed" if outcome == "completed" else "failed"
            )
            child.state = state if outcome != "cancelled" else "cancelled"
            await _emit(ctx, Activity(activity, "subagent", state, "agent", _label(child)))
            result = {
                "agent": child.agent_id,
                "session": child.session_id,
                "outcome": outcome,
                "first_event_ms": _ms(child.first_event_s),
                "text": child.text,
                "report": await anyio.to_thread.run_sync(self.report, child.agent_id),
            }
            return ToolOutcome(outcome == "completed", json.dumps(result), _label(child))
        finally:
            if reserved:
                self.children.release()
                forking = self.fork_env()  # melchior's boot has ended: `_name` waited for it
                if forking is not None:
                    self.children.mint_ahead(self.command, forking)

    async def _foreground(
        self, child: Child, env: dict[str, str], prompt: str, ctx: ToolContext
    ) -> str:
        token = anyio.lowlevel.current_token()
        approve_async = ctx.approve

        async def ask(summary: str) -> bool:
            return approve_async is not None and await approve_async(summary)

        def approve(summary: str) -> bool:
            return bool(anyio.from_thread.run(ask, summary, token=token))

        try:
            client = child.client = await anyio.to_thread.run_sync(self.spawn, env)
            child.pid = client.process.pid
            return await anyio.to_thread.run_sync(
                _outcome, child, client, prompt, approve, abandon_on_cancel=True
            )
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(stop, child)

    def _background(self, child: Child, env: dict[str, str], prompt: str) -> None:
        def main() -> None:
            try:
                client = child.client = self.spawn(env)
                child.pid = client.process.pid
                outcome = _outcome(child, client, prompt, lambda _summary: False)
                child.state = "completed" if outcome == "completed" else "failed"
            finally:
                child.up.set()
                stop(child)
                self.children.release()

        threading.Thread(target=main, name=f"subagent-{child.agent_id}", daemon=True).start()


def _outcome(child: Child, client: LocalAgentClient, prompt: str, approve: Approve) -> str:
    from magi_code.client import ChildGone, ErrorResponse

    try:
        return drive(child, client, prompt, approve)
    except (ChildGone, ErrorResponse, TimeoutError, OSError, KeyError):
        return "failed"


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)


def _label(child: Child) -> str:
    return safe_summary(f"subagent {child.profile} {child.agent_id} {child.state}")


async def _emit(ctx: ToolContext, event: Activity) -> None:
    if ctx.emit is not None:
        await ctx.emit(event)
