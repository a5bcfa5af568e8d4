"""`magi-code acp`: serve the ACP agent on stdin/stdout until the client closes stdin.

stdout carries protocol bytes only: it is moved to a private descriptor at startup and fd 1
points at stderr, so no library print and no child process can write to the wire. A message
is one line of at most ACP_MESSAGE_BYTES (LF excluded); a longer one is skipped to its end and
answered with an error, and so is any line the SDK could not handle (acp/lines.py): the
connection goes on serving. On EOF or SIGTERM, running prompts are cancelled (each records its
cancel), then sessions and MCP servers close.

This module moves stdout aside, and only then loads the connection (connection.py), the ACP
SDK and the agent: no print as they load can reach the wire.
"""

import asyncio

from magi_code.stdio import private_stdout


def run() -> int:
    out_fd = private_stdout()  # the wire
    from magi_code.acp.connection import serve  # after the move: see the module's docstring

    try:
        return asyncio.run(serve(out_fd))
    except KeyboardInterrupt:
        return 130
