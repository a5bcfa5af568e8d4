"""How our MCP tools await a request made on the manager's loop (and a plain thread waits for
one), and what the model is told when one gives no result: words of our own (`FAILURES`),
never the server's."""

import concurrent.futures
from typing import TypeVar

import anyio

from magi_code.mcp.errors import McpCallFailure
from magi_code.mcp.limits import MESSAGE_BYTES
from magi_code.tools.base import ToolOutcome

ResultT = TypeVar("ResultT")

FAILURES: dict[McpCallFailure, str] = {
    "no_result": "the MCP server gave no result",
    "too_large": f"the MCP server's answer is over {MESSAGE_BYTES} bytes; ask it for less",
    "compressed": "the MCP server sent a compressed answer; only uncompressed ones are taken",
    "malformed": "the MCP server's HTTP answer was malformed; the next call uses a new connection",
    "unreachable": "the connection to the MCP server failed; the next call tries again",
    "session_lost": "the MCP server lost our session and no new one opened; the next call tries "
    "again",
    "stopped": "the MCP server stopped during the call; the next call starts it again",
    "failed": "the MCP server stopped and could not be started again; it stays unavailable "
    "until the person reconnects it (/mcp reconnect) or restarts magi-code",
}


async def awaited(future: "concurrent.futures.Future[ResultT]") -> "ResultT | McpCallFailure":
    """The result of a task on the manager's loop, awaited from the caller's loop through a
    worker thread; cancelled there when the caller is cancelled."""
    try:
        return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
    except concurrent.futures.CancelledError:
        return "no_result"  # the manager closed under the call
    finally:
        future.cancel()  # a no-op once done; otherwise cancels the call on its loop


def waited(
    future: "concurrent.futures.Future[ResultT]", seconds: float
) -> "ResultT | McpCallFailure | None":
    """The result of a task on the manager's loop, waited for by a plain thread at most
    `seconds`; None when that passed (the task is then cancelled)."""
    try:
        return future.result(timeout=seconds)
    except concurrent.futures.TimeoutError:
        future.cancel()
        return None
    except concurrent.futures.CancelledError:
        return "no_result"  # the manager closed under it


def failed(label: str, failure: McpCallFailure) -> ToolOutcome:
    return ToolOutcome(False, f"error: {FAILURES[failure]}", f"{label} failed")
