"""A stdio MCP server's line nested too deep is that server's malformed message, never a
RecursionError: the transport hands the session the parse error as a value (pydantic-core's
parser stops at its own depth bound) and reads on. Audit pin: mcp/transport.py already did so."""

import sys

import anyio
from mcp.shared.message import SessionMessage

from magi_code.mcp.definitions import ServerDef
from magi_code.mcp.transport import open_stdio

NOTE = '{"jsonrpc":"2.0","method":"x/pad","params":{"p":%s}}'
PRINTER = f"""
import sys
for depth in (100_000, sys.getrecursionlimit() - 10, 2):
    line = {NOTE!r} % ("[" * depth + "]" * depth)
    sys.stdout.write(line + "\\n")
sys.stdout.flush()
sys.stdin.read()
"""


def test_deep_lines_are_parse_errors_and_the_next_message_is_read() -> None:
    server = ServerDef("deep", sys.executable, ("-c", PRINTER), {})

    async def go() -> list[object]:
        async with open_stdio(server, {}, None) as (_process, read, _write):
            return [await read.receive() for _ in range(3)]

    first, second, third = anyio.run(go)
    assert isinstance(first, ValueError) and isinstance(second, ValueError)
    assert isinstance(third, SessionMessage)
    assert third.message.params == {"p": [[]]}  # type: ignore[union-attr]
