"""What a person is told of each enabled MCP server now: `connected`, `restarting` (a stdio
server that stopped and is started again by its next call, or an HTTP session being opened
again), `connecting`, or `failed` with why; with its tool and prompt counts. Read from the
manager's connection records, never from the server: pure."""

from typing import TYPE_CHECKING, Literal

from magi_code.mcp.limits import RESTARTS
from magi_code.records import record

if TYPE_CHECKING:
    from magi_code.mcp.manager import Connection

State = Literal["connected", "connecting", "restarting", "failed", "disabled"]


@record
class ServerState:
    name: str
    state: State
    why: str = ""  # for `failed` and `restarting`: in a person's words
    tools: int = 0
    prompts: int = 0


def state_of(name: str, connection: "Connection") -> ServerState:
    tools, prompts = len(connection.tools), len(connection.prompts)
    stdio = connection.server.url is None
    process = connection.process
    ended = stdio and process is not None and process.returncode is not None
    used_up = connection.restarts >= RESTARTS
    if connection.failed or connection.done.is_set() or (ended and used_up):
        stopped = f"it stopped, and its {RESTARTS} restarts are used up" if used_up else None
        why = connection.failure or stopped or "it stopped and could not be started again"
        return ServerState(name, "failed", why)
    if not connection.ready.is_set():
        return ServerState(name, "connecting")
    if ended:
        left = RESTARTS - connection.restarts
        why = f"it stopped; its next call starts it again ({left} of {RESTARTS} restarts left)"
        return ServerState(name, "restarting", why, tools, prompts)
    if connection.session is None:
        why = "its session is being opened again" if not stdio else "it is being started again"
        return ServerState(name, "restarting", why, tools, prompts)
    return ServerState(name, "connected", "", tools, prompts)
