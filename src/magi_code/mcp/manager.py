"""McpManager: the connected MCP servers of one process, in their own event-loop thread.

Rules:
- One owner task per connection, in a loop thread of the manager's own (a blocking portal):
  it opens the transport (a stdio process, or a streamable-HTTP session), runs the initialize
  handshake and tools/list under one CONNECT_S deadline, then holds the session until told to
  stop. Its exit always ends the process or the HTTP session.
- `start` is synchronous, for a plain worker thread. Every enabled server must be globally
  approved before anything is spawned or requested. It returns once every server is
  connected; the first failure, the deadline, or the caller's cancel event stops it, after
  every server already started has been closed, with McpUnavailable naming the server and why
  (failures.py; McpLoginRequired when an HTTP server needs `magi-code mcp login`) or
  McpCancelled. It never prompts for login. With `skip_failed`, a server that fails is left
  out instead (`failed`: its name and why) and the others are kept.
- `close` tells every owner at once: a connected one leaves its contexts in order (so an HTTP
  session gets its DELETE, a process its closed stdin) under a deadline of `timeout`; one still
  connecting is cancelled. It waits at most `timeout`, then SIGKILLs what is left.
- `notifications/tools/list_changed` re-lists that server's tools in the background; the next
  `listed()` (the next turn's tools, `tool.mcp_tools`) waits briefly for a re-list in flight.
  Roots are declared (with list_changed): the one root is the workspace (`cwd`). Form
  elicitation is declared where a face can ask its person (`elicits`); a server's question
  goes to the newest of that server's calls in flight (live.py), and elicitation.py decides
  its answer. Sampling is refused (the SDK's default; not declared).
- A server's `instructions` from its initialize answer are kept for the context
  (`instructions()`), cut to INSTRUCTIONS_CHARS with a note saying so.
- Resources: `resources(server)` lists a server's resources (bounded like its tools),
  `read(server, uri)` reads one; both on the manager's loop, like calls.
- Prompts: a server that declared the prompts capability has them listed with its tools (at
  most PROMPTS_PER_SERVER; a failed list leaves none); `submit_get_prompt` gets one.
- `states()` says what each server is now (states.py); `reconnect(name)` ends a server's
  owner, if any, and connects it afresh (restarts counted anew), also one left out at startup.
- The SDK logs server text (error bodies, a token endpoint's answer): its loggers end here,
  never on stderr, which `serve --stdio` keeps free of diagnostics.
- Tool calls are tasks of the manager's loop too, giving the server's raw result or why there
  is none (errors.McpCallFailure); a caller on another loop awaits them through a future it
  cancels on its own cancellation, and makes the model's view of the result
  (`tool.McpTool.run`). The manager knows nothing of tools. A call's progress notifications
  go to the `LiveCall` its caller handed in.
- An HTTP session is opened again when lost after startup, the way the streamable-HTTP spec
  says: a call whose server answered 404 to our session (http_answers.py notes it) asks the
  owner for a new one (it leaves the old within CLOSE_S, connects, initializes and lists
  within CONNECT_S) and is tried once more on it; a call finding the session gone (the
  transport failed, or the last renewal did) asks for one the same way. A failed exchange
  alone fails only its call (http_answers.py).
- A stdio server that ended after startup is started again (spawn, initialize, list) by the
  next call that finds it ended, which then runs on it and tells the model so in its result.
  At most RESTARTS restarts per server; a failed restart, or a stop with none left, fails the
  server for good (its calls say so). A call during which the server ends fails ("stopped").
"""

import concurrent.futures
import contextlib
import logging
import math
import os
import signal
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import ClientSession
from mcp.client.session import ClientRequestContext, IncomingMessage
from mcp.shared.exceptions import MCPError
from pydantic import FileUrl

from magi_code.config.credentials import CredentialStore
from magi_code.config.own_commands import resolved_program, working_folder
from magi_code.mcp.definitions import ServerDef, parse_servers, require_approved
from magi_code.mcp.elicitation import decide
from magi_code.mcp.errors import McpCallFailure, McpCancelled, McpLoginRequired, McpUnavailable
from magi_code.mcp.failures import StderrTail, http_reason, stdio_reason
from magi_code.mcp.http_answers import REPORT, CallReport
from magi_code.mcp.http_transport import open_http
from magi_code.mcp.limits import (
    CALL_TIMEOUT_S,
    CANCEL_POLL_S,
    CLOSE_S,
    CONNECT_S,
    INSTRUCTIONS_CHARS,
    LIST_PAGES,
    PROMPTS_PER_SERVER,
    RELIST_WAIT_S,
    RESOURCES_PER_SERVER,
    RESTARTS,
    STDIN_GRACE_S,
    TOOLS_PER_SERVER,
)
from magi_code.mcp.live import LiveCall
from magi_code.mcp.states import ServerState, state_of
from magi_code.mcp.transport import open_stdio
from magi_code.records import field, record

CLIENT_INFO = mcp_types.Implementation(name="magi-code", version="0.1.0")
# What a server inherits from our environment, besides its own `env` table: never credentials.
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
_CALL_ERRORS = (MCPError, RuntimeError, ValueError, anyio.BrokenResourceError)

_SDK_LOGGER = logging.getLogger("mcp")
_SDK_LOGGER.addHandler(logging.NullHandler())
_SDK_LOGGER.propagate = False


@record(frozen=False)
class Connection:
    server: ServerDef
    pid: int | None = None
    session: ClientSession | None = None  # the session calls use; None while there is none
    tools: list[mcp_types.Tool] = field(default_factory=list)
    prompts: list[mcp_types.Prompt] = field(default_factory=list)
    instructions: str | None = None  # the server's, from initialize, bounded
    has_resources: bool = False  # the server declared the resources capability
    needs_login: bool = False
    process: Any = None  # a stdio server's current process (anyio.abc.Process)
    tail: StderrTail = field(default_factory=StderrTail)  # of the current process's stderr
    http_status: int | None = None  # the last error status an HTTP server answered
    http_refused: str | None = None  # with it, our word when the exchange itself failed
    failure: str | None = None  # why the last attempt at a session failed (failures.py)
    restarts: int = 0  # restarts of a stdio server after startup
    failed: bool = False  # a stdio server that ended for good: its calls fail at once
    live: list[LiveCall] = field(default_factory=list)  # the calls in flight, oldest first
    # Touched only in the manager's loop:
    scope: anyio.CancelScope | None = None  # the current session's (its deadline to connect)
    stop: anyio.Event | None = None  # set: leave the current session in order
    changed: anyio.Event | None = None  # set: the server announced a new tool list
    wanted: anyio.Event | None = None  # set: a call wants a new HTTP session
    renewal: anyio.Event | None = None  # set when the next attempt at one ends, however
    stopping: bool = False
    ready: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    listed: threading.Event = field(default_factory=threading.Event)  # clear: re-list in flight


class McpManager:
    def __init__(
        self,
        servers: Mapping[str, ServerDef],
        env: Mapping[str, str],
        cwd: str | None,
        *,
        source_env: Mapping[str, str] | None = None,
        credentials: CredentialStore | None = None,
        home: str | None = None,
        project_servers: Collection[str] = (),
        elicits: bool = False,
    ):
        self.elicits = elicits  # a face can put servers' questions to a person: advertise it
        self.servers = dict(servers)  # every enabled server's definition, to reconnect it
        self.connections = {name: Connection(server) for name, server in servers.items()}
        self.env, self.cwd = env, cwd
        # Where a stdio server starts (config/own_commands.py): a global one in its own
        # folder under MC_HOME unless it names one, a trusted project's own in the workspace.
        self.home, self.project_servers = home, frozenset(project_servers)
        # Where `env:` header values and bearer tokens come from: our own environment.
        self.source_env: Mapping[str, str] = source_env or {}
        self.credentials = credentials  # stored OAuth logins; None: none are used
        self._changed = threading.Event()
        self._closing = threading.Lock()
        self._portal_cm: contextlib.AbstractContextManager[BlockingPortal] | None = None
        self.portal: BlockingPortal | None = None
        self.failed: dict[str, str] = {}  # with skip_failed: each left-out server, and why

    # ---- the synchronous facade ------------------------------------------------------------

    @classmethod
    def start(
        cls,
        servers: Mapping[str, Mapping[str, Any]],
        cancel: threading.Event | None = None,
        *,
        approved: Collection[str],
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        connect_s: float = CONNECT_S,
        home: str | None = None,  # MC_HOME, for stored OAuth logins and servers' folders
        project_servers: Collection[str] = (),  # the servers a trusted project defined
        skip_failed: bool = False,  # leave a server that fails out (`failed`), keep the rest
        elicits: bool = False,  # a face answers servers' questions (elicitation.py)
    ) -> "McpManager":
        """Connect every enabled server of `servers` (raw settings tables), or none."""
        enabled = parse_servers(servers)
        require_approved(enabled, approved)
        if cancel is not None and cancel.is_set():
            raise McpCancelled
        source = os.environ if env is None else env
        manager = cls(
            enabled,
            _server_env(source),
            cwd,
            source_env=dict(source),
            credentials=None if home is None else CredentialStore(home),
            home=home,
            project_servers=project_servers,
            elicits=elicits,
        )
        if not enabled:
            return manager
        manager._portal_cm = start_blocking_portal("asyncio", name="mcp")
        manager.portal = manager._portal_cm.__enter__()
        for connection in manager.connections.values():
            manager.portal.start_task_soon(manager._own, connection, connect_s)
        try:
            deadline = time.monotonic() + connect_s + CLOSE_S
            manager._wait_connected(cancel, deadline, connect_s, skip_failed)
        except BaseException:
            manager.close(CLOSE_S)
            raise
        return manager

    def listed(self) -> list[tuple[str, mcp_types.Tool]]:
        """Each server's tools as last listed (server name, tool), waiting briefly for a
        re-list in flight."""
        out = []
        for name, connection in self.connections.items():
            if connection.ready.is_set() and not connection.done.is_set():
                connection.listed.wait(RELIST_WAIT_S)
            out += [(name, listed) for listed in connection.tools]
        return out

    def with_resources(self) -> list[str]:
        """The connected servers that offer resources."""
        return [
            name
            for name, connection in self.connections.items()
            if connection.has_resources and connection.ready.is_set()
        ]

    def instructions(self) -> list[tuple[str, str]]:
        """Each connected server's instructions (server name, text), for the context."""
        return [
            (name, connection.instructions)
            for name, connection in self.connections.items()
            if connection.instructions and connection.ready.is_set()
        ]

    def prompts(self) -> list[tuple[str, mcp_types.Prompt]]:
        """Each connected server's prompts as last listed (server name, prompt)."""
        return [
            (name, prompt)
            for name, connection in self.connections.items()
            if connection.ready.is_set()
            for prompt in connection.prompts
        ]

    def states(self) -> list[ServerState]:
        """What each enabled server is now, by name."""
        connections, failed = self.connections, dict(self.failed)  # `reconnect` changes them
        found = [state_of(name, connection) for name, connection in connections.items()]
        found += [ServerState(name, "failed", why) for name, why in failed.items()]
        return sorted(found, key=lambda state: state.name)

    def reconnect(self, name: str, connect_s: float = CONNECT_S) -> str | None:
        """End the server's current owner, if any, and connect it afresh within `connect_s`;
        None once it is connected, else why not (then it is left out, as at startup). For a
        worker thread: it blocks. KeyError for a server that is not enabled."""
        server, portal = self.servers[name], self.portal
        if portal is None:
            return "magi-code is shutting its MCP servers down"
        old = self.connections.get(name)
        if old is not None:
            self._stop_one(old)
        connection = Connection(server)
        self.connections = {**self.connections, name: connection}  # readers keep their copy
        self.failed.pop(name, None)
        portal.start_task_soon(self._own, connection, connect_s)
        deadline = time.monotonic() + connect_s + CLOSE_S
        while not (connection.ready.is_set() or connection.done.is_set()):
            if time.monotonic() >= deadline:
                break
            connection.done.wait(CANCEL_POLL_S)
        if connection.ready.is_set() and not connection.done.is_set():
            return None
        reason = connection.failure or self._why(connection, None, connect_s)
        if connection.needs_login:
            reason = f"it needs a login: run `magi-code mcp login {name}`"
        self._stop_one(connection)
        self.connections = {n: c for n, c in self.connections.items() if n != name}
        self.failed[name] = reason
        return reason

    def submit_get_prompt(
        self, server: str, prompt: str, arguments: dict[str, str]
    ) -> "concurrent.futures.Future[mcp_types.GetPromptResult | McpCallFailure]":
        """Start getting one prompt of a server, with its arguments."""

        async def get(session: ClientSession) -> Any:
            return await session.get_prompt(prompt, arguments)

        return self._start(self._on_session, self.connections[server], get)

    def pids(self) -> list[int]:
        return [c.pid for c in self.connections.values() if c.pid is not None]

    def close(self, timeout: float = CLOSE_S) -> None:
        """Shut every server down at once; wait at most `timeout`; SIGKILL what is left.
        Idempotent and thread-safe; calls submitted afterwards fail at once."""
        with self._closing:
            portal, portal_cm = self.portal, self._portal_cm
            self.portal = self._portal_cm = None
        if portal is None or portal_cm is None:
            return
        end = time.monotonic() + timeout
        with contextlib.suppress(RuntimeError):  # the portal already stopped
            portal.call(self._stop_owners, timeout)
        for connection in self.connections.values():
            connection.done.wait(max(0.0, end - time.monotonic()))
        for connection in self.connections.values():
            if not connection.done.is_set() and connection.pid is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(connection.pid, signal.SIGKILL)
        closer = threading.Thread(target=_stop_portal, args=(portal, portal_cm), daemon=True)
        closer.start()
        closer.join(max(0.0, end - time.monotonic()))

    def submit(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        live: LiveCall | None = None,
    ) -> "concurrent.futures.Future[mcp_types.CallToolResult | McpCallFailure]":
        """Start one tools/call on the manager's loop; its result, or why there is none.
        What the server says meanwhile (progress, questions) goes to `live`. RuntimeError once
        the manager is closed."""
        connection = self.connections[server]
        update = None if live is None else live.update

        async def call(session: ClientSession) -> mcp_types.CallToolResult:
            if live is not None:
                connection.live.append(live)
            try:
                return await session.call_tool(
                    tool, arguments, read_timeout_seconds=CALL_TIMEOUT_S, progress_callback=update
                )
            finally:
                if live is not None:
                    connection.live.remove(live)

        return self._start(self._on_session, connection, call)

    def submit_list_resources(
        self, server: str
    ) -> "concurrent.futures.Future[list[mcp_types.Resource] | McpCallFailure]":
        """Start listing a server's resources (every page, at most RESOURCES_PER_SERVER)."""
        return self._start(self._on_session, self.connections[server], list_resources)

    def submit_read_resource(
        self, server: str, uri: str
    ) -> "concurrent.futures.Future[mcp_types.ReadResourceResult | McpCallFailure]":
        """Start reading one resource of a server."""

        async def read(session: ClientSession) -> mcp_types.ReadResourceResult:
            return await session.read_resource(uri)

        return self._start(self._on_session, self.connections[server], read)

    def _start(self, *task: Any) -> "concurrent.futures.Future[Any]":
        portal = self.portal
        if portal is None:
            raise RuntimeError("closed")
        return portal.start_task_soon(*task)

    def _wait_connected(
        self,
        cancel: threading.Event | None,
        deadline: float,
        connect_s: float = CONNECT_S,
        skip_failed: bool = False,
    ) -> None:
        # Two threading events cannot be awaited together: wake on progress, poll `cancel`.
        while True:
            if cancel is not None and cancel.is_set():
                raise McpCancelled
            connections = list(self.connections.values())
            late = time.monotonic() >= deadline
            failed = [c for c in connections if c.done.is_set() or (late and not c.ready.is_set())]
            for connection in failed:
                name = connection.server.name
                if connection.needs_login and not skip_failed:
                    raise McpLoginRequired(name)
                reason = connection.failure or self._why(connection, None, connect_s)
                if connection.needs_login:
                    reason = f"it needs a login: run `magi-code mcp login {name}`"
                if not skip_failed:
                    raise McpUnavailable(name, reason)
                self.failed[name] = reason
                del self.connections[name]
                self._stop_one(connection)
            if all(c.ready.is_set() for c in self.connections.values()):
                return
            self._changed.wait(CANCEL_POLL_S)
            self._changed.clear()

    def _stop_one(self, connection: Connection) -> None:
        """End a left-out server's owner (a late one may still be connecting)."""
        portal = self.portal
        if portal is not None and not connection.done.is_set():
            with contextlib.suppress(RuntimeError):
                portal.call(self._stop_owners, CLOSE_S, [connection])
            connection.done.wait(CLOSE_S)
            if not connection.done.is_set() and connection.pid is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(connection.pid, signal.SIGKILL)

    # ---- in the manager's loop -------------------------------------------------------------

    async def _own(self, connection: Connection, connect_s: float) -> None:
        try:
            connection.changed, connection.wanted = anyio.Event(), anyio.Event()
            connection.renewal = anyio.Event()
            try:
                await self._session(connection, connect_s)
            except Exception:
                if not connection.ready.is_set():
                    raise  # startup failed
            # A session lost after startup (an HTTP session, a stdio server's process) is
            # opened again when a call asks for one.
            while connection.ready.is_set():
                await connection.wanted.wait()
                if connection.stopping:
                    return
                connection.wanted = anyio.Event()
                with contextlib.suppress(Exception):  # no session: the next call asks again
                    await self._session(connection, CONNECT_S)
                if connection.server.url is None and connection.failure is not None:
                    connection.failed = True  # a stdio server that could not restart
                    return
        finally:
            connection.session = None
            connection.listed.set()
            connection.done.set()
            if connection.renewal is not None:
                connection.renewal.set()
            self._changed.set()

    async def _session(self, connection: Connection, connect_s: float) -> None:
        """Open the transport, initialize and list the tools within `connect_s`, then hold the
        session for calls until told to leave it (`stop`). The calls waiting for a session
        (`renewal`) are woken once it is open, or once it failed to open."""
        opened = False
        failure: BaseException | None = None
        with anyio.CancelScope(deadline=anyio.current_time() + connect_s) as scope:
            connection.scope = scope
            if connection.stopping:
                return
            connection.failure, connection.http_status, connection.http_refused = None, None, None
            connection.tail = StderrTail()
            try:
                async with (
                    self._transport(connection) as (read, write),
                    Session(
                        read,
                        write,
                        client_info=CLIENT_INFO,
                        message_handler=lambda message: self._on_message(connection, message),
                        list_roots_callback=self._roots,
                        elicitation_callback=lambda context, params: self._elicit(
                            connection, params
                        ),
                        elicits=self.elicits,
                    ) as session,
                ):
                    initialized = await session.initialize()
                    connection.instructions = bounded(initialized.instructions)
                    connection.has_resources = initialized.capabilities.resources is not None
                    connection.tools = await list_tools(session)
                    if initialized.capabilities.prompts is not None:
                        connection.prompts = await listed_prompts(session)
                    scope.deadline = math.inf
                    connection.session, connection.stop = session, anyio.Event()
                    connection.wanted = anyio.Event()  # a call that asked is served by this one
                    opened = True
                    self._renewal_ended(connection)
                    connection.listed.set()
                    connection.ready.set()
                    self._changed.set()
                    async with anyio.create_task_group() as group:
                        group.start_soon(self._relist, connection, session)
                        await connection.stop.wait()
                        group.cancel_scope.cancel()
                    connection.session = None  # calls from now on wait for the next one
            except Exception as exc:
                failure = exc
                raise
            finally:
                connection.session = None
                if not opened:
                    connection.failure = self._why(connection, failure, connect_s)
                    self._renewal_ended(connection)

    @staticmethod
    def _why(connection: Connection, failure: BaseException | None, connect_s: float) -> str:
        """Why an attempt at a session failed, in a person's words (failures.py)."""
        if isinstance(failure, McpUnavailable) and failure.reason:
            return failure.reason
        if connection.server.url is not None:
            status, refused = connection.http_status, connection.http_refused
            return http_reason(status, refused, failure, connect_s)
        process = connection.process  # no failure: the deadline, and we ended it
        returncode = None if process is None or failure is None else process.returncode
        return stdio_reason(returncode, connection.tail, connect_s)

    @staticmethod
    def _renewal_ended(connection: Connection) -> None:
        """Wake the calls waiting for a session; later ones wait for the next attempt."""
        assert connection.renewal is not None
        connection.renewal.set()
        connection.renewal = anyio.Event()

    @contextlib.asynccontextmanager
    async def _transport(self, connection: Connection) -> AsyncIterator[tuple[Any, Any]]:
        server = connection.server
        if server.url is None:
            env = {**self.env, **server.env}
            folder, program = self._start_place(server, env)
            opened = open_stdio(server, env, folder, program, connection.tail)
            async with opened as (process, read, write):
                connection.pid, connection.process = process.pid, process
                yield read, write
            return

        def login_needed() -> None:
            connection.needs_login = True

        def answered(status: int, refused: str | None) -> None:
            connection.http_status, connection.http_refused = status, refused

        async with open_http(
            server, self.source_env, self.credentials, login_needed, on_error_status=answered
        ) as streams:
            yield streams

    def _start_place(self, server: ServerDef, env: Mapping[str, str]) -> tuple[str | None, str]:
        """The folder a stdio server starts in, and its program (config/own_commands.py)."""
        assert server.command is not None
        project = server.name in self.project_servers
        workspace = self.cwd or os.getcwd()
        if self.home is None:  # no MC_HOME to hold a neutral folder (a bare probe)
            folder = server.cwd or self.cwd
        else:
            place = f"mcp/{server.name}"
            folder = working_folder(server.cwd, project, workspace, self.home, place)
        outside = None if project else workspace
        return folder, resolved_program(server.command, env.get("PATH"), outside)

    async def _on_message(self, connection: Connection, message: IncomingMessage) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            connection.listed.clear()
            if connection.changed is not None:
                connection.changed.set()

    async def _relist(self, connection: Connection, session: ClientSession) -> None:
        """Re-list the tools each time the server announces a change; keep the old list when
        the new one cannot be had within CONNECT_S."""
        while True:
            assert connection.changed is not None
            await connection.changed.wait()
            connection.changed = anyio.Event()
            with anyio.move_on_after(CONNECT_S):
                with contextlib.suppress(McpUnavailable, *_CALL_ERRORS):
                    connection.tools = await list_tools(session)
            if not connection.changed.is_set():
                connection.listed.set()

    async def _stop_owners(
        self, timeout: float, connections: list[Connection] | None = None
    ) -> None:
        """An owner holding a session leaves it in order within `timeout`; one connecting is
        cancelled; one between sessions ends. Every owner, or those of `connections`."""
        for connection in self.connections.values() if connections is None else connections:
            connection.stopping = True
            if connection.wanted is not None:
                connection.wanted.set()
            if connection.scope is None:
                continue
            if connection.session is not None and connection.stop is not None:
                connection.scope.deadline = anyio.current_time() + timeout
                connection.stop.set()
            else:
                connection.scope.cancel()

    async def _on_session(
        self, connection: Connection, request: Callable[[ClientSession], Awaitable[Any]]
    ) -> Any:
        """`request` on the connection's session: its result, or why there is none."""
        if connection.server.url is not None:
            return await self._on_http_session(connection, request)
        return await self._on_stdio_session(connection, request)

    async def _on_stdio_session(
        self, connection: Connection, request: Callable[[ClientSession], Awaitable[Any]]
    ) -> Any:
        session = connection.session
        restarted = False
        if _ended(connection) or session is None:
            if connection.failed or connection.stopping or connection.done.is_set():
                return "failed" if connection.failed else "no_result"
            if session is not None:  # the first call to find it ended asks for the restart
                if connection.restarts >= RESTARTS:
                    connection.failed = True
                    return "failed"
                connection.restarts += 1
            renewal = self._renew(connection, session)  # or waits for the one under way
            with anyio.move_on_after(CONNECT_S + CLOSE_S):
                await renewal.wait()
            session, restarted = connection.session, True
            if session is None:
                return "failed" if connection.failed else "no_result"
        try:
            result = await request(session)
        except _CALL_ERRORS:
            with anyio.move_on_after(STDIN_GRACE_S):  # an ending server: see its exit
                while not _ended(connection):
                    await anyio.sleep(CANCEL_POLL_S)
            return "stopped" if _ended(connection) else "no_result"
        if restarted and isinstance(result, mcp_types.CallToolResult):
            name = connection.server.name
            notice = f"[the MCP server {name} had stopped; it was restarted for this call]"
            result.content.insert(0, mcp_types.TextContent(type="text", text=notice))
        return result

    async def _on_http_session(
        self, connection: Connection, request: Callable[[ClientSession], Awaitable[Any]]
    ) -> Any:
        failure: McpCallFailure = "no_result"
        for _ in range(2):  # once more on a new session when the server lost ours
            session = connection.session
            if session is None:
                session = await self._renewed(connection)
            if session is None:
                return "no_result" if connection.stopping else "session_lost"
            report = CallReport()
            token = REPORT.set(report)  # the SDK's tasks for this call's requests see it
            try:
                return await request(session)
            except _CALL_ERRORS:
                failure = report.failure or "no_result"
            finally:
                REPORT.reset(token)
            if failure != "session_lost":
                return failure
            self._renew(connection, session)
        return failure

    async def _elicit(
        self, connection: Connection, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        """A server's question goes to the face of its newest call in flight (elicitation.py
        decides)."""
        live = connection.live[-1] if connection.live else None
        action, values = await decide(connection.server.name, params, live)
        return mcp_types.ElicitResult(
            action=action, content=None if values is None else dict(values)
        )

    async def _roots(self, context: ClientRequestContext) -> mcp_types.ListRootsResult:
        """The one root: the workspace."""
        workspace = Path(self.cwd or os.getcwd())
        name = workspace.name or str(workspace)
        root = mcp_types.Root(uri=FileUrl(workspace.as_uri()), name=name)
        return mcp_types.ListRootsResult(roots=[root])

    def _renew(self, connection: Connection, stale: ClientSession | None) -> anyio.Event:
        """Ask the owner for a new HTTP session, leaving `stale` if it still holds it; the
        event set once that attempt ends."""
        assert connection.renewal is not None and connection.wanted is not None
        renewal = connection.renewal
        if stale is not None and connection.session is stale:
            assert connection.scope is not None and connection.stop is not None
            connection.session = None  # no call starts on it any more
            connection.scope.deadline = anyio.current_time() + CLOSE_S
            connection.stop.set()
        connection.wanted.set()
        return renewal

    async def _renewed(self, connection: Connection) -> ClientSession | None:
        """A new session (see `_renew`), waited for within CONNECT_S; None if none came."""
        if connection.stopping or connection.done.is_set():
            return None
        renewal = self._renew(connection, None)
        with anyio.move_on_after(CONNECT_S + CLOSE_S):
            await renewal.wait()
        return connection.session


async def list_tools(session: ClientSession) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(LIST_PAGES):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools += page.tools
        if len(tools) > TOOLS_PER_SERVER:
            raise McpUnavailable(None, f"it listed more than {TOOLS_PER_SERVER} tools")
        cursor = page.next_cursor
        if not cursor:
            return tools
    raise McpUnavailable(None, f"its tool list has more than {LIST_PAGES} pages")


def bounded(instructions: str | None) -> str | None:
    """A server's instructions within INSTRUCTIONS_CHARS; a cut says so."""
    if not instructions or len(instructions) <= INSTRUCTIONS_CHARS:
        return instructions or None
    note = f"[instructions cut at {INSTRUCTIONS_CHARS} characters]"
    return f"{instructions[:INSTRUCTIONS_CHARS]}\n{note}"


async def listed_prompts(session: ClientSession) -> list[mcp_types.Prompt]:
    """A server's prompts (every page, at most PROMPTS_PER_SERVER); none when it fails to
    list them, which costs it its prompt commands, not its connection."""
    prompts: list[mcp_types.Prompt] = []
    cursor: str | None = None
    try:
        for _ in range(LIST_PAGES):
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_prompts(params=params)
            prompts += page.prompts
            cursor = page.next_cursor
            if len(prompts) >= PROMPTS_PER_SERVER or not cursor:
                break
    except _CALL_ERRORS:
        return []
    return prompts[:PROMPTS_PER_SERVER]


async def list_resources(session: ClientSession) -> list[mcp_types.Resource]:
    resources: list[mcp_types.Resource] = []
    cursor: str | None = None
    for _ in range(LIST_PAGES):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_resources(params=params)
        resources += page.resources
        cursor = page.next_cursor
        if len(resources) >= RESOURCES_PER_SERVER or not cursor:
            break
    return resources[:RESOURCES_PER_SERVER]


class Session(ClientSession):
    """The SDK's client session, advertising form elicitation only where a face can answer
    it (`elicits`): the SDK's own ad offers URL mode too, which no face of ours opens."""

    def __init__(self, *args: Any, elicits: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.elicits = elicits

    def _build_capabilities(self, version: str) -> mcp_types.ClientCapabilities:
        built = super()._build_capabilities(version)
        form = mcp_types.ElicitationCapability(form=mcp_types.FormElicitationCapability())
        return built.model_copy(update={"elicitation": form if self.elicits else None})


def _ended(connection: Connection) -> bool:
    """Whether a stdio server's current process has exited."""
    process = connection.process
    return process is not None and process.returncode is not None


def _server_env(env: Mapping[str, str]) -> dict[str, str]:
    return {name: env[name] for name in INHERITED_ENV if name in env}


def _stop_portal(
    portal: BlockingPortal, portal_cm: contextlib.AbstractContextManager[BlockingPortal]
) -> None:
    """Cancel what still runs on the loop (calls in flight), then end the loop thread."""
    with contextlib.suppress(RuntimeError):
        portal.call(portal.stop, True)
    portal_cm.__exit__(None, None, None)
