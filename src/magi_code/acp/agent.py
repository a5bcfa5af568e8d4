"""The ACP agent: sessions of the session store, prompts through `start_turn`.

Each ACP session is one attached stored session (its ID is the stored ID, so `session/load`
takes what `magi-code sessions list` shows), on disk from `session/new` on. A workspace is
admitted once, on the first session in it (settings, folder trust, instructions, profiles, MCP:
exactly as for every other face; nothing is asked, dropped project keys are warned on stderr).
A session has the approval modes and model choice of session_config.py, and the MCP servers its
client sent (client_mcp.py). One prompt at a time per session; `session/cancel` cancels it
through its TurnControl, and the prompt answers `cancelled` once the turn has recorded that. A
failed prompt's error names the failure's class and what to do (updates.py `run_failure`);
other errors carry a code in `data`, never an input echo or a path.
"""

from __future__ import annotations

import copy
import os
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from acp import PROTOCOL_VERSION, RequestError, update_agent_message_text
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from magi_code import debug, limits
from magi_code.acp import client_mcp, forms, session_config, updates
from magi_code.acp.host import host_io
from magi_code.acp.prompt_run import PromptRun
from magi_code.acp.watched import Watched
from magi_code.config.settings import SettingsError
from magi_code.mcp.errors import McpStartupError
from magi_code.mcp.tool import mcp_tools
from magi_code.mission_control.observe import ApprovalMode, FacePolicy, Grants
from magi_code.providers.known_models import load_cache, refusal
from magi_code.providers.known_models import offered as models_of
from magi_code.records import field, record
from magi_code.runner.agents import SessionAgents
from magi_code.runner.entry import start_turn
from magi_code.runner.events import Diagnostic
from magi_code.runner.startup import Admitted, StartupError, admit
from magi_code.runner.turn import ROUND_LIMIT_CODE, TurnControl, TurnSetup, new_id
from magi_code.sessions import (
    Attachment,
    Selection,
    SessionError,
    SessionStore,
    valid_session_id,
)
from magi_code.tools.approvals import ApprovalBroker

if TYPE_CHECKING:
    from acp.schema import StopReason

    from magi_code.mcp.manager import McpManager
    from magi_code.providers.base import ImagePart
    from magi_code.runner.agents import SessionAgents
    from magi_code.tools.sandbox.modes import Sandbox

VERSION = "0.1.0"
MODE_FIELD = "approval_mode"  # of a `session` record: the mode the client chose last
# A run that failed as the model's answer stopped short (its diagnostic's `stop`), or on its
# bound of model requests, ends the prompt with the reason ACP has for it. The diagnostic's
# code cannot tell them apart: `refused` is also an HTTP 4xx failure's, which is an error.
STOPPED_BY: dict[str, StopReason] = {
    "refused": "refusal",
    "content_filtered": "refusal",
    "max_tokens": "max_tokens",
}


def failure(code: str) -> RequestError:
    return RequestError.invalid_params({"code": code})


def _settings_error(failed: StartupError) -> bool:
    """Whether startup failed on the settings (their error names the key and the file)."""
    return isinstance(failed.__cause__, SettingsError)


@record(frozen=False)
class Session:
    admitted: Admitted
    attachment: Attachment
    agents: SessionAgents  # its melchior, its subagents
    provider: str
    model: str
    thinking: str | None
    control: TurnControl | None = None  # the running prompt's
    mcp: McpManager | None = None  # the MCP servers its client sent (client_mcp.py)
    notice: str = ""  # told in the next prompt: the servers the client added
    sandbox: Sandbox | None = None  # the workspace's sandbox, with this session's `auto`

    def close_own(self) -> None:
        """Close what the session holds but its attachment: melchior, children, servers."""
        self.agents.close()
        if self.mcp is not None:
            self.mcp.close(limits.CLEANUP_WAIT_MS / 1000)

    ended: anyio.Event = field(default_factory=anyio.Event)  # set when no prompt runs
    # "always allow" answers (tools/grants.py) and the approval mode, as in Mission Control
    grants: Grants = field(default_factory=Grants)


class MagiAgent:
    def __init__(self) -> None:
        self.client: Client | None = None
        self.client_caps: ClientCapabilities | None = None  # as declared in `initialize`
        self.admitted: dict[str, Admitted] = {}  # canonical cwd -> its snapshot
        self.store: SessionStore | None = None
        self.sessions: dict[str, Session] = {}
        self.admitting = anyio.Lock()  # one admission at a time: each owns its MCP servers

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        **_: Any,
    ) -> InitializeResponse:
        self.client_caps = client_capabilities
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                prompt_capabilities=PromptCapabilities(
                    image=True, audio=False, embedded_context=True
                ),
            ),
            auth_methods=[],  # sign-in stays in Mission Control (`magi-code login`)
            agent_info=Implementation(name="magi-code", title="magi-code", version=VERSION),
        )

    # ---- sessions ------------------------------------------------------------------------

    async def workspace(self, cwd: str) -> Admitted:
        canonical = os.path.realpath(cwd)
        if not os.path.isabs(cwd) or not os.path.isdir(canonical):
            raise failure("cwd_invalid")
        async with self.admitting:
            return self.admitted.get(canonical) or await self.admit(canonical)

    async def admit(self, canonical: str) -> Admitted:
        try:
            elicits = forms.offers_forms(self.client_caps)
            admitting = partial(admit, canonical, dict(os.environ), elicits=elicits)
            admitted = await anyio.to_thread.run_sync(admitting)
        except StartupError as failed:
            said = failed.detail or (str(failed.__cause__) if _settings_error(failed) else "")
            if said:  # for the person reading the agent's log; the client gets the code
                print(f"magi-code acp: startup failed: {failed.code}: {said}", file=sys.stderr)
            raise failure(failed.code) from None
        except Exception:  # noqa: BLE001 - a bug in startup: its text never reaches the client
            debug.absorbed("acp startup")
            raise failure("startup_failed") from None
        for dropped in admitted.dropped:
            print(f"magi-code acp: {dropped.warning()}", file=sys.stderr)
        for notice in admitted.notices:
            print(f"magi-code acp: {notice}", file=sys.stderr)
        self.admitted[canonical] = admitted
        self.store = self.store or SessionStore(Path(admitted.paths.home))
        return admitted

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> NewSessionResponse:
        admitted = await self.workspace(cwd)
        assert self.store is not None
        servers = await self.client_servers(admitted, mcp_servers or [])
        selection = Selection(admitted.provider, admitted.model, admitted.thinking)
        attachment = await anyio.to_thread.run_sync(self.store.create, admitted.cwd, selection)
        try:  # on disk from now on: `session/load` finds it before its first prompt
            await anyio.to_thread.run_sync(remember, attachment, selection)
        except (OSError, SessionError) as failed:
            attachment.close()
            if servers is not None:
                servers.close(limits.CLEANUP_WAIT_MS / 1000)
            code = failed.code if isinstance(failed, SessionError) else "session_unwritable"
            raise failure(code) from None
        agents = await self.agents(admitted, attachment)
        session = self.sessions[attachment.session_id] = Session(
            admitted, attachment, agents, admitted.provider, admitted.model, admitted.thinking
        )
        session.grants.mode = first_mode(admitted)
        session.mcp, session.notice = servers, client_mcp.told(mcp_servers or []) if servers else ""
        modes, config = await self.configuration(session)
        return NewSessionResponse(
            session_id=attachment.session_id, modes=modes, config_options=config
        )

    async def client_servers(self, admitted: Admitted, servers: list[Any]) -> McpManager | None:
        """The client's MCP servers, connected for one session (client_mcp.py)."""
        try:
            elicits = forms.offers_forms(self.client_caps)
            connecting = partial(client_mcp.connect, servers, admitted, elicits=elicits)
            return await anyio.to_thread.run_sync(connecting)
        except client_mcp.Refused:
            raise failure("mcp_server_refused") from None
        except McpStartupError as failed:
            raise failure(failed.code) from None

    async def agents(self, admitted: Admitted, attachment: Attachment) -> SessionAgents:
        """The session's melchior and subagents, as for the local agent (never fails; a
        notice that melchior could not start comes as the first turn's diagnostic)."""
        return await anyio.to_thread.run_sync(SessionAgents.open, admitted, attachment)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> LoadSessionResponse:
        """Attach a stored session and replay its history as session/update notifications."""
        if not valid_session_id(session_id):
            raise failure("session_missing")
        held = self.sessions.get(session_id)
        if held is not None and held.control is not None:
            raise failure("busy")
        admitted = await self.workspace(cwd)
        assert self.store is not None and self.client is not None
        try:
            attachment, _notices = await anyio.to_thread.run_sync(
                self.store.open, session_id, admitted.cwd
            )
        except SessionError as failed:
            raise failure(failed.code) from None
        try:
            entries, calls = await anyio.to_thread.run_sync(history, attachment)
            mode = await anyio.to_thread.run_sync(saved_mode, attachment)
        except SessionError as failed:
            attachment.close()
            raise failure(failed.code) from None
        saved = attachment.selection
        provider, model = (saved.provider, saved.model) if saved else (None, None)
        if not (provider and model and offered(admitted, provider, model)):
            provider, model = admitted.provider, admitted.model
        thinking = saved.thinking if saved else admitted.thinking
        try:
            servers = await self.client_servers(admitted, mcp_servers or [])
        except RequestError:
            attachment.close()
            raise
        agents = await self.agents(admitted, attachment)
        replaced = self.sessions.get(session_id)
        if replaced is not None:  # its attachment was handed over by the open
            replaced.close_own()
        session = Session(admitted, attachment, agents, provider, model, thinking)
        session.grants.mode = mode or first_mode(admitted)
        session.mcp = servers
        self.sessions[session_id] = session
        started: set[str] = set()
        shown = list(dict.fromkeys(e["message_id"] for e in entries if e["kind"] == "activity"))
        # The projection keeps the last of the activities (a compaction folds a prefix away)
        by_entry = dict(zip(reversed(shown), reversed(calls), strict=False))
        for entry in entries:
            call = by_entry.get(entry["message_id"])
            update = updates.replay(entry, started, call)
            if update is not None:
                await self.client.session_update(session_id=session_id, update=update)
                plan = updates.replayed_plan(call)
                if plan is not None:
                    await self.client.session_update(session_id=session_id, update=plan)
        if servers is not None:
            told = update_agent_message_text(client_mcp.told(mcp_servers or []))
            await self.client.session_update(session_id=session_id, update=told)
        modes, config = await self.configuration(session)
        return LoadSessionResponse(modes=modes, config_options=config)

    # ---- modes and options ---------------------------------------------------------------

    async def configuration(
        self, session: Session
    ) -> tuple[SessionModeState, list[session_config.Option]]:
        """The session's modes and its options (the offered models: the discovery cache is
        read in a worker thread)."""
        offered_models = await anyio.to_thread.run_sync(choices, session.admitted)
        selected = session_config.model_value(session.provider, session.model)
        config = session_config.options(session.grants.mode, selected, offered_models)
        return session_config.modes(session.grants.mode), config

    def held(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise failure("session_missing")
        return session

    async def set_session_mode(
        self, session_id: str, mode_id: str, **_: Any
    ) -> SetSessionModeResponse:
        """The session's approval mode from now on (the running prompt's next call), saved
        with the session: `session/load` restores it."""
        session = self.held(session_id)
        mode = session_config.approval_mode(mode_id)
        if mode is None:
            raise failure("mode_unknown")
        record = {"type": "session", MODE_FIELD: mode}
        try:
            await anyio.to_thread.run_sync(partial(session.attachment.append, record, fsync=True))
        except (OSError, SessionError):
            raise failure("session_unwritable") from None
        session.grants.mode = mode
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> SetSessionConfigOptionResponse:
        session = self.held(session_id)
        if config_id == session_config.MODE and isinstance(value, str):
            await self.set_session_mode(session_id, value)
        elif config_id == session_config.MODEL and isinstance(value, str):
            await self.select_model(session, value)
        else:
            raise failure("option_unknown")
        _modes, config = await self.configuration(session)
        return SetSessionConfigOptionResponse(config_options=config)

    async def select_model(self, session: Session, value: str) -> None:
        """The session's model from now on (its next prompt), saved with the session."""
        chosen = session_config.parse_model(value)
        if chosen is None or not offered(session.admitted, *chosen):
            raise failure("model_unavailable")
        provider, model = chosen
        selection = Selection(provider, model, session.thinking)
        try:
            await anyio.to_thread.run_sync(remember, session.attachment, selection)
        except (OSError, SessionError):
            raise failure("session_unwritable") from None
        session.provider, session.model = provider, model

    # ---- prompts -------------------------------------------------------------------------

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> PromptResponse:
        session = self.sessions.get(session_id)
        if session is None:
            raise failure("session_missing")
        if session.control is not None:
            raise failure("busy")
        try:
            text = updates.prompt_text(prompt)
            images = await anyio.to_thread.run_sync(updates.prompt_images, prompt)
        except updates.UnsupportedContent:
            raise failure("unsupported_content") from None
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate escape: no session file can store it
            raise failure("invalid_prompt") from None
        if (not text.strip() and not images) or size > limits.PROMPT_BYTES:
            raise failure("invalid_prompt")
        control = session.control = TurnControl()
        session.ended = anyio.Event()
        try:
            stop_reason = await self.run(session, text, control, images)
        finally:
            session.control = None
            session.ended.set()
        return PromptResponse(stop_reason=stop_reason)

    async def run(
        self,
        session: Session,
        text: str,
        control: TurnControl,
        images: tuple[ImagePart, ...] = (),
    ) -> StopReason:
        """Run one prompt; how it stopped, or the failure a person can act on (raised)."""
        assert self.store is not None and self.client is not None
        sid = session.attachment.session_id
        run = PromptRun(self.client, sid, session.grants)
        run.broker = broker = ApprovalBroker(run.announce)

        def observe(setup: TurnSetup) -> None:  # grants and mode, as in Mission Control
            setup.policy = FacePolicy.over(setup.policy, session.grants)
            if setup.sandbox is not None:  # its own copy: `auto` is the session's mode
                if session.sandbox is None:
                    session.sandbox = copy.copy(setup.sandbox)
                session.sandbox.auto = session.grants.mode == "auto"
                setup.sandbox = session.sandbox
            tools = {**mcp_tools(session.mcp), **setup.tools} if session.mcp else setup.tools
            setup.tools = {name: Watched(tool, run.calls) for name, tool in tools.items()}
            if forms.offers_forms(self.client_caps):  # the editor puts servers' questions
                setup.elicit = run.elicit

        async with anyio.create_task_group() as sending:
            sending.start_soon(run.pump)
            if session.notice:  # the servers the client added, told once
                await run.put(update_agent_message_text(session.notice))
                session.notice = ""
            async with anyio.create_task_group() as asks:
                run.asks = asks
                finished = await start_turn(
                    session.admitted,
                    session.attachment,
                    (session.provider, session.model, session.thinking),
                    text,
                    run_id=new_id(),
                    emitter=run,
                    control=control,
                    approvals=broker,
                    agents=session.agents,
                    host_io=host_io(self.client, sid, self.client_caps, run.terminal),
                    observe=observe,
                    images=images,
                )
                asks.cancel_scope.cancel()  # approvals still asked are denied already
            await run.close()  # the sender drains what is queued, then ends
        if finished.outcome == "completed":
            return "end_turn"
        if finished.outcome != "failed":
            return "cancelled"
        stopped = stop_reason(run.failure)
        if stopped is not None:  # a stop ACP names (its diagnostic said why)
            return stopped
        raise updates.run_failure(finished.error_code or "execution_failed", run.failure)

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None and session.control is not None:
            session.control.cancel(None)

    # ---- the end -------------------------------------------------------------------------

    async def stop(self) -> None:
        """The client has gone: cancel every running prompt and wait (bounded) for each to
        record its cancel."""
        running = [s for s in self.sessions.values() if s.control is not None]
        for session in running:
            assert session.control is not None
            session.control.cancel(None)
        with anyio.move_on_after(limits.CLEANUP_WAIT_MS / 1000):
            for session in running:
                await session.ended.wait()

    def close(self) -> None:
        for session in self.sessions.values():  # melchior and children before the leases
            session.close_own()
            session.attachment.close()
        for admitted in self.admitted.values():
            if admitted.mcp is not None:
                admitted.mcp.close(limits.CLEANUP_WAIT_MS / 1000)


def stop_reason(failure: Diagnostic | None) -> StopReason | None:
    """The reason ACP has for the stop that failed a run, or None: an error."""
    if failure is None:
        return None
    if failure.code == ROUND_LIMIT_CODE:
        return "max_turn_requests"
    return STOPPED_BY.get(failure.stop) if failure.stop is not None else None


def remember(attachment: Attachment, selection: Selection) -> None:
    """Write the session's selection record (with its header): the session is loadable."""
    attachment.append({"type": "session", "selection": selection.to_record()}, fsync=True)


def history(attachment: Attachment) -> tuple[list[dict[str, Any]], list[updates.StoredCall]]:
    """Every part of the attachment's current history snapshot, in stored order, and its
    stored tool calls (none for a session not yet on disk)."""
    stored = attachment.records() if attachment.durable else iter(())
    calls = updates.stored_calls(stored, attachment.cwd)
    snapshot = attachment.history
    entries: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = attachment.page(attachment.session_id, snapshot.revision, cursor)
        entries.extend(page.entries)
        cursor = page.next_cursor
        if cursor is None:
            return entries, calls


def saved_mode(attachment: Attachment) -> ApprovalMode | None:
    """The approval mode last chosen for the session (`session/set_mode`), if any."""
    stored = attachment.records() if attachment.durable else iter(())
    chosen = None
    for stored_record in stored:
        if stored_record["type"] == "session" and MODE_FIELD in stored_record:
            chosen = session_config.approval_mode(str(stored_record[MODE_FIELD]))
    return chosen


def first_mode(admitted: Admitted) -> ApprovalMode:
    """The `approval_mode` setting: ask (the default) or auto, as Mission Control starts."""
    return "auto" if admitted.settings.get("approval_mode") == "auto" else "ask"


def choices(admitted: Admitted) -> list[tuple[str, str]]:
    """(provider, model) for each model each configured provider offers."""
    cache = load_cache(admitted.paths.home)
    found: list[tuple[str, str]] = []
    for provider, conf in admitted.settings.get("providers", {}).items():
        if isinstance(conf, dict):
            found += [(provider, model) for model in models_of(provider, conf, cache)[0]]
    return found


def offered(admitted: Admitted, provider: str, model: str) -> bool:
    """The one rule for a model name (providers/known_models.py), as startup applies it."""
    conf = admitted.settings.get("providers", {}).get(provider)
    home = admitted.paths.home
    return isinstance(conf, dict) and refusal(provider, conf, model, home) is None
