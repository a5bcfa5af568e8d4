"""Running hooks: one process per matching hook, in settings order, each an activity of the run.

A hook process starts in its own session (its group is what a timeout or a cancel kills),
in the workspace, with the tools' credential-scrubbed environment, stdin holding the event's
JSON object and nothing of ours: stdout and stderr are fresh pipes, read up to their bounds
and drained past them so a chatty hook never blocks. What its exit means is decided in
hooks.py. Events run their hooks one after another; the first block ends the event.

The turn hands in a `Sink`: each hook run is an `activity` record and an activity event
(`hook:<event>`), and a failed hook is also a `hook_failed` diagnostic. Additional context
of session_start and user_prompt_submit rides on the record (`context`), which is how it
reaches the model, now and on replay; post_tool_use context is the caller's to place.
"""

import subprocess
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc

from magi_code.config.own_commands import resolved_program, working_folder
from magi_code.limits import (
    HOOK_CONTEXT_BYTES,
    HOOK_DRAIN_S,
    HOOK_KILL_GRACE_S,
    HOOK_REASON_BYTES,
)
from magi_code.limits import HOOK_STDOUT_BYTES as STDOUT_BYTES
from magi_code.records import field, record
from magi_code.runner.hooks import Finished, Hook, applying, framed, payload, verdict
from magi_code.tools.processes import kill_group
from magi_code.tools.summaries import ELLIPSIS, clip_utf8

REPLAYED_CONTEXT = frozenset({"session_start", "user_prompt_submit"})


class Sink(Protocol):
    """What of the turn a hook run uses."""

    def next_activity(self) -> str: ...  # raises when the run's activity bound is reached

    async def side_activity(
        self, activity_id: str, name: str, state: str, summary: str, **extra: Any
    ) -> None: ...

    async def warn(self, code: str, summary: str) -> None: ...


@record(frozen=False)
class Fired:
    blocked: str | None = None  # the reason the model gets
    contexts: list[str] = field(default_factory=list)  # framed, within HOOK_CONTEXT_BYTES


class HookRunner:
    def __init__(
        self,
        hooks: Mapping[str, tuple[Hook, ...]],
        session_id: str,
        cwd: Path,
        env: Mapping[str, str],
        *,
        home: str | None = None,  # MC_HOME: global hooks start in a folder of theirs there
        project_events: Collection[str] = (),  # the events whose list a trusted project set
    ) -> None:
        self.hooks, self.session_id, self.cwd, self.env = hooks, session_id, cwd, env
        self.home, self.project_events = home, frozenset(project_events)

    def start_place(self, hook: Hook) -> tuple[Path, tuple[str, ...]]:
        """Where a hook starts and what it runs (config/own_commands.py): a trusted project's
        own in the workspace, a global one in the folder it names or one of its own under
        MC_HOME, its program never found in the workspace."""
        project = hook.event in self.project_events
        workspace = str(self.cwd)
        if self.home is None:
            folder = hook.cwd or workspace
        else:
            place = f"hooks/{hook.event}"
            folder = working_folder(hook.cwd, project, workspace, self.home, place)
        outside = None if project else workspace
        program = resolved_program(hook.argv[0], self.env.get("PATH"), outside)
        return Path(folder), (program, *hook.argv[1:])

    def wants(self, event: str) -> bool:
        return bool(self.hooks.get(event))

    async def fire(
        self,
        sink: Sink,
        event: str,
        tool: str | None = None,
        *,
        on_block: Mapping[str, str] | None = None,  # more fields for a blocking hook's record
        **fields: object,
    ) -> Fired:
        """Run the event's hooks (those matching `tool`); `fields` go into the payload."""
        fired = Fired()
        room = HOOK_CONTEXT_BYTES
        named = {"tool": tool} if tool is not None else {}
        data = payload(event, self.session_id, str(self.cwd), **named, **fields)
        for hook in applying(self.hooks, event, tool):
            activity_id, name = sink.next_activity(), f"hook:{event}"
            await sink.side_activity(activity_id, name, "started", hook.label)
            try:
                folder, argv = self.start_place(hook)
                finished = await run_hook(hook, data, folder, self.env, argv)
            except BaseException:  # a cancel: the activity ends, the cancellation goes on
                with anyio.CancelScope(shield=True):
                    await sink.side_activity(activity_id, name, "failed", "interrupted")
                raise
            decided = verdict(hook, finished)
            if decided.problem is not None:
                why = f"{decided.problem}: {hook.label}"
                await sink.side_activity(activity_id, name, "failed", why)
                await sink.warn("hook_failed", f"A {event} hook failed ({why}); ignored.")
            elif decided.blocked is not None:
                summary = f"blocked: {decided.blocked}"
                await sink.side_activity(
                    activity_id, name, "completed", summary, **(on_block or {})
                )
                fired.blocked = decided.blocked
                return fired
            else:
                extra: dict[str, Any] = {}
                done = "exit 0"
                if decided.context is not None and room > len(ELLIPSIS.encode()):
                    context = clip_utf8(decided.context, room)
                    room -= len(context.encode("utf-8"))
                    fired.contexts.append(framed(event, context))
                    done = "added context"
                    if event in REPLAYED_CONTEXT:
                        extra["context"] = fired.contexts[-1]
                await sink.side_activity(activity_id, name, "completed", done, **extra)
        return fired


async def run_hook(
    hook: Hook,
    data: bytes,
    cwd: Path,
    env: Mapping[str, str],
    argv: tuple[str, ...] | None = None,
) -> Finished:
    """Run one hook (`argv`: its command as resolved, else as written) to its end or its
    timeout; its whole process group is gone on return."""
    try:
        with anyio.CancelScope(shield=True):  # a cancel inside the spawn would orphan it
            process = await anyio.open_process(
                list(argv or hook.argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,
            )
    except OSError:
        return Finished(None, b"", b"", started=False)
    out, err = bytearray(), bytearray()
    try:
        with anyio.move_on_after(hook.timeout_ms / 1000) as deadline:
            await _converse(process, data, out, err)
    finally:
        exit_code = process.returncode
        with anyio.CancelScope(shield=True):
            await kill_group(process, HOOK_KILL_GRACE_S)
            await process.aclose()
    timed_out = deadline.cancelled_caught and exit_code is None
    return Finished(exit_code, bytes(out), bytes(err), timed_out=timed_out)


async def _converse(
    process: anyio.abc.Process, data: bytes, out: bytearray, err: bytearray
) -> None:
    assert process.stdin and process.stdout and process.stderr
    async with anyio.create_task_group() as tg:
        tg.start_soon(_feed, process.stdin, data)
        tg.start_soon(_keep, process.stdout, out, STDOUT_BYTES + 1)
        tg.start_soon(_keep, process.stderr, err, HOOK_REASON_BYTES)
        await process.wait()
        drained_by = anyio.current_time() + HOOK_DRAIN_S
        tg.cancel_scope.deadline = min(tg.cancel_scope.deadline, drained_by)


async def _feed(stream: anyio.abc.ByteSendStream, data: bytes) -> None:
    """Write the event, then close stdin; a hook that never reads it loses nothing of ours."""
    try:
        await stream.send(data)
        await stream.aclose()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


async def _keep(stream: anyio.abc.ByteReceiveStream, kept: bytearray, limit: int) -> None:
    """Keep the first `limit` bytes and read the rest away to EOF."""
    async for chunk in stream:
        if len(kept) < limit:
            kept += chunk[: limit - len(kept)]
