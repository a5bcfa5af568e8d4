"""The ACP agent: sessions of the session store, prompts through `start_turn`.

Each ACP session is one attached stored session (its ID is the stored ID, so `session/load`
takes what `magi-code sessions list` shows). A workspace is admitted once, on the first session
in it (settings, folder trust, instructions, profiles, MCP: exactly as for every other face;
nothing is asked, dropped project keys are warned on stderr). One prompt at a time per session;
`session/cancel` cancels it through its TurnControl, and the prompt answers `cancelled` once the
turn has recorded that. Errors carry a code in `data`, never an input echo or a path.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
)

from magi_code import limits
from magi_code.acp import updates
from magi_code.acp.prompt_run import PromptRun
from magi_code.runner.startup import Admitted, StartupError, admit
from magi_code.runner.turn import TurnControl, TurnSetup
from magi_code.sessions import Attachment, SessionError, SessionStore, valid_session_id
from magi_code.tools.grants import SessionGrants

if TYPE_CHECKING:
    from magi_code.providers.base import ImagePart
    from magi_code.runner.agents import SessionAgents

VERSION = "0.1.0"


def failure(code: str) -> RequestError:
    return RequestError.invalid_params({"code": code})


def _settings_error(failed: StartupError) -> bool:
    """Whether startup failed on the settings (their error names the key and the file)."""
    from magi_code.config.settings import SettingsError

    return isinstance(failed.__cause__, SettingsError)


@dataclass
class Session:
    admitted: Admitted
    attachment: Attachment
    agents: SessionAgents  # its melchior, its subagents
    provider: str
    model: str
    thinking: str | None
    control: TurnControl | None = None  # the running prompt's
    ended: anyio.Event = field(default_factory=anyio.Event)  # set when no prompt runs
    grants: SessionGrants = field(default_factory=SessionGrants)  # "always allow" answers


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
            admitted = await anyio.to_thread.run_sync(admit, canonical, dict(os.environ))
        except StartupError as failed:
            said = failed.detail or (str(failed.__cause__) if _settings_error(failed) else "")
            if said:  # for the person reading the agent's log; the client gets the code
                print(f"magi-code acp: startup failed: {failed.code}: {said}", file=sys.stderr)
            raise failure(failed.code) from None
        except Exception:  # noqa: BLE001 - a bug in startup: its text never reaches the client
            from magi_code import debug

            debug.absorbed("acp startup")
            raise failure("startup_failed") from None
        for dropped in admitted.dropped:
            print(f"magi-code acp: {dropped.warning()}", file=sys.stderr)
        for notice in admitted.notices:
            print(f"magi-code acp: {notice}", file=sys.stderr)
        self.admitted[canonical] = admitted
        self.store = self.store or SessionStore(Path(admitted.paths.home))
        return admitted

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        from magi_code.sessions import Selection

        admitted = await self.workspace(cwd)
        assert self.store is not None
        selection = Selection(admitted.provider, admitted.model, admitted.thinking)
        attachment = await anyio.to_thread.run_sync(self.store.create, admitted.cwd, selection)
        agents = await self.agents(admitted, attachment)
        self.sessions[attachment.session_id] = Session(
            admitted, attachment, agents, admitted.provider, admitted.model, admitted.thinking
        )
        return NewSessionResponse(session_id=attachment.session_id)

    async def agents(self, admitted: Admitted, attachment: Attachment) -> SessionAgents:
        """The session's melchior and subagents, as for the local agent (never fails; a
        notice that melchior could not start comes as the first turn's diagnostic)."""
        from magi_code.runner.agents import SessionAgents

        return await anyio.to_thread.run_sync(SessionAgents.open, admitted, attachment)

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> LoadSessionResponse:
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
            entries = await anyio.to_thread.run_sync(history, attachment)
        except SessionError as failed:
            attachment.close()
            raise failure(failed.code) from None
        saved = attachment.selection
        provider, model = (saved.provider, saved.model) if saved else (None, None)
        if not (provider and model and offered(admitted, provider, model)):
            provider, model = admitted.provider, admitted.model
        thinking = saved.thinking if saved else admitted.thinking
        agents = await self.agents(admitted, attachment)
        replaced = self.sessions.get(session_id)
        if replaced is not None:  # its attachment was handed over by the open
            replaced.agents.close()
        self.sessions[session_id] = Session(admitted, attachment, agents, provider, model, thinking)
        started: set[str] = set()
        for entry in entries:
            update = updates.replay(entry, started)
            if update is not None:
                await self.client.session_update(session_id=session_id, update=update)
        return LoadSessionResponse()

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
            finished = await self.run(session, text, control, images)
        finally:
            session.control = None
            session.ended.set()
        if finished.outcome == "completed":
            return PromptResponse(stop_reason="end_turn")
        if finished.outcome == "cancelled":
            return PromptResponse(stop_reason="cancelled")
        raise RequestError.internal_error({"code": finished.error_code or "execution_failed"})

    async def run(
        self,
        session: Session,
        text: str,
        control: TurnControl,
        images: tuple[ImagePart, ...] = (),
    ) -> Any:
        from magi_code.acp.host import host_io
        from magi_code.runner.entry import start_turn
        from magi_code.runner.turn import new_id
        from magi_code.tools.approvals import ApprovalBroker

        assert self.store is not None and self.client is not None
        from magi_code.tools.grants import GrantedPolicy

        run = PromptRun(self.client, session.attachment.session_id, session.grants)
        run.broker = broker = ApprovalBroker(run.announce)

        def granted(setup: TurnSetup) -> None:  # "always allow": tools/grants.py, as elsewhere
            setup.policy = GrantedPolicy.over(setup.policy, session.grants)

        async with anyio.create_task_group() as sending:
            sending.start_soon(run.pump)
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
                    host_io=host_io(self.client, session.attachment.session_id, self.client_caps),
                    observe=granted,
                    images=images,
                )
                asks.cancel_scope.cancel()  # approvals still asked are denied already
            await run.close()  # the sender drains what is queued, then ends
        if finished.outcome == "failed" and run.failure:  # what the person can act on
            code = finished.error_code or "execution_failed"
            raise RequestError.internal_error({"code": code, "message": run.failure})
        return finished

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
            session.agents.close()
            session.attachment.close()
        for admitted in self.admitted.values():
            if admitted.mcp is not None:
                admitted.mcp.close(limits.CLEANUP_WAIT_MS / 1000)


def history(attachment: Attachment) -> list[dict[str, Any]]:
    """Every part of the attachment's current history snapshot, in stored order."""
    snapshot = attachment.history
    entries: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = attachment.page(attachment.session_id, snapshot.revision, cursor)
        entries.extend(page.entries)
        cursor = page.next_cursor
        if cursor is None:
            return entries


def offered(admitted: Admitted, provider: str, model: str) -> bool:
    """The one rule for a model name (providers/known_models.py), as startup applies it."""
    from magi_code.providers.known_models import refusal

    conf = admitted.settings.get("providers", {}).get(provider)
    home = admitted.paths.home
    return isinstance(conf, dict) and refusal(provider, conf, model, home) is None
