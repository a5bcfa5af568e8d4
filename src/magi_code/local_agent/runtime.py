"""Sessions, history and turns for an admitted child: the methods beyond the lifecycle.

The protocol loop calls the handlers (the threads are drawn in local_agent/__init__.py);
session and history work runs on one worker at a time (overlap is `busy`); a run lives in
the event loop. State changes happen on the protocol loop only.

Warming: once the initialize result is written, the server creates the runtime and `warm`
imports, on a thread of its own, what the first session and turn load (the session store,
the runner, asyncio and anyio, the provider's wire and the HTTP stack), then starts the event
loop; so asyncio is never on the path to the initialize result, yet session.create and
turn.start find it ready. Warming holds no lock while it imports (the portal lock only while
the loaded loop starts), so a request that arrives meanwhile never waits on it for long.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable

from magi_code import limits
from magi_code.ids import uuid4
from magi_code.local_agent.channel import ChannelFull, EventChannel, Item
from magi_code.local_agent.envelope import Request, valid_name
from magi_code.local_agent.errors import RequestRejected
from magi_code.local_agent.output import OutputFailed, OversizeFrame, UnencodableFrame
from magi_code.local_agent.params import exact
from magi_code.local_agent.sides import Host, Runtime

TYPE_CHECKING = False  # `typing` and `dataclasses` cost milliseconds where the runtime is made
if TYPE_CHECKING:
    from typing import Any

    from anyio.from_thread import BlockingPortal

    from magi_code.runner.agents import Boot, SessionAgents
    from magi_code.runner.events import MessageDelta, RunEvent
    from magi_code.runner.startup import Admitted
    from magi_code.runner.turn import TurnControl
    from magi_code.sessions import Attachment, SessionStore
    from magi_code.tools.approvals import ApprovalBroker


class ActiveRun:
    def __init__(self, run_id: str, control: TurnControl) -> None:
        self.run_id, self.control = run_id, control
        self.broker: ApprovalBroker | None = None
        self.ended = False  # the turn returned; its terminal event is queued or lost


class Pending:
    """The one session/history operation in flight, answered once (result or cancel)."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.answered = False


# What the first session and turn import, in the order they need it (the provider's wire
# module and the event loop are added by `warm`).
SESSION_MODULES = ("magi_code.sessions", "magi_code.runner.agents", "magi_code.runner.subagents")
LOOP_MODULES = ("asyncio", "anyio.from_thread")
TURN_MODULES = (
    "magi_code.runner.entry",
    "magi_code.tools.approvals",
    "magi_code.providers.client",  # with the connection pool and its HTTP/1.1 framing
)


class LocalRuntime(Runtime):
    def __init__(self, server: Host, admitted: Admitted) -> None:
        self.server, self.admitted = server, admitted
        self.provider: str | None = admitted.provider
        self.model: str | None = admitted.model
        self.thinking: str | None = admitted.thinking
        self.session_id: str | None = None
        self.run_id: str | None = None
        self._store: SessionStore | None = None  # made by the first session operation
        self.attachment: Attachment | None = None
        self.agents: SessionAgents | None = None  # the attached session's melchior and children
        self.operation: Pending | None = None
        self.run: ActiveRun | None = None
        self.channel = EventChannel(server.wake)
        self._portal: BlockingPortal | None = None
        self._portal_cm: Any = None
        self._portal_lock = threading.Lock()
        self._closing = False

    # ---- the Runtime side of the line (sides.py) ----------------------------------------------

    def handle(self, request: Request) -> None:
        METHODS[request.method](self, request)

    def pump(self) -> None:
        while self.server.takes_events() and (item := self.channel.take()) is not None:
            name, data = item
            try:
                self.server.event(name, data)
            except (OversizeFrame, UnencodableFrame):
                self._unframable(name)
                continue
            if name == "run.finished":
                self.run = self.run_id = None

    def _unframable(self, name: str) -> None:
        """An event that cannot be framed is never sent half-true: a delta is dropped (its
        part number goes missing), any other event ends the run with output_unavailable,
        and a terminal that cannot be sent is an output failure of the child."""
        if name == "run.finished":
            raise OutputFailed("unframable terminal")
        if name != "message.delta" and self.run is not None:
            self._cancel_run(self.run, "output_unavailable")

    def idle(self) -> bool:
        return self.run is None

    def status(self) -> dict[str, str | None]:
        """The selection and what is attached and running, for the `status` method."""
        return {
            "provider": self.provider,
            "model": self.model,
            "session_id": self.session_id,
            "run_id": self.run_id,
        }

    def cancel_all(self) -> None:
        if self.operation is not None and not self.operation.answered:
            self.operation.answered = True
            self.server.fail(self.operation.request_id, "operation_cancelled")
        if self.run is not None:
            self._cancel_run(self.run, None)

    def close(self, timeout: float) -> None:
        """Cancel and wait (bounded) for the run, then release the session and the loop."""
        closer = threading.Thread(target=self._close, daemon=True)
        closer.start()
        closer.join(timeout)

    def _close(self) -> None:
        with self._portal_lock:  # a warming thread starts no loop after this
            self._closing = True
        if self._portal is not None and "magi_code.providers.client" in sys.modules:
            from magi_code.providers.client import close_clients

            with contextlib.suppress(Exception):  # the pool only holds idle connections here
                self._portal.call(close_clients)
        if self._portal_cm is not None:
            self._portal_cm.__exit__(None, None, None)  # waits for the run's task to end
        if self.admitted.mcp is not None:  # MCP servers shut down before leases are released
            self.admitted.mcp.close(limits.CLEANUP_WAIT_MS / 1000)
        if self.agents is not None:
            self.agents.close()
        if self.attachment is not None:
            self.attachment.close()

    # ---- the event loop ----------------------------------------------------------------------

    def portal(self) -> BlockingPortal:
        from anyio.from_thread import start_blocking_portal  # before the lock: see `warm`

        with self._portal_lock:
            if self._portal is None:
                if self._closing:
                    raise RuntimeError("the runtime is closing")
                self._portal_cm = start_blocking_portal("asyncio")
                self._portal = self._portal_cm.__enter__()
            return self._portal

    def warm(self) -> None:
        """Load the first session's and turn's modules and start the loop, on a thread of
        its own (see the module docstring). Failing there only leaves the work to the first
        request that needs it."""
        # Imports hold the GIL for a switch interval at a time: a shorter one while warming
        # lets the protocol loop answer a request that arrives meanwhile without that wait.
        # Set here, before the thread starts: a thread already waiting keeps its interval.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(limits.WARM_SWITCH_INTERVAL_S)
        try:
            threading.Thread(target=self._warm, args=(interval,), name="warm", daemon=True).start()
        except RuntimeError:  # no thread to be had: the first requests do the work
            sys.setswitchinterval(interval)
            from magi_code.tools.sandbox.modes import keep_secrets

            keep_secrets()

    def _warm(self, interval: float) -> None:
        from magi_code.debug import absorbed, note

        try:
            from magi_code.tools.sandbox.modes import keep_secrets

            keep_secrets()  # before any tool, hook or MCP server can look at /proc
            for name in SESSION_MODULES + LOOP_MODULES:
                __import__(name)  # the C path: -X importtime logs it
            self.portal()
            for name in (*TURN_MODULES, *self._provider_modules()):
                __import__(name)  # the C path: -X importtime logs it
            note("warmed")
        except Exception:  # noqa: BLE001 - warming is an optimisation, never a failure
            absorbed("warming")
        finally:
            sys.setswitchinterval(interval)

    def _provider_modules(self) -> tuple[str, ...]:
        """The provider's wire, and the HTTP/2 client too for an https origin (offered h2,
        it most likely takes it)."""
        from magi_code.providers.registry import WIRES, ConfigurationInvalid, base_url, wire_api

        provider = self.provider or ""
        conf = self.admitted.settings["providers"][provider]
        wire = wire_api(provider, conf)
        try:
            https = base_url(conf, wire).startswith("https://")
        except ConfigurationInvalid:  # no URL: the fixture speaks no HTTP
            https = False
        module = WIRES[wire].module
        return (module, "magi_code.providers.http2") if https else (module,)

    @property
    def store(self) -> SessionStore:
        """The session store (a worker thread: the one session operation in flight)."""
        if self._store is None:
            from pathlib import Path

            from magi_code.sessions import SessionStore

            self._store = SessionStore(Path(self.admitted.paths.home))
        return self._store

    # ---- sessions ----------------------------------------------------------------------------

    def check_idle(self) -> None:
        if self.operation is not None or self.run is not None:
            raise RequestRejected("busy")

    def start_operation(
        self, request: Request, work: Callable[[], Any], done: Callable[[Any], None]
    ) -> None:
        self.check_idle()
        operation = self.operation = Pending(request.id)

        def finished(result: Any, error: BaseException | None) -> None:
            if self.operation is operation:
                self.operation = None
            if operation.answered:  # cancelled by shutdown/EOF: release what the work attached
                made = result[0] if isinstance(result, tuple) else result
                if made is not self.attachment and callable(getattr(made, "close", None)):
                    made.close()
                return
            operation.answered = True
            from magi_code.sessions import SessionError

            if isinstance(error, SessionError):
                self.server.fail(operation.request_id, error.code)
            elif error is not None:
                self.server.fail(operation.request_id, "session_invalid")
            else:
                done(result)

        self.server.start_worker(work, finished)

    def on_create(self, request: Request) -> None:
        exact(request.params, {})

        def work() -> Any:
            boot = self._boot()  # melchior boots while the session is made
            try:
                attachment = self.store.create(self.admitted.cwd, self._selection())
            except BaseException:
                boot.abandon()
                raise
            agents = self._agents_for(attachment, boot)
            self.portal()  # started by `warm` unless that failed: turn.start must not wait
            return attachment, agents

        def done(made: tuple[Attachment, SessionAgents]) -> None:
            attachment, agents = made
            self._attach(attachment, agents)
            self.server.reply(
                request.id,
                {
                    "session_id": attachment.session_id,
                    "durable": attachment.durable,
                    "revision": attachment.history.revision,
                    "notices": [],  # the spec's create has none; agents' go to the first turn
                },
            )

        self.start_operation(request, work, done)

    def on_open(self, request: Request) -> None:
        exact(request.params, {"session_id": (str,)})
        from magi_code.sessions import valid_session_id

        session_id = request.params["session_id"]
        if not valid_session_id(session_id):
            raise RequestRejected("invalid_params")

        def work() -> Any:
            boot = self._boot()  # melchior boots while the session is read
            try:
                opened = self.store.open(session_id, self.admitted.cwd, self._available)
            except BaseException:
                boot.abandon()
                raise
            attachment, notices = opened
            agents = self._agents_for(attachment, boot)
            self.portal()  # started by `warm` unless that failed: turn.start must not wait
            return attachment, notices, agents

        def done(opened: tuple[Attachment, list[str], SessionAgents]) -> None:
            attachment, notices, agents = opened
            saved, admitted = attachment.selection, self.admitted
            if saved is not None and "saved_selection_unavailable" not in notices:
                self.provider, self.model = saved.provider, saved.model
            else:  # restore nothing, or what cannot run: the startup selection
                self.provider, self.model = admitted.provider, admitted.model
            self.thinking = saved.thinking if saved is not None else admitted.thinking
            self._attach(attachment, agents)
            self.server.reply(
                request.id,
                {
                    "session_id": attachment.session_id,
                    "durable": attachment.durable,
                    "revision": attachment.history.revision,
                    "notices": notices,
                },
            )

        self.start_operation(request, work, done)

    def _attach(self, attachment: Attachment, agents: SessionAgents) -> None:
        previous, self.attachment = self.attachment, attachment
        previous_agents, self.agents = self.agents, agents
        self.session_id = attachment.session_id
        if previous is not None and previous is not attachment:
            previous.close()
        if previous_agents is not None:
            previous_agents.close()

    def _boot(self) -> Boot:
        from magi_code.runner.agents import Boot

        return Boot(self.admitted)

    def _agents_for(self, attachment: Attachment, boot: Boot) -> SessionAgents:
        """The session's melchior (invocation `local_agent`, or `subagent` when delegated)."""
        from magi_code.runner.agents import SessionAgents

        return SessionAgents.open(self.admitted, attachment, boot)

    def _selection(self) -> Any:
        from magi_code.sessions import Selection

        return Selection(self.provider or "", self.model or "", self.thinking)

    def _available(self, provider: str, model: str) -> bool:
        """The one rule for a model name (providers/known_models.py), as startup applies it:
        the settings, the built-in catalog and the cached model availability."""
        from magi_code.providers.known_models import refusal

        conf = self.admitted.settings.get("providers", {}).get(provider)
        home = self.admitted.paths.home
        return isinstance(conf, dict) and refusal(provider, conf, model, home) is None

    def on_history(self, request: Request) -> None:
        exact(
            request.params,
            {"session_id": (str,), "revision": (str,)},
            {"cursor": (str, type(None))},
        )
        params = request.params
        cursor = params.get("cursor")
        if not valid_name(params["revision"]) or (cursor is not None and not valid_name(cursor)):
            raise RequestRejected("invalid_params")
        attachment = self._attached(params["session_id"])
        self.start_operation(
            request,
            lambda: attachment.page(params["session_id"], params["revision"], cursor),
            lambda page: self.server.reply(request.id, page.result()),
        )

    def _attached(self, session_id: str) -> Attachment:
        if self.attachment is None:
            raise RequestRejected("session_missing")
        if session_id != self.attachment.session_id:
            raise RequestRejected("stale_session")
        return self.attachment

    # ---- turns -------------------------------------------------------------------------------

    def on_turn_start(self, request: Request) -> None:
        exact(request.params, {"session_id": (str,), "prompt": (str,)})
        prompt = request.params["prompt"]
        try:
            size = len(prompt.encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate escape: no session file can store it
            raise RequestRejected("invalid_params") from None
        if size > limits.PROMPT_BYTES or not prompt.strip():
            raise RequestRejected("invalid_params")
        attachment = self._attached(request.params["session_id"])
        self.check_idle()
        from magi_code.runner.turn import TurnControl

        run = self.run = ActiveRun(uuid4(), TurnControl())
        self.run_id = run.run_id
        self.server.reply(request.id, {"run_id": run.run_id, "accepted": True})
        self.portal().start_task_soon(self._drive, run, attachment, prompt)

    async def _drive(self, run: ActiveRun, attachment: Attachment, prompt: str) -> None:
        from magi_code.runner.entry import start_turn
        from magi_code.runner.turn import OutputUnavailable
        from magi_code.tools.approvals import ApprovalBroker

        emit = RunEmitter(self.channel, attachment.session_id, run.run_id)
        broker = run.broker = ApprovalBroker(emit.announce)
        try:
            finished = await start_turn(
                self.admitted,
                attachment,
                (self.provider, self.model, self.thinking),
                prompt,
                run_id=run.run_id,
                emitter=emit,
                control=run.control,
                approvals=broker,
                agents=self.agents,
            )
        finally:
            run.ended = True
        try:
            await emit.critical(finished)
        except OutputUnavailable:
            self.server.post(lambda: self._terminal_lost(run))

    def _terminal_lost(self, run: ActiveRun) -> None:
        if self.run is run:
            self.run = self.run_id = None

    def _cancel_run(self, run: ActiveRun, reason: str | None) -> None:
        async def cancel() -> None:
            run.control.cancel(reason)
            if run.broker is not None:
                run.broker.deny_all()

        if self._portal is not None:
            self._portal.start_task_soon(cancel)

    def on_turn_cancel(self, request: Request) -> None:
        exact(request.params, {"session_id": (str,), "run_id": (str,)})
        self._attached(request.params["session_id"])
        run = self.run  # active until its run.finished is drained, so a late cancel is no error
        if run is None or run.run_id != request.params["run_id"]:
            raise RequestRejected("stale_run")
        self._cancel_run(run, None)
        self.server.reply(request.id, {"cancellation_requested": True})

    def on_approval(self, request: Request) -> None:
        exact(
            request.params,
            {"session_id": (str,), "run_id": (str,), "approval_id": (str,), "allow": (bool,)},
        )
        params = request.params
        self._attached(params["session_id"])
        run = self.run
        if run is None or run.ended or run.broker is None or run.run_id != params["run_id"]:
            raise RequestRejected("stale_approval")
        recorded = self.portal().call(run.broker.answer, params["approval_id"], params["allow"])
        if not recorded:
            raise RequestRejected("stale_approval")
        self.server.reply(request.id, {"recorded": True})


class RunEmitter:
    """Run events -> channel items carrying the session and run ids."""

    def __init__(self, channel: EventChannel, session_id: str, run_id: str) -> None:
        self.channel, self.session_id, self.run_id = channel, session_id, run_id

    def item(self, event: RunEvent) -> Item:
        from magi_code.runner.event_data import event_data

        return event_data(event, self.session_id, self.run_id)

    def delta(self, event: MessageDelta) -> None:
        self.channel.offer_delta(self.item(event))

    async def critical(self, event: RunEvent) -> None:
        from magi_code.runner.turn import OutputUnavailable

        try:
            await self.channel.put(self.item(event))
        except ChannelFull as full:
            raise OutputUnavailable from full

    async def announce(self, approval_id: str, summary: str, expires_in_ms: int) -> None:
        from magi_code.runner.events import ApprovalRequested

        await self.critical(ApprovalRequested(approval_id, summary, expires_in_ms))


METHODS: dict[str, Callable[[LocalRuntime, Request], None]] = {
    "session.create": LocalRuntime.on_create,
    "session.open": LocalRuntime.on_open,
    "history.page": LocalRuntime.on_history,
    "turn.start": LocalRuntime.on_turn_start,
    "turn.cancel": LocalRuntime.on_turn_cancel,
    "approval.answer": LocalRuntime.on_approval,
}
