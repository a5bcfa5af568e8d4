"""McpTool: one tool of a connected MCP server, as a magi_code Tool; `mcp_tools`, the
manager's servers' tools as they are now.

Rules:
- Named `mcp__<server>__<tool>` (see `names`); description and input schema come from the
  server, the description bounded. Arguments must be one JSON object; the server checks them
  against its own schema.
- Access kind "shell": with no rule, the policy's `default_shell` (ask) decides, the strictest
  default, since an MCP server can do anything its process can. `command` stays None, so shell
  command patterns never match an MCP call; rules name these tools by `tool`. A tool the
  server annotates `readOnlyHint` is decided as a read of the workspace instead: the rules
  naming it still decide first, and the defaults for reads (`default_read`) after them.
- A tool whose calls must run as tasks (`execution.taskSupport: "required"`) is not offered:
  this client runs no tasks, so every call of it would fail.
- Summaries name the server and tool, never arguments or results; a call the server reported
  progress for ends with its last progress (numbers only, never the server's message).
- The call runs on the manager's loop; `run` awaits its raw result from the caller's loop
  through a worker thread, cancels it there when the caller is cancelled, and gives the
  model's view of it (`outcome`, results.py; images made in a worker thread). A call without a
  result says why in words of our own (calls.py), never the server's.
- Each server offering resources adds its `list_resources` and `read_resource` (resources.py).
"""

from typing import TYPE_CHECKING, Any

import anyio
import mcp_types

from magi_code.mcp.calls import awaited, failed
from magi_code.mcp.errors import McpCallFailure
from magi_code.mcp.limits import DESCRIPTION_CHARS
from magi_code.mcp.names import tool_name
from magi_code.mcp.progress import Progress
from magi_code.mcp.resources import resource_tools
from magi_code.mcp.results import view
from magi_code.records import record
from magi_code.tools.args import load_any_object
from magi_code.tools.base import Access, Tool, ToolContext, ToolOutcome
from magi_code.tools.summaries import safe_summary

if TYPE_CHECKING:
    from magi_code.mcp.manager import McpManager


def mcp_tools(manager: "McpManager") -> dict[str, Tool[Any]]:
    """Every listed tool of the manager's servers, by its name (the first of a name kept),
    then `list_resources` and `read_resource` of each server offering resources."""
    out: dict[str, Tool[Any]] = {}
    for server, listed in manager.listed():
        if listed.execution is not None and listed.execution.task_support == "required":
            continue
        tool = McpTool(manager, server, listed)
        out.setdefault(tool.name, tool)
    for server in manager.with_resources():
        for resource_tool in resource_tools(manager, server):
            out.setdefault(resource_tool.name, resource_tool)
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
        annotations = listed.annotations
        self.read_only = annotations is not None and annotations.read_only_hint is True

    def parse(self, arguments: str) -> McpArgs:
        return McpArgs(load_any_object(arguments))

    def access(self, args: McpArgs, ctx: ToolContext) -> Access:
        return Access("read", (ctx.workspace,)) if self.read_only else Access("shell")

    def describe(self, args: McpArgs, ctx: ToolContext) -> str:
        return safe_summary(f"mcp: {self.server}.{self.tool}")

    async def run(self, args: McpArgs, ctx: ToolContext) -> ToolOutcome:
        label = f"{self.server}.{self.tool}"
        progress = Progress()
        try:
            future = self.manager.submit(self.server, self.tool, args.arguments, progress)
        except RuntimeError:
            return outcome(label, "no_result")
        result = await awaited(future)
        if isinstance(result, str):
            return outcome(label, result)
        return await anyio.to_thread.run_sync(outcome, label, result, progress.note())


def outcome(
    label: str, result: mcp_types.CallToolResult | McpCallFailure, note: str = ""
) -> ToolOutcome:
    """The model's view of a call's result, or of why there is none (images decoded here:
    call it in a worker thread)."""
    if isinstance(result, str):
        return failed(label, result)
    text, images = view(result)
    ok = not result.is_error
    summary = f"{label} {'completed' if ok else 'failed'}{note}"
    return ToolOutcome(ok, text, summary, images=images)
