"""`magi-code acp`: serve the ACP agent on stdin/stdout until the client closes stdin.

stdout carries protocol bytes only: it is moved to a private descriptor at startup and fd 1
points at stderr, so no library print and no child process can write to the wire. A message
is one line of at most ACP_MESSAGE_BYTES (LF excluded); a longer one ends the connection
(exit 1). On EOF or SIGTERM, running prompts are cancelled (each records its cancel), then
sessions and MCP servers close.
"""

import asyncio
import contextlib
import os
import signal
import sys
from typing import cast


class MessageTooLarge(Exception):
    """A line past ACP_MESSAGE_BYTES."""


class BoundedLines(asyncio.StreamReader):
    """The SDK's transport reads lines with `readuntil` and, past the reader's limit, would
    go on joining `readexactly` pieces without end: here that is where the message is refused."""

    async def readexactly(self, n: int) -> bytes:
        raise MessageTooLarge


async def stdio_streams(out_fd: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    from magi_code.limits import ACP_MESSAGE_BYTES

    loop = asyncio.get_running_loop()
    reader = BoundedLines(limit=ACP_MESSAGE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    protocol = asyncio.streams.FlowControlMixin()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, os.fdopen(out_fd, "wb"))
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def serve(out_fd: int) -> int:
    from acp import Agent
    from acp.core import AgentSideConnection

    from magi_code.acp.agent import MagiAgent

    agent = MagiAgent()
    reader, writer = await stdio_streams(out_fd)
    # MagiAgent serves part of the Agent protocol; the SDK answers the rest method_not_found.
    conn = AgentSideConnection(cast("Agent", agent), writer, reader, listening=False)
    listening = asyncio.ensure_future(conn.listen())  # until EOF
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, listening.cancel)
    code = 0
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await listening
    except MessageTooLarge:
        print("magi-code acp: a message over the size limit: closing", file=sys.stderr)
        code = 1
    try:
        await agent.stop()  # before the connection cancels the prompts' tasks
    finally:
        await asyncio.shield(conn.close())
        agent.close()
        if "magi_code.providers.clients" in sys.modules:
            from magi_code.providers.clients import close_clients

            await close_clients()
    return code


def run() -> int:
    from magi_code.stdio import private_stdout

    out_fd = private_stdout()  # the wire
    try:
        return asyncio.run(serve(out_fd))
    except KeyboardInterrupt:
        return 130
