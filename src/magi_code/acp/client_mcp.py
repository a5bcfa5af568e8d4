"""The MCP servers an editor sends with `session/new` or `session/load` (ACP `mcpServers`).

The client is the person's editor: a stdio or HTTP server it sends is approved for that session
alone (its digest, never written to the settings) and connected for it by the same MCP client
as a global server (mcp/manager.py: same definition checks, same transports, same bounds);
its tools are decided by the same rules as every other tool. The person is told, in the
session, which servers their editor added. SSE and ACP-transport servers are refused (the
agent advertises HTTP only).
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from acp.schema import HttpMcpServer, McpServerStdio

from magi_code.mcp.definitions import parse_servers
from magi_code.mcp.errors import DefinitionError
from magi_code.redact import redact

if TYPE_CHECKING:
    from magi_code.mcp.manager import McpManager
    from magi_code.runner.startup import Admitted


class Refused(ValueError):
    """A server this agent does not connect (its transport, or its definition)."""


def tables(servers: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """The servers as settings tables (enabled), by name; Refused for another transport or a
    name sent twice."""
    found: dict[str, dict[str, Any]] = {}
    for server in servers:
        if isinstance(server, McpServerStdio):
            env = {variable.name: variable.value for variable in server.env}
            table: dict[str, Any] = {"command": server.command, "args": list(server.args)}
            if env:
                table["env"] = env
        elif isinstance(server, HttpMcpServer):
            table = {"url": server.url}
            if server.headers:
                table["headers"] = {header.name: header.value for header in server.headers}
        else:
            raise Refused
        if server.name in found:
            raise Refused
        found[server.name] = {"enabled": True, **table}
    return found


def connect(
    servers: Sequence[Any], admitted: "Admitted", *, elicits: bool = False
) -> "McpManager | None":
    """Connect the servers for one session (blocking: run it in a worker thread); None when
    there are none; `elicits`: the editor puts their questions to the person. Raises Refused,
    or the MCP client's startup errors."""
    given = tables(servers)
    if not given:
        return None
    from magi_code.mcp.manager import McpManager  # the MCP SDK: only when servers are given

    try:
        approved = {server.digest for server in parse_servers(given).values()}
    except DefinitionError:
        raise Refused from None
    return McpManager.start(
        given,
        approved=approved,
        env=admitted.env,
        cwd=admitted.cwd,
        home=admitted.paths.home,
        elicits=elicits,
    )


def told(servers: Sequence[Any]) -> str:
    """What the person is told: each server their editor added, with what it runs or where."""
    shown = []
    for server in servers:
        where = server.url if isinstance(server, HttpMcpServer) else server.command
        shown.append(f"{server.name} ({redact(where)})")
    return "MCP servers from your editor, for this session only: " + ", ".join(shown) + "\n"
