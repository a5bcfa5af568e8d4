"""The stdio transport: the message bound at its edge, stderr kept off ours, bounded stop."""

import sys
import time

import anyio
import pytest
from mcp.shared.message import SessionMessage
from mcp_harness import alive, gone_within

from magi_code.mcp.definitions import ServerDef
from magi_code.mcp.limits import MESSAGE_BYTES, STDIN_GRACE_S, TERM_GRACE_S
from magi_code.mcp.transport import open_stdio

HEAD, TAIL = '{"jsonrpc":"2.0","method":"x/pad","params":{"p":"', '"}}'
# Prints two JSON-RPC notifications of exactly N and N+1 bytes (LF excluded) and noise on
# stderr, then waits for stdin EOF.
PRINTER = f"""
import sys
def line(n):
    head, tail = {HEAD!r}, {TAIL!r}
    return (head + "a" * (n - len(head) - len(tail)) + tail + "\\n").encode()
n = int(sys.argv[1])
sys.stderr.write("NOISE FROM THE SERVER\\n"); sys.stderr.flush()
sys.stdout.buffer.write(line(n) + line(n + 1)); sys.stdout.flush()
sys.stdin.read()
"""


def printer() -> ServerDef:
    return ServerDef("p", sys.executable, ("-c", PRINTER, str(MESSAGE_BYTES)), {})


def test_message_of_exactly_the_bound_passes_one_byte_more_ends_the_stream(
    capfd: pytest.CaptureFixture[str],
) -> None:
    async def go() -> None:
        async with open_stdio(printer(), {}, None) as (_process, read, _write):
            first = await read.receive()
            assert isinstance(first, SessionMessage)
            params = first.message.params  # type: ignore[union-attr]
            assert params is not None
            assert len(params["p"]) == MESSAGE_BYTES - len(HEAD) - len(TAIL)
            with pytest.raises(anyio.EndOfStream):
                await read.receive()

    anyio.run(go)
    assert "NOISE" not in capfd.readouterr().err


def test_stop_closes_stdin_first_then_kills_a_server_that_ignores_it() -> None:
    ignores_eof = ServerDef("s", sys.executable, ("-c", "import time; time.sleep(60)"), {})
    polite = ServerDef("p", sys.executable, ("-c", "import sys; sys.stdin.read()"), {})

    async def go(server: ServerDef) -> tuple[int, float]:
        async with open_stdio(server, {}, None) as (process, _read, _write):
            pid = process.pid
            began = time.monotonic()
        return pid, time.monotonic() - began

    pid, polite_s = anyio.run(go, polite)
    assert not alive(pid) and polite_s < STDIN_GRACE_S
    pid, stubborn_s = anyio.run(go, ignores_eof)
    assert gone_within(pid, 1.0)
    assert STDIN_GRACE_S <= stubborn_s < STDIN_GRACE_S + TERM_GRACE_S + 1.0
