"""A session's agents: its `melchior serve` (runner/peers.py), its children (the `agent` tool),
the ceiling it was delegated, the melchior tools it offers, and the turn boundary where peers'
messages reach the model. Every face holds one per attached session (`SessionAgents.open`,
`close`); `running` is what a face lists (Mission Control's `/agents`).

Rules:
- Opening never fails a session, nor waits for melchior: `melchior serve` boots beside the
  session (`Boot`), and a turn that starts before it listens goes without peers. What needs
  melchior itself (a melchior tool's call, a child's fork, `running`, `report`) waits for the
  boot, within MELCHIOR_START_MS. Once melchior is known not to have started there are no
  melchior tools and no `agent` tool, and a notice says so once.
- The delegation a process was given (MAGI_CODE_DELEGATION) is stored with the session the
  first time it is attached; a reopened child keeps what its session stores.
- At a turn boundary (`run_turn_with_peers`) queued peer messages are appended as `peer` records
  before the prompt, so the model reads them labelled; an ask is moved to `working` then, and to
  `completed` (the turn's final text) or `failed` (its error code) when the turn ends. melchior
  is told `doing` busy for the turn (`working_for`: the asks it answers, `waiting`: messages
  still queued) and idle after it.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from magi_code import limits
from magi_code.runner import peers

# Only `peers` is imported up front: `open` starts `melchior serve` first, and the runner's
# heavier modules load while it boots.
if TYPE_CHECKING:
    from magi_code.client import LocalAgentClient
    from magi_code.providers.base import ImagePart
    from magi_code.runner.delegation import Delegation
    from magi_code.runner.events import RunFinished
    from magi_code.runner.startup import Admitted
    from magi_code.runner.subagents import Children
    from magi_code.runner.turn import Emitter, Journal, TurnControl, TurnSetup
    from magi_code.sessions import Attachment
    from magi_code.tools.base import Tool
    from magi_code.tools.policy import Policy


NOTICE_SUMMARIES = {
    peers.UNAVAILABLE: "melchior could not start: this session works without peers or subagents.",
}
VOCABULARY_ENV = "MAGI_CODE_MELCHIOR_VOCABULARY"  # what the parent read, handed to a child


class Described:
    """`melchior tool --describe`, read by the boot thread while `melchior serve` starts (from
    the cache in MC_HOME when this melchior described it before); a child takes what its parent
    read (the same melchior, the same vocabulary) and runs nothing."""

    def __init__(self, handed: str | None, home: str) -> None:
        self.home = home
        self.vocabulary: dict[str, Any] | None = None
        self.known = threading.Event()  # read, or found unreadable
        if handed:
            with contextlib.suppress(ValueError):
                value = json.loads(handed)
                self.vocabulary = value if isinstance(value, dict) else None
        if self.vocabulary is not None:
            self.known.set()

    def read(self, env: Mapping[str, str]) -> None:
        if self.known.is_set():
            return
        from magi_code.runner.melchior_tools import described

        try:
            self.vocabulary = described(peers.melchior_command(), env, self.home)
        finally:
            self.known.set()

    def result(self) -> dict[str, Any] | None:
        self.known.wait()  # bounded: describe runs under MELCHIOR_TOOL_MS
        return self.vocabulary


def bound(settings: Mapping[str, Any], key: str, ceiling: int) -> int:
    """`[subagents] <key>` from the settings, never above the limit (they may only lower)."""
    table = settings.get("subagents")
    value = table.get(key) if isinstance(table, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return ceiling
    return min(value, ceiling)


class Boot:
    """A session's `melchior serve`, launched, and one thread for it: it reads the vocabulary,
    waits (within MELCHIOR_START_MS) for `listening`, then reads the pipe until it closes. A
    face makes it before it attaches the session; nothing waits for the boot but what needs
    melchior itself (`joined`): a turn starts without it (it waits only for the vocabulary,
    `prepare`)."""

    def __init__(self, admitted: Admitted) -> None:
        self.env = melchior_env(admitted.env)
        self.talk = peers.talk_setting(admitted.settings)
        self.melchior: peers.SessionMelchior | None = None
        self.notice: str | None = None
        self.done = threading.Event()
        self.described = Described(admitted.env.get(VOCABULARY_ENV), admitted.paths.home)
        self.process = peers.launch(self.env, self.talk, admitted.cwd)
        threading.Thread(target=self._run, name="melchior", daemon=True).start()

    def _run(self) -> None:
        try:
            self.described.read(self.env)
        finally:
            try:
                self.melchior, self.notice = peers.ready(self.process, self.env, self.talk)
            finally:
                self.done.set()
        if self.melchior is not None:
            self.melchior.read()  # peer messages into the inbox, until the pipe closes

    def abandon(self) -> None:
        if self.process is not None:
            peers.end(self.process)

    def release(self) -> None:
        """Tell melchior to end (its stdin closed) without waiting for it: for a process
        that exits next, whose child then finishes on its own, booted or not."""
        if self.process is not None and self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()


class SessionAgents:
    def __init__(
        self,
        admitted: Admitted,
        session_id: str,
        boot: Boot,
        given: Delegation | None,
    ) -> None:
        self.admitted, self.session_id, self.boot = admitted, session_id, boot
        self.delegation = given
        self.told = False  # the notices were said (at the end of the first turn)
        from magi_code.runner.subagents import Children

        self.command = peers.melchior_command()
        self.children: Children = Children(
            bound(admitted.settings, "max_concurrent", limits.SUBAGENTS_CONCURRENT)
        )
        self.max_depth = bound(admitted.settings, "max_depth", limits.SUBAGENT_DEPTH)

    @classmethod
    def open(
        cls, admitted: Admitted, attachment: Attachment, boot: Boot | None = None
    ) -> SessionAgents:
        """Blocking (a worker thread), briefly: the delegation kept, melchior launched (or
        taken from `boot`, launched before the session was attached); never waits for it."""
        boot = boot or Boot(admitted)
        from magi_code.runner import delegation

        given = delegation.from_env(admitted.env)
        kept = stored_delegation(attachment)
        if given is not None and kept is None:
            from magi_code.sessions import SessionError

            # On failure the ceiling still holds for this process; it is not kept.
            with contextlib.suppress(SessionError, OSError):
                attachment.append(given.record(), fsync=True)
        return cls(admitted, attachment.session_id, boot, delegation.combine(kept, given))

    @property
    def melchior(self) -> peers.SessionMelchior | None:
        """This session's melchior once it listens; None while it boots or if it could not."""
        return self.boot.melchior if self.boot.done.is_set() else None

    def joined(self) -> peers.SessionMelchior | None:
        """This session's melchior, waiting for its boot (bounded by MELCHIOR_START_MS);
        None if it could not start. Blocking: a worker thread."""
        self.boot.done.wait()
        return self.boot.melchior

    def tool_env(self) -> dict[str, str] | None:
        """The environment of `melchior tool`/`fork` as this session (blocking, see `joined`);
        None without melchior."""
        melchior = self.joined()
        return melchior.tool_env(self.admitted.env) if melchior is not None else None

    async def prepare(self) -> None:
        """Before a turn is set up: the vocabulary read (waited for in a worker thread,
        bounded, while it is still being read), so that `tools` never waits on the loop."""
        if not self.boot.described.known.is_set():
            import anyio

            await anyio.to_thread.run_sync(self.boot.described.result)

    @property
    def notices(self) -> list[str]:
        """What could not start, once its boot ended (melchior unavailable); empty before."""
        if self.boot.done.is_set() and self.boot.notice is not None:
            return [self.boot.notice]
        return []

    @property
    def depth(self) -> int:
        return self.delegation.depth if self.delegation is not None else 0

    # ---- what a turn is given ----------------------------------------------------------------

    def policy(self, policy: Policy) -> Policy:
        from magi_code.runner.delegation import under

        return under(policy, self.delegation)

    def tools(self) -> dict[str, Tool[Any]]:
        """The melchior tools and, below the depth bound, the `agent` tool: offered unless
        melchior is known not to have started (while it boots, a call waits for it)."""
        from magi_code.runner.melchior_tools import melchior_tools
        from magi_code.runner.subagents import AgentTool

        vocabulary = self.boot.described.vocabulary  # read by `prepare`
        if vocabulary is None or (self.boot.done.is_set() and self.boot.melchior is None):
            return {}
        tools: dict[str, Tool[Any]] = dict(
            melchior_tools(vocabulary, self.command, self.tool_env, self.instance)
        )
        profiles = self.admitted.context.subagents()
        if self.depth < self.max_depth and self.children.max_concurrent > 0 and profiles:
            agent = AgentTool(
                self.children,
                profiles,
                self.spawn,
                self.child_env,
                self.tool_env,
                self.command,
                self.report,
            )
            tools[agent.name] = agent
        return tools

    def instance(self) -> set[str]:
        """The melchior ids of this session's own instance, as far as it knows them."""
        ids = set(self.children.all)
        melchior = self.melchior
        if melchior is not None:
            ids.add(melchior.id)
            parent = melchior.environment.get("MAGI_MELCHIOR_PARENT")
            if parent:
                ids.add(parent)
        return ids

    # ---- children ----------------------------------------------------------------------------

    def child_env(self, profile: str, identity: dict[str, str]) -> dict[str, str]:
        """A child's environment: this process's, the fork's identity, the delegation, the
        sandbox mode."""
        from magi_code.runner import delegation
        from magi_code.runner.setup import parts
        from magi_code.tools.sandbox.settings import MODE_ENV

        admitted, melchior = self.admitted, self.melchior
        handed = delegation.hand_down(
            self.delegation,
            session_id=self.session_id,
            agent_id=melchior.id if melchior is not None else "",
            permissions=admitted.settings.get("permissions"),
            profile_rules=admitted.context.profile.permissions,
            trusted=admitted.trusted,
        )
        env = {k: v for k, v in admitted.env.items() if k not in peers.IDENTITY_KEYS}
        env.update(identity)
        env[delegation.ENV] = json.dumps({**handed.to_json(), "profile": profile})
        env[MODE_ENV] = parts(admitted).sandbox.mode  # the sandbox as the parent has it now
        vocabulary = self.boot.described.vocabulary
        if vocabulary is not None:
            env[VOCABULARY_ENV] = json.dumps(vocabulary)
        return env

    def spawn(self, env: dict[str, str]) -> LocalAgentClient:
        from magi_code.client import LocalAgentClient

        return LocalAgentClient.spawn(cwd=self.admitted.cwd, env=env)

    def report(self, agent_id: str) -> str | None:
        """A child's stored report (bounded), read as its parent; None when it has none."""
        env = self.tool_env()
        if env is None:
            return None
        asked = ["tool", "--verb=report", f"--who={agent_id}", "--about=json"]
        reply = peers.exec_json(self.command, asked, env)
        try:
            body = reply["result"][0]["body"] if reply.get("ok") else None
        except (AttributeError, KeyError, IndexError, TypeError):
            return None
        if not isinstance(body, str):
            return None
        from magi_code.tools.summaries import clip_utf8

        return clip_utf8(body, limits.SUBAGENT_REPORT_BYTES)

    # ---- for faces ---------------------------------------------------------------------------

    def running(self) -> list[dict[str, Any]]:
        """Running subagents and reachable peers, with their status from melchior: what
        Mission Control's agents panel lists. Blocking (one `melchior tool` exec)."""
        rows = [child.view() for child in self.children.running()]
        melchior = self.joined()
        if melchior is None:
            return rows
        reply = peers.exec_json(
            self.command, ["tool", "--verb=list"], melchior.tool_env(self.admitted.env)
        )
        listed = reply.get("result", []) if isinstance(reply, dict) else []
        mine = {melchior.id, *self.children.all}
        for entry in listed:
            if isinstance(entry, dict) and entry.get("id") not in mine:
                rows.append({"kind": "peer", **{k: entry.get(k) for k in ("id", "role", "label")}})
        return rows

    def close(self, *, wait: bool = True) -> None:
        """End the children and melchior; `wait=False` (a process about to exit) does not
        wait for melchior's boot or exit."""
        self.children.stop_all()
        if not wait:
            self.boot.release()
            return
        melchior = self.joined()
        if melchior is not None:
            melchior.close()


def stored_delegation(attachment: Attachment) -> Delegation | None:
    """What the session's file stores; nothing for a session with no file yet."""
    from magi_code.runner.delegation import stored
    from magi_code.sessions import SessionError

    try:
        return stored(attachment.records())
    except (OSError, SessionError):
        return None


def melchior_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment `melchior serve` starts with: an identity only when it is whole (a
    forked child); otherwise none, so that it mints a root for this session (in the project
    MAGI_MELCHIOR_PROJECT names, if any, else melchior's label for the working directory)."""
    if env.get("MAGI_MELCHIOR_ID") and env.get("MAGI_MELCHIOR_TOKEN"):
        return dict(env)
    partial = set(peers.IDENTITY_KEYS) - {"MAGI_MELCHIOR_PROJECT"}
    return {k: v for k, v in env.items() if k not in partial}


async def run_turn_with_peers(
    agents: SessionAgents | None,
    setup: TurnSetup,
    journal: Journal,
    emit: Emitter,
    control: TurnControl,
    prompt: str,
    images: tuple[ImagePart, ...] = (),
) -> RunFinished:
    """One turn with the session's peers: their messages delivered first, asks settled after.
    The session's notices (melchior could not start) are said once, as diagnostics at the end
    of its first turn that started: the protocol's session results carry only restoration
    notices."""
    from magi_code.runner.turn import run_turn

    melchior = agents.melchior if agents is not None else None
    if melchior is None:  # none, or still booting: this turn goes without peers
        finished = await run_turn(setup, journal, emit, control, prompt, images)
        if agents is not None and finished.persistence != "not_started":
            await say_notices(agents, emit)
        return finished
    asks = []
    for message in melchior.take():
        try:
            journal.append({**peers.peer_record(message), "run_id": setup.run_id}, fsync=False)
        except OSError:
            continue
        if message.task is not None:
            melchior.move(message.task, "working")
            asks.append(message.task)
    melchior.doing(True, working_for=len(asks), waiting=len(melchior.inbox))
    try:
        finished = await run_turn(setup, journal, emit, control, prompt, images)
    finally:
        melchior.doing(False, waiting=len(melchior.inbox))
    answer = _final_text(journal) if finished.outcome == "completed" else None
    for task in asks:
        if answer is not None:
            melchior.move(task, "completed", answer)
        else:
            melchior.move(task, "failed", finished.error_code or finished.outcome)
    return finished


async def say_notices(agents: SessionAgents, emit: Emitter) -> None:
    """The session's notices, once, at the end of its first turn that started: after the
    boot has ended (it has, in all but the quickest turns; else this waits for it)."""
    if agents.told:
        return
    agents.told = True
    import anyio

    from magi_code.runner.events import Diagnostic

    await anyio.to_thread.run_sync(agents.boot.done.wait)
    for code in agents.notices:
        await emit.critical(Diagnostic(code, NOTICE_SUMMARIES.get(code, code)))


def _final_text(journal: Journal) -> str:
    from magi_code.providers.base import AssistantText

    for item in reversed(journal.replay()):
        if isinstance(item, AssistantText):
            return item.text
    return ""
