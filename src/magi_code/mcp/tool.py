"""McpTool: one tool of a connected MCP server, as a magi_code Tool; `mcp_tools`, the
manager's servers' tools as they are now.

Rules:
- Named `mcp__<server>__<tool>` (see `names`); description and input schema come from the
  server, the description bounded. Arguments must be one JSON object; the server checks them
  against its own schema.
- Access kind "shell": with no rule, the policy's `default_shell` (ask) decides, the strictest
  default, since an MCP server can do anything its process can. `command` stays None, so shell
  command patterns never match an MCP call; rules name these tools by `tool`.
- Summaries name the server and tool, never arguments or results.
- The call runs on the manager's loop; `run` awaits its raw result from the caller's loop
  through a worker thread, cancels it there when the caller is cancelled, and gives the
  model's view of it (`outcome`). A call without a result says why in words of our own
  (`FAILURES`), never the server's.
"""

import concurrent.futures
import json
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types

from magi_code.mcp.errors import McpCallFailure
from magi_code.mcp.limits import DESCRIPTION_CHARS, MESSAGE_BYTES
from magi_code.mcp.names import tool_name
from magi_code.records import record
from magi_code.tools.args import load_any_object
from magi_code.tools.base import Access, Tool, ToolContext, ToolOutcome
from magi_code.tools.summaries import safe_summary

if TYPE_CHECKING:
    from magi_code.mcp.manager import McpManager

FAILURES: dict[McpCallFailure, str] = {
    "no_result": "the MCP server gave no result",
    "too_large": f"the MCP server's answer is over {MESSAGE_BYTES} bytes; ask it for less",
    "compressed": "the MCP server sent a compressed answer; only uncompressed ones are taken",
    "malformed": "the MCP server's HTTP answer was malformed; the next call uses a new connection",
    "unreachable": "the connection to the MCP server failed; the next call tries again",
    "session_lost": "the MCP server lost our session and no new one opened; the next call tries "
    "again",
}


def mcp_tools(manager: "McpManager") -> dict[str, Tool[Any]]:
    """Every listed tool of the manager's servers, by its name (the first of a name kept)."""
    out: dict[str, Tool[Any]] = {}
    for server, listed in manager.listed():
        tool = McpTool(manager, server, listed)
        out.setdefault(tool.name, tool)
    return out


@record
class McpArgs:
    arguments: dict[str, Any]


class McpTool:
    def __init__(self, manager: "McpManager", server: str, listed: mcp_types.Tool) -> None:
        self.manager, self.server, self.tool = manager, server, listed.name
        self.name = tool_name(server, listed.name)
        self.description = (listed.description or f"MCP tool {listed.name} of {server}")[
            :DESCRIPTION_CHARS
        ]
        self.parameters: dict[str, object] = dict(listed.input_schema)

    def parse(self, arguments: str) -> McpArgs:
        return McpArgs(load_any_object(arguments))

    def access(self, args: McpArgs, ctx: ToolContext) -> Access:
        return Access("shell")

    def describe(self, args: McpArgs, ctx: ToolContext) -> str:
        return safe_summary(f"mcp: {self.server}.{self.tool}")

    async def run(self, args: McpArgs, ctx: ToolContext) -> ToolOutcome:
        label = f"{self.server}.{self.tool}"
        try:
            future = self.manager.submit(self.server, self.tool, args.arguments)
        except RuntimeError:
            return outcome(label, "no_result")
        try:
            result = await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        except concurrent.futures.CancelledError:
            result = "no_result"  # the manager closed under the call
        finally:
            future.cancel()  # a no-op once done; otherwise cancels the call on its loop
        return outcome(label, result)


def outcome(label: str, result: mcp_types.CallToolResult | McpCallFailure) -> ToolOutcome:
    """The model's view of a call's result, or of why there is none."""
    if isinstance(result, str):
        return ToolOutcome(False, f"error: {FAILURES[result]}", f"{label} failed")
    parts = [
        block.text if isinstance(block, mcp_types.TextContent) else f"[{block.type} content]"
        for block in result.content
    ]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    ok = not result.is_error
    return ToolOutcome(ok, "\n".join(parts), f"{label} {'completed' if ok else 'failed'}")
