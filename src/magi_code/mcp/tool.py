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
- While a call runs, what its server says (live.py) reaches the face: its progress as a
  `ToolProgress` detail (at most one per PROGRESS_INTERVAL_S, the newest), its questions
  through the face's `elicit` (elicitation.py decides the answer). Why a question was
  declined starts the result, in brackets.
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
from magi_code.mcp.limits import DESCRIPTION_CHARS, PROGRESS_INTERVAL_S
from magi_code.mcp.live import LiveCall, Report
from magi_code.mcp.names import tool_name
from magi_code.mcp.resources import resource_tools
from magi_code.mcp.results import view
from magi_code.records import record, replace
from magi_code.tools.args import load_any_object
from magi_code.tools.base import Access, Tool, ToolContext, ToolOutcome
from magi_code.tools.progress import ToolProgress
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
        live = LiveCall(answers=ctx.elicit is not None)
        try:
            future = self.manager.submit(self.server, self.tool, args.arguments, live)
        except RuntimeError:
            return outcome(label, "no_result")
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self.follow, live, ctx)
                result = await awaited(future)
                group.cancel_scope.cancel()
            await self.show(live.latest(), ctx)  # the last report, held back by the interval
        finally:
            live.end()
        if isinstance(result, str):
            return outcome(label, result)
        told = await anyio.to_thread.run_sync(outcome, label, result, live.progress.note())
        return replace(told, output=live.told() + told.output) if live.notes else told

    async def follow(self, live: LiveCall, ctx: ToolContext) -> None:
        """Until cancelled: put the server's questions to the person (the face's `elicit`)
        and show its progress (the face's `detail`), at most once per PROGRESS_INTERVAL_S."""
        while True:
            await live.changes()
            for question in live.questions():
                if ctx.elicit is not None and not question.future.done():
                    live.answer(question, await ctx.elicit(question.form))
            if await self.show(live.latest(), ctx):
                await anyio.sleep(PROGRESS_INTERVAL_S)

    async def show(self, report: Report | None, ctx: ToolContext) -> bool:
        """Show `report` on the face, if there is one and the face takes details."""
        if report is None or ctx.detail is None:
            return False
        progress = ToolProgress(
            ctx.activity_id, self.name, report.progress, report.total, report.message
        )
        await ctx.detail(progress)
        return True


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
