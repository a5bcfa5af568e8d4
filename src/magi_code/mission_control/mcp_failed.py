"""Mission Control's question when MCP servers failed to start: each named with why (the
manager's `failed`: its exit, the tail of its stderr, or its HTTP status), then "continue
without them / quit". Asked once, on the plain terminal, before the app starts, the way the
folder-trust question is (console.py); the servers that did start stay connected meanwhile."""

import sys
from collections.abc import Mapping

MCP_QUESTION = (
    "magi-code: {count} MCP server(s) failed to start:\n"
    "{failed}\n"
    "  [c] continue without {them}\n"
    "  [q] quit\n"
    "choice [c/Q]: "
)


def continue_without(failed: Mapping[str, str]) -> bool:
    """Ask whether to go on without the `failed` servers (name: why); False means quit."""
    if not failed:
        return True
    listed = "\n".join(
        f"  {name!r}: " + reason.replace("\n", "\n    ") for name, reason in failed.items()
    )
    them = "it" if len(failed) == 1 else "them"
    question = MCP_QUESTION.format(count=len(failed), failed=listed, them=them)
    print(question, end="", file=sys.stderr)
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("c", "continue")
