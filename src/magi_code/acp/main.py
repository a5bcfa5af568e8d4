"""`magi-code acp`: serve the ACP agent on stdin/stdout until the client closes stdin.

stdout carries protocol bytes only: it is moved to a private descriptor at startup and fd 1
points at stderr, so no library print and no child process can write to the wire. On EOF
or SIGTERM, running prompts are cancelled (each records its cancel), then sessions and MCP
servers close.
"""

import asyncio
import contextlib
import os
import signal
import sys
from typing import cast


async def stdio_streams(out_fd: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    from magi_code.limits import ACP_MESSAGE_BYTES

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=ACP_MESSAGE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    protocol = asyncio.streams.FlowControlMixin()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, os.fdopen(out_fd, "wb"))
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def serve(out_fd: int) -> None:
    from acp import Agent
    from acp.core import AgentSideConnection

    from magi_code.acp.agent import MagiAgent

    agent = MagiAgent()
    reader, writer = await stdio_streams(out_fd)
    # MagiAgent serves part of the Agent protocol; the SDK answers the rest method_not_found.
    conn = AgentSideConnection(cast("Agent", agent), writer, reader, listening=False)
    listening = asyncio.ensure_future(conn.listen())  # until EOF
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, listening.cancel)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await listening
        await agent.stop()  # before the connection cancels the prompts' tasks
    finally:
        await asyncio.shield(conn.close())
        agent.close()
        if "magi_code.providers.clients" in sys.modules:
            from magi_code.providers.clients import close_clients

            await close_clients()


def run() -> int:
    from magi_code.stdio import private_stdout

    out_fd = private_stdout()  # the wire
    try:
        asyncio.run(serve(out_fd))
    except KeyboardInterrupt:
        return 130
    return 0
