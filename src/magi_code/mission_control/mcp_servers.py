"""What Mission Control says about the MCP servers: `/mcp`'s list (each server's state, why
it failed or is restarting, its tool and prompt counts, the prompt commands) and `/status`'s
line. Pure."""

from collections.abc import Iterable

from magi_code.mcp.states import ServerState

NAME_CHARS = 16  # the name column of `/mcp`


def listing(states: list[ServerState], usages: Iterable[str]) -> str:
    """`/mcp`: every configured server, then the prompt commands' usages."""
    if not states:
        return "No MCP servers are configured: `magi-code mcp add NAME -- COMMAND` adds one."
    lines = ["MCP servers:"]
    for state in states:
        counts = ""
        if state.state in ("connected", "restarting"):
            counts = f"  {state.tools} tools, {state.prompts} prompts"
        lines.append(f"  {state.name:<{NAME_CHARS}} {state.state}{counts}")
        if state.why:
            lines.append("    " + state.why.replace("\n", "\n    "))
    prompts = sorted(usages)
    if prompts:
        lines += ["Prompt commands:", *(f"  {usage}" for usage in prompts)]
    lines.append("/mcp reconnect NAME connects a server again.")
    return "\n".join(lines)


def status_line(states: list[ServerState]) -> str:
    """`/status`: each server and its state, on one line."""
    said = ", ".join(f"{state.name} ({state.state})" for state in states) or "none"
    return said + (" - /mcp says why" if any(state.why for state in states) else "")
