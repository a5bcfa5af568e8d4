"""A real MCP stdio server that fails in the ways a person meets: `python fragile_server.py
MODE FOLDER`. Each start appends its pid to FOLDER/starts.

Modes:
- fail: prints two lines to stderr (one holding a secret-looking key) and exits 1 at once.
- chatty-fail: prints 100 numbered lines to stderr, then exits 1 at once.
- fragile: tools `echo(text)` and `answer_then_die()` (answers, then SIGKILLs itself); every
  start works.
- once: as fragile on its first start; every later start fails as `fail` does.
- slow: prints one line to stderr, then sleeps a minute without answering.
"""

import os
import signal
import sys
import threading
import time
from pathlib import Path


def fail() -> None:
    print("loading the index", file=sys.stderr)
    print("fatal: API_KEY=sk-abcdefghijklmnopqrstuvwxyz0123456789 refused", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    mode, folder = sys.argv[1], Path(sys.argv[2])
    starts = folder / "starts"
    earlier = starts.read_text().split() if starts.exists() else []
    with starts.open("a") as handle:
        handle.write(f"{os.getpid()}\n")
    if mode == "fail" or (mode == "once" and earlier):
        fail()
    if mode == "slow":
        print("warming up the cache", file=sys.stderr, flush=True)
        time.sleep(60)
    if mode == "chatty-fail":
        for number in range(100):
            print(f"line {number}", file=sys.stderr)
        sys.exit(1)
    serve()


def serve() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("fragile")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.tool()
    def answer_then_die() -> str:
        """Answer, then end the server with SIGKILL."""
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGKILL)).start()
        return "goodbye"

    server.run("stdio")


if __name__ == "__main__":
    main()
