"""The stdio transport of one MCP server: the process, its pipes, and its bounded shutdown.

Rules:
- The server starts in a new session (its pid is its process group), with stdin/stdout/stderr
  pipes: nothing it prints reaches our stderr (its last words are kept, bounded, in a
  failures.StderrTail, to say why it failed), and it inherits no other descriptor of ours
  (close_fds), so never the protocol's.
- Messages are LF-terminated JSON-RPC lines, split on bytes; a line longer than MESSAGE_BYTES
  ends the connection rather than growing a buffer without bound.
- An error with a null id answers every request still unanswered (unanswered.py).
- Shutdown, shielded from cancellation: close stdin (the MCP stdio shutdown), wait
  STDIN_GRACE_S for the exit, then SIGTERM and SIGKILL the whole group; then read what is left
  of its stderr for at most STDERR_DRAIN_S.
"""

import subprocess
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress

import anyio
import anyio.abc
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from magi_code.mcp.definitions import ServerDef
from magi_code.mcp.failures import StderrTail
from magi_code.mcp.limits import MESSAGE_BYTES, STDERR_DRAIN_S, STDIN_GRACE_S, TERM_GRACE_S
from magi_code.mcp.unanswered import Unanswered
from magi_code.tools.processes import kill_group

Incoming = SessionMessage | Exception
_EXIT_POLL_S = 0.01
_PIPE_ERRORS = (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)


@asynccontextmanager
async def open_stdio(
    server: ServerDef,
    env: Mapping[str, str],
    cwd: str | None,
    program: str | None = None,
    tail: StderrTail | None = None,
) -> AsyncIterator[
    tuple[
        anyio.abc.Process,
        MemoryObjectReceiveStream[Incoming],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    assert server.command is not None
    # Shielded: a cancellation landing inside the spawn would orphan a started server.
    with anyio.CancelScope(shield=True):
        process = await anyio.open_process(
            [program or server.command, *server.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
    read_send, read_recv = anyio.create_memory_object_stream[Incoming](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    drained = anyio.Event()
    try:
        async with anyio.create_task_group() as tg:
            unanswered = Unanswered()
            tg.start_soon(_read, process, read_send, unanswered)
            tg.start_soon(_write, process, write_recv, read_send, unanswered)
            tg.start_soon(_drain, process, tail or StderrTail(), drained)
            try:
                yield process, read_recv, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await stop(process, close=False)
                    with anyio.move_on_after(STDERR_DRAIN_S):
                        await drained.wait()
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await stop(process)
        for stream in (read_send, read_recv, write_send, write_recv):
            stream.close()


async def stop(process: anyio.abc.Process, close: bool = True) -> None:
    """Close stdin, give the server STDIN_GRACE_S to exit, then end its group; `close`: close
    its other pipes too. Call shielded; a second call finds it ended at once."""
    if process.stdin is not None:
        with suppress(*_PIPE_ERRORS):
            await process.stdin.aclose()
    with anyio.move_on_after(STDIN_GRACE_S):
        # returncode, not wait(): on 3.11 wait() also waits for pipe EOF, which a grandchild
        # holding stdout would postpone.
        while process.returncode is None:
            await anyio.sleep(_EXIT_POLL_S)
    await kill_group(process, TERM_GRACE_S)
    if close:
        with suppress(*_PIPE_ERRORS):
            await process.aclose()


async def _drain(process: anyio.abc.Process, tail: StderrTail, drained: anyio.Event) -> None:
    """Keep reading the server's stderr (so it never blocks on a full pipe) into `tail`."""
    stderr = process.stderr
    assert stderr is not None
    with suppress(*_PIPE_ERRORS):
        async for chunk in stderr:
            tail.feed(chunk)
    drained.set()


async def _read(
    process: anyio.abc.Process, send: MemoryObjectSendStream[Incoming], unanswered: Unanswered
) -> None:
    stdout = process.stdout
    assert stdout is not None
    pending = bytearray()
    with suppress(*_PIPE_ERRORS):
        async with send:
            async for chunk in stdout:
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    pending += chunk[start:end]
                    start = end + 1
                    if len(pending) > MESSAGE_BYTES:
                        return
                    if pending.strip():
                        for incoming in unanswered.received(_parse(bytes(pending))):
                            await send.send(incoming)
                    pending.clear()
                pending += chunk[start:]
                if len(pending) > MESSAGE_BYTES:
                    return  # closing `send` ends the session: pending requests fail


def _parse(line: bytes) -> Incoming:
    """One message, or the parse error as a value for the session to see (never raised)."""
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:
        return exc
    return SessionMessage(message)


async def _write(
    process: anyio.abc.Process,
    receive: MemoryObjectReceiveStream[SessionMessage],
    incoming: MemoryObjectSendStream[Incoming],
    unanswered: Unanswered,
) -> None:
    stdin = process.stdin
    assert stdin is not None
    async with receive:
        async for message in receive:
            unanswered.sent(message.message)
            line = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
            try:
                await stdin.send(line.encode("utf-8"))
            except _PIPE_ERRORS:
                incoming.close()  # the server stopped reading: let the session see the end
                return
