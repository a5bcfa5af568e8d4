"""The terminal face: one prompt (`--prompt TEXT`) or a line-by-line session (`magi-code`).

It drives the same runner as the local agent: admitted startup, the retention sweep of expired
sessions (sessions/retention.py; interactive startup only), a session from the store,
`run_turn` with an emitter that writes to the terminal. Replies stream to stdout; tool
activity, approvals and diagnostics go to stderr; an approval is answered at the terminal
(y/N, default deny). EOF or Ctrl-C ends the session; a turn cut short is recorded as such.

Folder trust: on start in an untrusted folder that holds project definitions (settings,
agents, skills, hooks, MCP), the line-by-line session asks once, before startup: trust (recorded
in the global settings), continue without them, or quit. `--prompt` never asks. Each project
key the folder's trust drops is named in one warning on stderr.
"""

import os
import sys
import time
from pathlib import Path

import anyio

from magi_code.runner.entry import start_turn
from magi_code.runner.events import (
    Activity,
    Diagnostic,
    MessageDelta,
    MessageReconcile,
    RunEvent,
    RunFinished,
)
from magi_code.runner.startup import Admitted, StartupError, admit
from magi_code.runner.turn import TurnControl
from magi_code.sessions import Attachment, Selection, SessionStore
from magi_code.sessions.retention import auto_prune
from magi_code.tools.approvals import ApprovalBroker


class ConsoleEmitter:
    def __init__(self) -> None:
        self.shown: dict[str, str] = {}  # message_id -> text already on screen
        self.asked, self.questions = anyio.create_memory_object_stream[str](16)

    def delta(self, event: MessageDelta) -> None:
        self.shown[event.message_id] = self.shown.get(event.message_id, "") + event.text
        sys.stdout.write(event.text)
        sys.stdout.flush()

    async def critical(self, event: RunEvent) -> None:
        if isinstance(event, MessageReconcile):
            shown = self.shown.get(event.message_id, "")
            if event.part == 0 and event.text.startswith(shown):
                sys.stdout.write(event.text[len(shown) :])  # only what deltas missed
            elif event.part == 0:
                sys.stdout.write("\n" + event.text)
            else:
                sys.stdout.write(event.text)
            if event.last_part:
                sys.stdout.write("\n")
            sys.stdout.flush()
        elif isinstance(event, Activity):
            print(f"  [{event.name} {event.state}] {event.summary}", file=sys.stderr)
        elif isinstance(event, Diagnostic):
            print(f"  ! {event.summary}", file=sys.stderr)
        elif isinstance(event, RunFinished) and event.outcome != "completed":
            print(f"  ({event.outcome}: {event.error_code or 'stopped'})", file=sys.stderr)

    async def announce(self, approval_id: str, summary: str, expires_in_ms: int) -> None:
        del expires_in_ms
        print(f"  ? allow: {summary} [y/N] ", end="", file=sys.stderr, flush=True)
        await self.asked.send(approval_id)


class Console:
    def __init__(self, admitted: Admitted, attachment: Attachment, store: SessionStore) -> None:
        self.admitted, self.attachment, self.store = admitted, attachment, store

    async def turn(self, prompt: str) -> RunFinished:
        emitter = ConsoleEmitter()
        control = TurnControl()
        broker = ApprovalBroker(emitter.announce)
        selection = (self.admitted.provider, self.admitted.model, self.admitted.thinking)
        async with anyio.create_task_group() as group:
            group.start_soon(self.answer_approvals, broker, emitter)
            try:
                finished = await start_turn(
                    self.admitted,
                    self.attachment,
                    selection,
                    prompt,
                    run_id=os.urandom(16).hex(),
                    emitter=emitter,
                    control=control,
                    approvals=broker,
                )
            finally:
                group.cancel_scope.cancel()
        await emitter.critical(finished)
        return finished

    async def answer_approvals(self, broker: ApprovalBroker, emitter: ConsoleEmitter) -> None:
        async for approval_id in emitter.questions:
            line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
            broker.answer(approval_id, line.strip().lower() in ("y", "yes"))


TRUST_QUESTION = (
    "magi-code: this folder has project settings or definitions and is not trusted:\n"
    "{found}\n"
    "  [t] trust it (recorded in {settings})\n"
    "  [c] continue without them\n"
    "  [q] quit\n"
    "choice [t/c/Q]: "
)


def ask_trust(cwd: str, mc_home: str) -> bool:
    """Ask whether to trust `cwd` when it needs asking; False means quit."""
    from magi_code.config import paths, trust, trust_file

    settings_file = paths.Paths(mc_home).settings
    found = trust.project_definitions(cwd, mc_home)
    if not found or trust.trusted_for(cwd, settings_file):
        return True
    listed = "\n".join(f"  {path}" for path in found)
    print(TRUST_QUESTION.format(found=listed, settings=settings_file), end="", file=sys.stderr)
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer in ("t", "trust"):
        try:
            trust_file.trust(settings_file, cwd)
        except trust_file.TrustFileError as failed:
            print(f"magi-code: {failed}", file=sys.stderr)
            return False
        return True
    return answer in ("c", "continue")


async def main_async(prompt: str | None, agent: str | None = None) -> int:
    from magi_code.config import paths

    cwd = os.path.realpath(os.getcwd())
    if prompt is None and not ask_trust(cwd, paths.resolve_home(os.environ)):
        return 1
    try:
        admitted = admit(cwd, dict(os.environ), agent=agent)
    except StartupError as failed:
        detail = f" ({failed.detail})" if failed.detail else ""
        print(f"magi-code: startup failed: {failed.code}{detail}", file=sys.stderr)
        return 1
    for dropped in admitted.dropped:
        print(f"magi-code: {dropped.warning()}", file=sys.stderr)
    for notice in admitted.notices:
        print(f"magi-code: {notice}", file=sys.stderr)
    pruned = auto_prune(admitted.paths.home, admitted.settings, time.time_ns())
    if pruned:
        print(f"magi-code: removed {len(pruned)} expired sessions", file=sys.stderr)
    store = SessionStore(Path(admitted.paths.home))
    selection = Selection(admitted.provider, admitted.model, admitted.thinking)
    attachment = store.create(admitted.cwd, selection)
    console = Console(admitted, attachment, store)
    try:
        if prompt is not None:
            finished = await console.turn(prompt)
            return 0 if finished.outcome == "completed" else 1
        while True:
            line = await anyio.to_thread.run_sync(lambda: input("> "), abandon_on_cancel=True)
            if line.strip():
                await console.turn(line)
    except (EOFError, KeyboardInterrupt):
        print(file=sys.stderr)
        return 0
    finally:
        if admitted.mcp is not None:
            admitted.mcp.close()
        attachment.close()


def run(prompt: str | None, agent: str | None = None) -> int:
    return anyio.run(main_async, prompt, agent)
