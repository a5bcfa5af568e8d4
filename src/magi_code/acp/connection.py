"""The ACP connection on the private stdout (main.py moved it aside): the SDK reads the
client's messages a line at a time, and only lines it can handle reach it (lines.py judges
them; the rest are answered here); the agent (agent.py) is served until EOF or SIGTERM, then
stopped, and the providers' pooled connections are closed.
"""

import asyncio
import contextlib
import os
import signal
import sys
from typing import cast

from acp import Agent
from acp.core import AgentSideConnection

from magi_code.acp.agent import MagiAgent
from magi_code.acp.lines import TOO_LARGE, judge
from magi_code.limits import ACP_MESSAGE_BYTES
from magi_code.providers.client import close_clients


class JudgedLines(asyncio.StreamReader):
    """The stream the SDK reads its messages from, a line at a time with `readuntil`: only
    lines it can handle reach it. The others, and a line past the reader's limit (skipped to
    its end, never held whole), are answered here with their JSON-RPC error."""

    def __init__(self, limit: int, writer: asyncio.StreamWriter) -> None:
        super().__init__(limit=limit)
        self.writer = writer

    async def readuntil(self, separator: bytes = b"\n") -> bytes:  # type: ignore[override]
        while True:
            try:
                line = await super().readuntil(separator)
            except asyncio.LimitOverrunError as over:
                await self._skip_line(separator, over.consumed)
                await self._answer(TOO_LARGE)
                continue
            except asyncio.IncompleteReadError as end:
                if not end.partial:
                    raise  # the end of input: the SDK stops reading
                line = end.partial  # the last line, without its LF
            judged = judge(line)
            if judged.answer is not None:
                await self._answer(judged.answer)
            if judged.line is not None:
                return judged.line

    async def _skip_line(self, separator: bytes, buffered: int) -> None:
        """Drop the rest of a line past the limit, a buffer at a time, through its separator."""
        while True:
            await self.readexactly(buffered)
            try:
                await super().readuntil(separator)
                return
            except asyncio.LimitOverrunError as over:
                buffered = over.consumed
            except asyncio.IncompleteReadError:
                return

    async def _answer(self, reply: bytes) -> None:
        self.writer.write(reply)
        with contextlib.suppress(ConnectionError):  # the client stopped reading: EOF follows
            await self.writer.drain()


async def stdio_streams(out_fd: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    protocol = asyncio.streams.FlowControlMixin()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, os.fdopen(out_fd, "wb"))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    reader = JudgedLines(ACP_MESSAGE_BYTES, writer)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader, writer


async def serve(out_fd: int) -> int:
    agent = MagiAgent()
    reader, writer = await stdio_streams(out_fd)
    # MagiAgent serves part of the Agent protocol; the SDK answers the rest method_not_found.
    conn = AgentSideConnection(cast("Agent", agent), writer, reader, listening=False)
    listening = asyncio.ensure_future(conn.listen())  # until EOF
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, listening.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await listening
    try:
        await agent.stop()  # before the connection cancels the prompts' tasks
    finally:
        await asyncio.shield(conn.close())
        agent.close()
        await close_clients()
    return 0
