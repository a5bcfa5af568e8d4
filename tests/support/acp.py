"""The real `magi-code acp` driven by the ACP SDK's client side: `agent` spawns it over its
pipes and initializes it (with the client capabilities given, if any), `spawned` only spawns it
(for a test that needs the process); `RecordingClient` records what the agent sends and answers
permission requests from a list; `EditorClient` is an editor with open buffers and real
terminals, for the `FILES` and `TERMINAL` capabilities; `run` runs a scenario under a one-minute
bound."""

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, Client, spawn_agent_process
from acp.core import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
)

from magi_code.client import environment
from support.exec import MAGI_CODE


class RecordingClient:
    """Records every update; answers permission requests from a list of option ids."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.asked: list[ToolCallUpdate] = []
        self.answers: list[str] = []
        self.chunk = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)
        if isinstance(update, AgentMessageChunk):
            self.chunk.set()

    async def request_permission(
        self, options: list[Any], session_id: str, tool_call: ToolCallUpdate, **_: Any
    ) -> RequestPermissionResponse:
        assert {o.option_id for o in options} == {"allow_once", "allow_always", "reject_once"}
        self.asked.append(tool_call)
        choice = self.answers.pop(0)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice)
        )

    def text(self) -> str:
        return "".join(u.content.text for u in self.updates if isinstance(u, AgentMessageChunk))


class Terminal:
    def __init__(self, process: asyncio.subprocess.Process, limit: int | None) -> None:
        self.process, self.limit = process, limit
        self.output = b""
        self.reader = asyncio.create_task(self.read())

    async def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        await self.process.wait()

    async def read(self) -> None:
        assert self.process.stdout is not None
        self.output = await self.process.stdout.read()


class EditorClient(RecordingClient):
    """An editor: open buffers that differ from the disk, and terminals that run for real."""

    def __init__(self, buffers: dict[str, str]) -> None:
        super().__init__()
        self.buffers = buffers
        self.calls: list[tuple[str, Any]] = []  # in order, permission requests included
        self.terminals: dict[str, Terminal] = {}
        self.created = asyncio.Event()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(("permission", kwargs["tool_call"].tool_call_id))
        return await super().request_permission(*args, **kwargs)

    async def read_text_file(self, session_id: str, path: str, **_: Any) -> ReadTextFileResponse:
        self.calls.append(("read", path))
        return ReadTextFileResponse(content=self.buffers.get(path, Path(path).read_text()))

    async def write_text_file(self, session_id: str, path: str, content: str, **_: Any) -> None:
        self.calls.append(("write", (path, content)))
        self.buffers[path] = content

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **_: Any,
    ) -> CreateTerminalResponse:
        self.calls.append(("create", (command, args, cwd, output_byte_limit)))
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "EDITOR_API_KEY": "editor-secret"},  # the client's own
            start_new_session=True,  # its own group, so a kill takes the whole command
        )
        terminal_id = f"term-{len(self.terminals)}"
        self.terminals[terminal_id] = Terminal(process, output_byte_limit)
        self.created.set()
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> WaitForTerminalExitResponse:
        self.calls.append(("wait", terminal_id))
        code = await self.terminals[terminal_id].process.wait()
        return WaitForTerminalExitResponse(exit_code=code)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> TerminalOutputResponse:
        self.calls.append(("output", terminal_id))
        terminal = self.terminals[terminal_id]
        await terminal.reader
        code = terminal.process.returncode
        status = TerminalExitStatus(exit_code=code) if code is not None and code >= 0 else None
        text = terminal.output.decode()
        return TerminalOutputResponse(output=text, truncated=False, exit_status=status)

    async def kill_terminal(self, session_id: str, terminal_id: str, **_: Any) -> None:
        self.calls.append(("kill", terminal_id))
        await self.terminals[terminal_id].kill()

    async def release_terminal(self, session_id: str, terminal_id: str, **_: Any) -> None:
        self.calls.append(("release", terminal_id))
        terminal = self.terminals[terminal_id]
        await terminal.kill()
        await terminal.reader

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.calls]


FILES = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
TERMINAL = ClientCapabilities(terminal=True)


Agent = tuple[ClientSideConnection, RecordingClient]


@asynccontextmanager
async def spawned(
    cwd: Path, home: Path, client: RecordingClient
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """`magi-code acp` in `cwd` under MC_HOME `home`, not yet initialized, with `client` on
    the other end of its pipes; its stderr is the test's."""
    async with spawn_agent_process(
        cast(Client, client),
        MAGI_CODE,
        "acp",
        env=environment(home),
        cwd=cwd,
        transport_kwargs={"stderr": None},
    ) as (conn, process):
        yield conn, process


@asynccontextmanager
async def agent(
    cwd: Path,
    home: Path,
    client: RecordingClient | None = None,
    caps: ClientCapabilities | None = None,
) -> AsyncIterator[Agent]:
    """`spawned`, then initialized by `client` (a fresh RecordingClient unless given)
    declaring `caps`."""
    client = client if client is not None else RecordingClient()
    async with spawned(cwd, home, client) as (conn, _process):
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps)
        assert init.protocol_version == PROTOCOL_VERSION
        yield conn, client


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    """Run `scenario` to its end, failing it after 60 s."""
    asyncio.run(asyncio.wait_for(scenario(), timeout=60))
