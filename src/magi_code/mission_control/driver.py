"""Startup, sessions and turns for Mission Control: everything the terminal face asks of the
runner, and no screen.

`startup` is the pre-UI part (admitted snapshot, retention sweep) and runs before anything is
drawn, after the folder-trust question (console.py). `Driver` owns the session attachment and
the person's selection, and runs one turn at a time through the runner's one entry,
`start_turn`, with the face as its emitter and approval answerer and the observers of
observe.py wrapped around the turn's parts. It imports nothing of Textual, so it can be driven
(and tested) without a screen.
"""

import codecs
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio

from magi_code import debug
from magi_code.checkpoints.store import CheckpointStore
from magi_code.config.credentials import CredentialStore
from magi_code.config.settings import ModelUnknown, SettingsError
from magi_code.errors import MagiError
from magi_code.limits import INPUT_HISTORY_PROMPTS
from magi_code.mcp.errors import NotSent
from magi_code.mcp.mentions import attach, mentioned
from magi_code.mcp.states import ServerState
from magi_code.mission_control.observe import (
    ApprovalMode,
    FacePolicy,
    Grants,
    ObservedProvider,
    ObservedTool,
    Observer,
    PendingCall,
)
from magi_code.mission_control.preview import Preview, outside_preview, preview
from magi_code.mission_control.rewind import Rewinder
from magi_code.providers.base import ImagePart, Usage
from magi_code.providers.catalog import offered_models
from magi_code.providers.known_models import default_model, refusal
from magi_code.providers.registry import ConfigurationInvalid, wire_api
from magi_code.records import field, record
from magi_code.runner.agents import SessionAgents
from magi_code.runner.compaction import estimate_tokens
from magi_code.runner.entry import start_turn
from magi_code.runner.events import Activity, DetailEvent, MessageDelta, RunEvent, RunFinished
from magi_code.runner.journal import SessionJournal
from magi_code.runner.setup import context_window, parts, turn_setup
from magi_code.runner.startup import Admitted, StartupError, admit
from magi_code.runner.turn import Emitter, Turn, TurnControl, TurnSetup
from magi_code.sessions import Attachment, Selection, SessionError, SessionStore
from magi_code.sessions.projection import Ending
from magi_code.sessions.reader import decode_record
from magi_code.sessions.retention import auto_prune, latest_for, scan
from magi_code.sessions.turns import conversation_turns, rewound_runs
from magi_code.sessions.usage import StoredUsage, stored_usage
from magi_code.tools.approvals import ApprovalBroker
from magi_code.tools.base import ToolOutcome
from magi_code.tools.live_output import ToolOutputDelta
from magi_code.tools.paths import display
from magi_code.tools.plan import PlanUpdate, stored_plan
from magi_code.tools.progress import ToolProgress

if TYPE_CHECKING:
    from magi_code.mcp.elicitation import Answer, Form
    from magi_code.mcp.prompts import PromptCommand
    from magi_code.tools.sandbox.modes import Sandbox

HEADER_BYTES = 64 * 1024  # how far a session file is read for its header line
DIFF_TIMEOUT_S = 10.0
DIFF_BYTES = 256 * 1024
EFFORT_WIRES = frozenset({"openai-responses", "openai-chat", "anthropic", "codex"})
EFFORTS = ("low", "medium", "high")  # as the wires take them (providers/limits.py's budgets)
OWN_COMMAND_BYTES = 8 * 1024  # of a `!command`'s output: the tail kept for the next prompt

HINTS = {
    "configuration_invalid": "edit the settings: MC_HOME/settings.toml, then "
    "./.magi-code/settings.toml",
    "provider_unavailable": "`magi-code login NAME` stores a key; `magi-code models` lists "
    "what is configured",
    "profile_invalid": "check the agent profile named by the `agent` setting",
    "mcp_unavailable": "check the server's command or URL in the settings, or disable it",
    "startup_failed": "check that MC_HOME is writable",
    "model_unknown": "pick one listed by `magi-code models`",
    "provider_unknown": "name a provider of the settings' [providers] table",
    "session_missing": "`magi-code sessions list` shows the stored sessions",
    "cwd_mismatch": "a session resumes in the workspace it was started in",
    "session_busy": "another magi-code has it open",
}


class LaunchError(MagiError):
    """A startup failure a person can act on: a code, what is wrong (a fixed phrase such as
    the settings key at fault, never a value) and what to do about it."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(code)
        self.code, self.detail = code, detail

    def explain(self) -> str:
        """As startup says it, on stderr."""
        return f"magi-code: startup failed: {self.reason()}"

    def reason(self) -> str:
        """The code, what is wrong and what to do (`/model` says it in the running app)."""
        detail = f" ({self.detail})" if self.detail else ""
        # A detail that names the command to run (an MCP login) is the advice itself.
        hint = None if "`magi-code " in self.detail else HINTS.get(self.code)
        return f"{self.code}{detail}" + (f"\n  {hint}" if hint else "")


@record
class Launch:
    """What the command line asked of Mission Control."""

    prompt: str | None = None  # --prompt: one turn, then exit with its outcome
    first_prompt: str | None = None  # `magi-code "PROMPT"`: sent at start; the app stays open
    resume: str | None = None  # a session id, or "" for the picker
    continue_latest: bool = False
    provider: str | None = None
    model: str | None = None
    approval_mode: ApprovalMode | None = None  # None: the `approval_mode` setting's
    sandbox: str | None = None  # --sandbox: the sandbox mode, over `[sandbox] mode`
    agent: str | None = None  # --agent: the primary agent profile


def startup(
    cwd: str, env: Mapping[str, str], agent: str | None = None, skip_failed_mcp: bool = False
) -> tuple[Admitted, int]:
    """The pre-UI steps: the admitted snapshot, then the retention sweep. Raises LaunchError.
    Returns the snapshot and how many expired sessions the sweep removed. `skip_failed_mcp`:
    an MCP server that fails is left out (`admitted.mcp.failed`) rather than failing."""
    try:
        admitted = admit(cwd, env, agent=agent, skip_failed_mcp=skip_failed_mcp, elicits=True)
    except StartupError as failed:
        cause = failed.__cause__
        detail = failed.detail or (str(cause) if isinstance(cause, SettingsError) else "")
        code = "model_unknown" if isinstance(cause, ModelUnknown) else failed.code
        raise LaunchError(code, detail) from None
    except Exception:  # noqa: BLE001 - a bug in startup: said in one line, never a traceback
        debug.absorbed("mission control startup")
        detail = "an internal error (MC_DEBUG_STDERR=1 shows it)"
        raise LaunchError("startup_failed", detail) from None
    pruned = auto_prune(admitted.paths.home, admitted.settings, time.time_ns())
    return admitted, len(pruned)


@record(frozen=False)
class Tally:
    """Token counts from provider usage: the current turn, the session, the last request."""

    turn_input: int = 0
    turn_output: int = 0
    session_input: int = 0
    session_output: int = 0
    context: int = 0  # tokens of the last request and its reply

    def add(self, usage: Usage) -> None:
        self.turn_input += usage.input_tokens
        self.turn_output += usage.output_tokens
        self.session_input += usage.input_tokens
        self.session_output += usage.output_tokens
        self.context = usage.input_tokens + usage.output_tokens

    def new_turn(self) -> None:
        self.turn_input = self.turn_output = 0


@record
class StoredRow:
    """One session as the resume picker shows it."""

    session_id: str
    first_prompt: str
    mtime_ns: int
    size: int
    model: str
    here: bool  # started in this workspace


@record
class HistoryEntry:
    """One entry of the stored history as the screen draws it; kind `ended` says how a run
    that did not complete ended (text: its outcome)."""

    kind: str
    text: str
    partial: bool
    error_code: str | None = None


@record(frozen=False)
class Approval:
    """One approval as the face shows it; `answer`, `allow_session` and `deny_with` (a denial
    with the person's note for the model) decide it. `activity_id`: the call that asks (its
    card waits meanwhile), "" when none is known."""

    approval_id: str
    summary: str
    expires_in_ms: int | None  # None: it waits for the person
    preview: Preview | None
    answer: Callable[[bool], bool]
    allow_session: Callable[[], bool]
    deny_with: Callable[[str], bool] = lambda note: False
    activity_id: str = ""


class Face(Emitter, Protocol):
    async def approval(self, approval: Approval) -> None: ...  # shows it; returns at once
    def usage(self, tally: Tally) -> None: ...
    def reasoning(self, text: str) -> None: ...
    def tool_output(self, output: str | None, preview: Preview | None) -> None: ...
    def plan(self, update: PlanUpdate | None) -> None: ...  # the checklist, redrawn
    def progress(self, event: ToolProgress) -> None: ...  # on the running call's card
    def live_output(self, event: ToolOutputDelta) -> None: ...  # on the running call's card
    async def elicit(self, form: "Form") -> "Answer": ...  # an MCP server's question


@record(frozen=False)
class Driver:
    admitted: Admitted
    expiry_ms: int | None = None  # a person answers: no automatic denial
    grants: Grants = field(default_factory=Grants)
    tally: Tally = field(default_factory=Tally)
    notices: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.store = SessionStore(Path(self.admitted.paths.home))
        self.provider = self.admitted.provider
        self.model = self.admitted.model
        self.thinking = self.admitted.thinking
        self.attachment: Attachment | None = None
        self.agents: SessionAgents | None = None  # the session's melchior and children
        self.own_context: list[str] = []  # what `!command`s printed, for the next prompt

    # ---- selection -------------------------------------------------------------------------

    def select(self, provider: str | None, model: str | None) -> None:
        """Choose the provider and model (command line or /model); raises LaunchError."""
        providers = self.admitted.settings.get("providers", {})
        provider = provider or self.provider
        if provider not in providers:
            raise LaunchError("provider_unknown")
        if model is None:
            mine = provider == self.provider
            model = self.model if mine else first_model(provider, providers[provider])
        if model is None:
            raise LaunchError("model_unknown", "the provider names no default model")
        if not self.available(provider, model):
            said = refusal(provider, providers[provider], model, self.admitted.paths.home)
            raise LaunchError("model_unknown", said or "")
        self.provider, self.model = provider, model
        if self.attachment is not None:
            self.record_selection(self.attachment)

    def efforts(self) -> tuple[str, ...]:
        """The reasoning efforts the selected provider's wire carries (none for the rest)."""
        conf = self.admitted.settings.get("providers", {}).get(self.provider)
        try:
            wire = wire_api(self.provider, conf) if isinstance(conf, dict) else None
        except ConfigurationInvalid:
            return ()
        return EFFORTS if wire in EFFORT_WIRES else ()

    def set_thinking(self, level: str | None) -> None:
        self.thinking = level
        if self.attachment is not None:
            self.record_selection(self.attachment)

    def record_selection(self, attachment: Attachment) -> None:
        """Keep the selection in the session as `session.open` restores it: in the header of
        a session with no file yet, else in a later `session` record (the last one wins)."""
        selection = Selection(self.provider, self.model, self.thinking)
        if not attachment.durable:
            attachment.selection = selection
            return
        try:
            attachment.append({"type": "session", "selection": selection.to_record()}, fsync=True)
            attachment.selection = selection
        except (OSError, ValueError):
            self.notices.append("The model choice could not be saved in the session.")

    def available(self, provider: str, model: str) -> bool:
        """The one rule for a model name (providers/known_models.py), as startup applies it."""
        conf = self.admitted.settings.get("providers", {}).get(provider)
        home = self.admitted.paths.home
        return isinstance(conf, dict) and refusal(provider, conf, model, home) is None

    def models(self) -> dict[str, list[str]]:
        """The models of each provider in use, as `magi-code models` lists them (configured,
        the built-in catalog's, those discovered and cached; no request)."""
        providers = self.admitted.settings.get("providers", {})
        home = self.admitted.paths.home
        return offered_models(
            {k: v for k, v in providers.items() if isinstance(v, dict)},
            Path(home),
            CredentialStore(home),
            self.admitted.env,
            selected=self.provider,
            sent_to=self.admitted.credential_providers,
        )

    def context_window(self) -> int:
        return context_window(self.admitted.settings["providers"][self.provider])

    # ---- sessions --------------------------------------------------------------------------

    def new_session(self) -> str:
        self.close_session()
        selection = Selection(self.provider, self.model, self.thinking)
        self.attachment = self.store.create(self.admitted.cwd, selection)
        self.tally = Tally()
        return self.attachment.session_id

    def fork(self) -> str | None:
        """A new session holding a copy of the attached one's conversation so far (every
        record after its header) and its workspace checkpoints (so it can rewind to the turns
        before the fork too), attached in its place; the original stays as it was. None when
        there is nothing to copy yet; raises SessionError or OSError."""
        original = self.attachment
        if original is None or not original.durable:
            return None
        copied = list(original.records())[1:]
        selection = Selection(self.provider, self.model, self.thinking)
        forked = self.store.create(self.admitted.cwd, selection)
        checkpoints = self.store.checkpoints_of(forked.session_id)
        try:  # before the first record: a failure leaves no trace of the fork
            self.checkpoints(original.session_id).fork(checkpoints)
        except OSError:
            shutil.rmtree(checkpoints, ignore_errors=True)
            forked.close()
            raise
        for number, stored in enumerate(copied, 1):
            kept = {key: value for key, value in stored.items() if key != "session_id"}
            forked.append(kept, fsync=number == len(copied))
        self.close_session()
        self.attachment = forked
        return forked.session_id

    def open_session(self, session_id: str) -> list[str]:
        """Attach a stored session and restore its selection; raises SessionError."""
        if not self.store_has(session_id):
            raise SessionError("session_missing")
        attachment, notices = self.store.open(session_id, self.admitted.cwd, self.available)
        previous, self.attachment = self.attachment, attachment
        if self.agents is not None:
            self.agents.close()
            self.agents = None
        if previous is not None and previous is not attachment:
            previous.close()
        saved = attachment.selection
        if saved is not None and "saved_selection_unavailable" not in notices:
            self.provider, self.model = saved.provider, saved.model
        if saved is not None:
            self.thinking = saved.thinking
        self.tally = self.stored_tally(attachment)
        return notices

    def stored_tally(self, attachment: Attachment) -> Tally:
        """The session's token totals and context as they stood when it was left (its runs'
        stored usage, sessions/usage.py); the context estimated where nothing says it."""
        try:
            stored = stored_usage(attachment.records())
        except (OSError, SessionError):
            stored = StoredUsage()
        context = self.history_tokens(attachment) if stored.context is None else stored.context
        return Tally(
            session_input=stored.input_tokens, session_output=stored.output_tokens, context=context
        )

    def history_tokens(self, attachment: Attachment) -> int:
        """What the stored conversation weighs in the next request, estimated as compaction
        estimates it without a usage figure (bytes / 4): the status line's context share."""
        try:
            return estimate_tokens(SessionJournal(attachment).replay(), None, 0)
        except (OSError, SessionError):
            return 0

    def rewinder(self) -> Rewinder | None:
        """Rewind for the attached session (rewind.py); None before it has one. Its walks
        see the workspace as the turns' checkpoints do (the tools' environment)."""
        if self.attachment is None:
            return None
        return Rewinder(self.attachment, self.checkpoints(self.attachment.session_id))

    def checkpoints(self, session_id: str) -> CheckpointStore:
        """A session's workspace checkpoints, walked as the turns walk the workspace (the
        tools' environment)."""
        directory = self.store.checkpoints_of(session_id)
        return CheckpointStore(directory, Path(self.admitted.cwd), parts(self.admitted).env)

    def store_has(self, session_id: str) -> bool:
        try:
            return self.store.path_of(session_id).exists()
        except ValueError:
            return False

    def close_session(self) -> None:
        if self.agents is not None:
            self.agents.close()
            self.agents = None
        if self.attachment is not None:
            self.attachment.close()
            self.attachment = None

    async def session_agents(self, attachment: Attachment) -> SessionAgents | None:
        """The session's melchior and children, opened on its first turn in a worker thread
        (melchior boots meanwhile; the screen stays live). None when they cannot be."""
        if self.agents is None:
            try:
                self.agents = await anyio.to_thread.run_sync(
                    SessionAgents.open, self.admitted, attachment
                )
            except Exception as failed:  # noqa: BLE001 - the turn goes on without peers
                self.notices.append(f"melchior is unavailable ({type(failed).__name__}).")
                return None
        return self.agents  # its notices reach the screen as the first turn's diagnostics

    def close(self) -> None:
        self.close_session()
        if self.admitted.mcp is not None:
            self.admitted.mcp.close()

    def sessions(self) -> list[StoredRow]:
        """Stored sessions, this workspace's first, each group newest first."""
        rows = []
        for stored in scan(self.store.directory):
            cwd, model = session_header(self.store.path_of(stored.session_id), stored.session_id)
            rows.append(
                StoredRow(
                    stored.session_id,
                    stored.first_prompt or "",
                    stored.mtime_ns,
                    stored.size,
                    model,
                    cwd == self.admitted.cwd,
                )
            )
        return sorted(rows, key=lambda row: not row.here)  # stable: newest first within

    @property
    def sandbox(self) -> "Sandbox":
        """The session's OS sandbox (tools/sandbox), shared by every turn of this process."""
        return parts(self.admitted).sandbox

    def approval_setting(self) -> ApprovalMode:
        """The global `approval_mode` setting: ask (the default) or auto."""
        return "auto" if self.admitted.settings.get("approval_mode") == "auto" else "ask"

    def set_approval_mode(self, mode: ApprovalMode) -> None:
        """`auto` lets the runner allow unasked what the sandbox contains; the others are
        this face's grants."""
        self.grants.mode = mode
        self.sandbox.auto = mode == "auto"

    def latest_here(self) -> str | None:
        return latest_for(self.store.directory, self.admitted.cwd)

    def history(self) -> list[HistoryEntry]:
        """The attached session's projected history, parts joined into entries, each run that
        did not complete followed by how it ended, where the live screen said so. From a
        snapshot taken now: the one taken at open is stale once anything was appended since
        (choosing a model on the command line appends the selection). Not during a turn."""
        if self.attachment is None:
            return []
        snapshot = self.attachment.snapshot()
        endings: dict[int, list[Ending]] = {}
        for ending in snapshot.endings:
            endings.setdefault(ending.after, []).append(ending)
        entries: list[HistoryEntry] = []
        texts: dict[str, list[str]] = {}
        cursor: str | None = None
        projected = 0  # entries of the projection so far (endings are none of them)
        while True:
            page = snapshot.page(snapshot.revision, cursor)
            for part in page.entries:
                texts.setdefault(part["message_id"], []).append(part["text"])
                if part["last_part"]:
                    text = "".join(texts.pop(part["message_id"]))
                    entries.append(HistoryEntry(part["kind"], text, part["partial"]))
                    entries += [
                        HistoryEntry("ended", e.outcome, False, e.error_code)
                        for e in endings.get(projected, ())
                    ]
                    projected += 1
            cursor = page.next_cursor
            if cursor is None:
                return entries

    def latest_plan(self) -> PlanUpdate | None:
        """The plan the attached session's last completed `update_plan` call set (its stored
        arguments), as the checklist shows it; None when it set none. A call of a turn a
        rewind dropped no longer counts: the plan is the one of where the conversation is."""
        attachment = self.attachment
        if attachment is None or not attachment.durable:
            return None
        plans: dict[str, object] = {}  # run_id -> the arguments of its last plan, last set last

        def noting_plans() -> Iterator[Mapping[str, object]]:
            for stored in attachment.records():
                kind, name, state = stored.get("type"), stored.get("name"), stored.get("state")
                if (kind, name, state) == ("tool", "update_plan", "completed"):
                    plans.pop(stored["run_id"], None)
                    plans[stored["run_id"]] = stored.get("arguments")
                yield stored

        try:
            rewound = rewound_runs(noting_plans())  # one pass over the file
        except (OSError, SessionError):
            return None
        kept = [arguments for run, arguments in plans.items() if run not in rewound]
        arguments = kept[-1] if kept else None
        return stored_plan(arguments) if isinstance(arguments, str) else None

    def prompt_history(self) -> list[str]:
        """Prompts of this workspace's sessions, oldest first, at most INPUT_HISTORY_PROMPTS."""
        found: list[str] = []
        for row in self.sessions():
            if not row.here or len(found) >= INPUT_HISTORY_PROMPTS:
                break
            found[:0] = user_prompts(self.store.path_of(row.session_id), row.session_id)
        return found[-INPUT_HISTORY_PROMPTS:]

    # ---- turns -----------------------------------------------------------------------------

    def observer(self, face: Face) -> Observer:
        def on_usage(usage: Usage, purpose: str) -> None:
            self.tally.add(usage)
            face.usage(self.tally)

        return Observer(on_usage=on_usage, on_reasoning=face.reasoning, previewer=call_preview)

    async def turn(
        self,
        prompt: str,
        face: Face,
        control: TurnControl,
        images: tuple[ImagePart, ...] = (),
    ) -> RunFinished:
        """One turn of the attached session (the prompt and the images it names, attachments.py)
        through the runner's entry; always returns its RunFinished."""
        if self.attachment is None:
            self.new_session()
        assert self.attachment is not None
        self.tally.new_turn()
        prompt = self.with_own_context(prompt)
        observer = self.observer(face)

        def observe(setup: TurnSetup) -> None:
            setup.provider = ObservedProvider(setup.provider, observer)
            setup.tools = {name: ObservedTool(t, observer) for name, t in setup.tools.items()}
            setup.policy = FacePolicy.over(setup.policy, self.grants)
            setup.elicit = face.elicit  # a person is here to answer MCP servers' questions

        agents = await self.session_agents(self.attachment)
        return await start_turn(
            self.admitted,
            self.attachment,
            (self.provider, self.model, self.thinking),
            prompt,
            run_id=os.urandom(16).hex(),
            emitter=FaceEmitter(face, observer),
            control=control,
            approvals=self.broker(face, observer),
            agents=agents,
            observe=observe,
            images=images,
        )

    def broker(self, face: "Face", observer: Observer) -> ApprovalBroker:
        """An approval broker whose announcements become the face's approvals."""

        async def announce(approval_id: str, summary: str, expires_in_ms: int) -> None:
            call, shown = observer.call, observer.preview
            asked = broker.asked(approval_id)
            if asked is not None and asked.outside_sandbox and call is not None:
                shown = outside_preview(asked.access.command or "", str(call.ctx.workspace))

            def allow_session() -> bool:
                won = broker.answer(approval_id, True)
                if won:
                    self.grants.grant(asked)  # the exact call (tools/grants.py); never outside
                return won

            await face.approval(
                Approval(
                    approval_id,
                    summary,
                    None if self.expiry_ms is None else expires_in_ms,
                    shown,
                    lambda allow: broker.answer(approval_id, allow),
                    allow_session,
                    lambda note: broker.answer(approval_id, False, note),
                    "" if call is None else call.ctx.activity_id,
                )
            )

        broker = ApprovalBroker(announce, expiry_ms=self.expiry_ms)
        return broker

    async def shell(self, command: str, live: Callable[[str], None]) -> ToolOutcome:
        """`!command`: the person's own command, run as they would at their shell (their
        environment, the workspace as its folder, no sandbox, no approval: the model did not
        ask for it). What it prints goes to `live` as it arrives; the tail of its output
        waits in `own_context` for the next prompt."""
        env = dict(self.admitted.env)
        process = await anyio.open_process(
            [env.get("SHELL") or "/bin/sh", "-c", command],
            cwd=self.admitted.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        tail = bytearray()
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        try:
            assert process.stdout is not None
            async for chunk in process.stdout:
                live(decoder.decode(chunk))
                tail += chunk
                del tail[: max(0, len(tail) - OWN_COMMAND_BYTES)]
            code = await process.wait()
        finally:
            if process.returncode is None:  # stopped (Esc): the command's whole group goes
                with anyio.CancelScope(shield=True):
                    os.killpg(process.pid, signal.SIGKILL)
                    await process.wait()
        output = tail.decode("utf-8", "replace")
        said = f"[I ran `{command}` myself; exit status {code}. Its output:]\n{output}"
        self.own_context.append(said)
        return ToolOutcome(code == 0, output, f"exit status {code}")

    def with_own_context(self, prompt: str) -> str:
        """The prompt, after what the person's own `!command`s printed since the last one."""
        if not self.own_context:
            return prompt
        said = "\n\n".join(self.own_context)
        self.own_context.clear()
        return f"{said}\n\n{prompt}"

    async def compact(self, face: Face, focus: str = "") -> str:
        """A manual compaction through the runner's own path: everything before the last
        prompt becomes a summary the model writes, following `focus` (`/compact TEXT`).
        Returns what happened, for the screen."""
        attachment = self.attachment
        if attachment is None or not attachment.durable:
            return "Nothing to compact yet."
        journal = SessionJournal(attachment)
        last_prompt = last_user_id(attachment)
        if last_prompt is None:
            return "Nothing to compact yet."
        broker = self.broker(face, Observer())
        setup = turn_setup(
            self.admitted,
            (self.provider, self.model, self.thinking),
            attachment.session_id,
            os.urandom(16).hex(),
            broker,
        )
        turn = Turn(setup, journal, face, TurnControl())
        turn.prompt_id = last_prompt
        items = journal.replay()
        try:
            compacted = await turn.compact(items, focus)
        finally:
            turn.record("run_finished", outcome="completed", error_code=None, **turn.stored_usage())
            broker.deny_all()
        self.tally.session_input += turn.spent.input_tokens
        self.tally.session_output += turn.spent.output_tokens
        if compacted is items:
            return "Nothing was compacted."
        self.tally.context = self.history_tokens(attachment)  # the summary and what follows
        return f"Compacted {len(items) - len(compacted) + 1} earlier items into a summary."

    async def diff(self) -> tuple[str, list[str]] | None:
        """The workspace's `git diff` (bounded) and its untracked files; None outside a git
        work tree or when git fails."""
        tracked = await self.git("diff", "--no-color", "--no-ext-diff")
        status = await self.git("status", "--porcelain", "--untracked-files=all")
        if tracked is None or status is None:
            return None
        untracked = [line[3:] for line in status.splitlines() if line.startswith("?? ")]
        return tracked[:DIFF_BYTES], untracked

    async def git(self, *args: str) -> str | None:
        try:
            with anyio.fail_after(DIFF_TIMEOUT_S):
                done = await anyio.run_process(
                    ["git", "--no-pager", *args],
                    cwd=self.admitted.cwd,
                    check=False,
                    stdin=subprocess.DEVNULL,
                )
        except (OSError, TimeoutError):
            return None
        if done.returncode != 0:
            return None
        return done.stdout[: DIFF_BYTES + 1].decode("utf-8", "replace")

    # ---- MCP -------------------------------------------------------------------------------

    def mcp_states(self) -> list[ServerState]:
        """Each configured MCP server's state now: the manager's for the enabled ones (those
        left out at startup `failed`), `disabled` for the rest."""
        manager = self.admitted.mcp
        states = manager.states() if manager is not None else []
        known = {state.name for state in states}
        servers = self.admitted.settings.get("mcp", {}).get("servers", {})
        states += [ServerState(name, "disabled") for name in servers if name not in known]
        return sorted(states, key=lambda state: state.name)

    async def reconnect_mcp(self, name: str) -> str:
        """`/mcp reconnect NAME`: the server connected afresh (in a worker thread, at most
        CONNECT_S); what happened, for the screen."""
        servers = self.admitted.settings.get("mcp", {}).get("servers", {})
        manager = self.admitted.mcp
        if name not in servers:
            return f"No MCP server is named {name!r}: /mcp lists them."
        if manager is None or name not in manager.servers:
            return f"{name} is disabled in the settings: set `enabled = true`, then restart."
        why = await anyio.to_thread.run_sync(manager.reconnect, name)
        if why is None:
            return f"Reconnected {name}."
        return f"{name} failed to connect: {why}"

    def prompt_commands(self) -> dict[str, "PromptCommand"]:
        """The connected MCP servers' prompts, by command name (mcp/prompts.py)."""
        if self.admitted.mcp is None:
            return {}
        # The SDK's types (a third of a second) load only with servers connected: the launch.
        from magi_code.mcp.prompts import prompt_commands

        return prompt_commands(self.admitted.mcp.prompts())

    async def expand_prompt(self, name: str, argument: str) -> tuple[str, tuple[ImagePart, ...]]:
        """What `/NAME argument` sends: the MCP prompt's messages; raises NotSent."""
        from magi_code.mcp.prompts import expand

        command = self.prompt_commands().get(name)
        if command is None or self.admitted.mcp is None:
            raise NotSent(f"/{name} is no longer offered by its MCP server: /mcp lists them.")
        return await anyio.to_thread.run_sync(
            expand, self.admitted.mcp, command, argument, abandon_on_cancel=True
        )

    async def with_mentions(
        self, prompt: str, images_before: int
    ) -> tuple[str, tuple[ImagePart, ...]]:
        """The prompt with the MCP resources it mentions (`@SERVER:URI`, mcp/mentions.py)
        attached; raises NotSent."""
        if not mentioned(prompt):
            return prompt, ()
        return await anyio.to_thread.run_sync(
            attach, self.admitted.mcp, prompt, images_before, abandon_on_cancel=True
        )


class FaceEmitter:
    """The face as the runner's emitter, handed each tool's output (which run events do not
    carry) just before the activity that ends the call."""

    def __init__(self, face: Face, observer: Observer) -> None:
        self.face, self.observer = face, observer

    def delta(self, event: MessageDelta) -> None:
        self.face.delta(event)

    async def critical(self, event: RunEvent) -> None:
        if isinstance(event, Activity) and event.kind == "tool" and event.state != "started":
            self.face.tool_output(self.observer.output, self.observer.preview)
        await self.face.critical(event)

    async def detail(self, event: DetailEvent) -> None:
        """Of the detail events, the plan `update_plan` set, a running call's progress and
        its live output (tool output and usage reach the face through the observer)."""
        if isinstance(event, PlanUpdate):
            self.face.plan(event)
        elif isinstance(event, ToolProgress):
            self.face.progress(event)
        elif isinstance(event, ToolOutputDelta):
            self.face.live_output(event)


def call_preview(call: PendingCall) -> Preview | None:
    """What the call will do, read before it runs; nothing for a read."""
    if call.access.kind == "read":
        return None
    current: str | None = None
    shown = ""
    if call.access.paths:
        path = call.access.paths[0]
        shown = display(call.ctx, path)
        try:
            current = path.read_text(encoding="utf-8") if path.is_file() else None
        except (OSError, UnicodeDecodeError):
            current = None
    return preview(call.tool, call.args, current, shown, str(call.ctx.workspace))


def first_model(provider: str, conf: object) -> str | None:
    """The provider's default model: a preset's, else the first it lists."""
    return default_model(provider, conf) if isinstance(conf, dict) else None


def session_header(path: Path, session_id: str) -> tuple[str, str]:
    """(cwd, model) from a session file's first record; empty strings when unknown."""
    try:
        with path.open("rb") as handle:
            raw = handle.readline(HEADER_BYTES)
        record = decode_record(raw.rstrip(b"\n"), session_id)
    except (OSError, SessionError):
        return "", ""
    selection = record.get("selection")
    model = selection.get("model") if isinstance(selection, dict) else None
    return str(record.get("cwd", "")), model if isinstance(model, str) else ""


def user_prompts(path: Path, session_id: str) -> list[str]:
    """The prompts of one session file, in order; a bad line ends the read."""
    found: list[str] = []
    try:
        with path.open("rb") as handle:
            for raw in handle:
                if not raw.endswith(b"\n"):
                    break
                record = decode_record(raw[:-1], session_id)
                if record["type"] == "user":
                    found.append(record["text"])
    except (OSError, SessionError):
        pass
    return found


def last_user_id(attachment: Attachment) -> str | None:
    """The last prompt of the conversation as it stands (a rewind may have dropped later ones)."""
    turns = conversation_turns(attachment.records())
    return turns[-1].message_id if turns else None
