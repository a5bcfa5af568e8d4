"""A tiny real MCP stdio server for tests: `python echo_server.py MODE PIDFILE [DELAY]`.

Modes:
- ok: tools `echo(text)` (returns the text), `repeat(text, times)`, `fail()` (an error
  result), `nap(seconds)` (sleeps, then returns "awake") and `die()` (the server exits without
  answering), `burst(count)` (reports progress `count` times at once, answers half a second
  later) and `ask(question)` (elicits a name, whether or not the client declared
  elicitation, and returns the answer).
- exit-init: reads the initialize request, waits DELAY seconds, exits 3 without answering.
- hang: never reads or answers; ignores stdin EOF (SIGTERM ends it).
- stubborn: like ok, but ignores SIGTERM and stdin EOF, so only SIGKILL ends it.
With ECHO_INSTRUCTIONS=N in its environment, the server's instructions are N letters `i`.
Every mode writes its pid to PIDFILE first. Imports stay inside the modes that need them.
"""

import os
import sys
import time


def main() -> None:
    mode, pidfile = sys.argv[1], sys.argv[2]
    delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    with open(pidfile + ".tmp", "w") as handle:
        handle.write(str(os.getpid()))
    os.replace(pidfile + ".tmp", pidfile)
    if mode == "exit-init":
        sys.stdin.buffer.readline()
        time.sleep(delay)
        os._exit(3)
    if mode == "hang":
        while True:
            time.sleep(60)
    if mode == "stubborn":
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    serve()
    if mode == "stubborn":
        while True:
            time.sleep(60)


def serve() -> None:
    from mcp.server.mcpserver import Context, MCPServer

    size = int(os.environ.get("ECHO_INSTRUCTIONS", "0"))
    server = MCPServer("echo", instructions="i" * size or None)

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.tool()
    def repeat(text: str, times: int) -> str:
        """Return the text, `times` times over."""
        return text * times

    @server.tool()
    def fail() -> str:
        """Always fails."""
        raise ValueError("this tool always fails")

    @server.tool()
    async def nap(seconds: float) -> str:
        """Sleep, then answer."""
        import anyio

        await anyio.sleep(seconds)
        return "awake"

    @server.tool()
    def die() -> str:
        """Exit the server at once."""
        os._exit(1)

    @server.tool()
    async def burst(count: int, ctx: Context) -> str:
        """Report progress `count` times at once, then answer half a second later."""
        import anyio

        for step in range(1, count + 1):
            await ctx.report_progress(step, count, f"step {step}")
        await anyio.sleep(0.5)
        return "burst"

    @server.tool()
    async def ask(question: str, ctx: Context) -> str:
        """Ask the person for a name (whether or not the client declared elicitation)."""
        schema = {
            "type": "object",
            "properties": {"name": {"type": "string", "title": "Name"}},
            "required": ["name"],
        }
        answer = await ctx.session.elicit_form(question, schema, ctx.request_id)
        return f"{answer.action}: {answer.content}"

    server.run("stdio")


if __name__ == "__main__":
    main()
