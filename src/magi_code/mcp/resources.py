"""The resources of a connected MCP server, as two tools of the model's: `list_resources`
and `read_resource`, named like the server's own tools (`mcp__<server>__list_resources`).

Rules:
- Offered for each server that declared the resources capability (tool.mcp_tools); a server
  tool of the same name comes first and keeps it.
- Both are reads (access "read" of the workspace, as a `readOnlyHint` tool): the rules naming
  them decide first, `default_read` after them.
- `list_resources` gives one line per resource (URI, name, type, description), at most
  RESOURCES_PER_SERVER; `read_resource` gives a resource's contents as a tool result's
  embedded resources are given (results.py): text under its URI, image blobs as images,
  other blobs described by type and size. Failures say why in words of our own.
"""

from typing import TYPE_CHECKING, Any

import anyio
import mcp_types

from magi_code.mcp.calls import awaited, failed
from magi_code.mcp.limits import RESOURCES_PER_SERVER
from magi_code.mcp.names import tool_name
from magi_code.mcp.results import contents_text, cut, resource_line
from magi_code.providers.base import ImagePart
from magi_code.records import record
from magi_code.tools.args import load_object, text
from magi_code.tools.base import Access, Tool, ToolContext, ToolOutcome
from magi_code.tools.summaries import safe_summary

if TYPE_CHECKING:
    from magi_code.mcp.manager import McpManager


def resource_tools(manager: "McpManager", server: str) -> list[Tool[Any]]:
    return [ListResources(manager, server), ReadResource(manager, server)]


@record
class NoArgs:
    pass


@record
class ReadArgs:
    uri: str


class ListResources:
    def __init__(self, manager: "McpManager", server: str) -> None:
        self.manager, self.server = manager, server
        self.name = tool_name(server, "list_resources")
        self.description = (
            f"List the resources of the MCP server {server}: each one's URI, name, type and "
            f"description (at most {RESOURCES_PER_SERVER}). Read one with read_resource."
        )
        self.parameters: dict[str, object] = {"type": "object", "properties": {}}

    def parse(self, arguments: str) -> NoArgs:
        load_object(arguments, set(), set())
        return NoArgs()

    def access(self, args: NoArgs, ctx: ToolContext) -> Access:
        return Access("read", (ctx.workspace,))

    def describe(self, args: NoArgs, ctx: ToolContext) -> str:
        return safe_summary(f"mcp: {self.server} resources")

    async def run(self, args: NoArgs, ctx: ToolContext) -> ToolOutcome:
        label = f"{self.server} resources"
        try:
            future = self.manager.submit_list_resources(self.server)
        except RuntimeError:
            return failed(label, "no_result")
        listed = await awaited(future)
        if isinstance(listed, str):
            return failed(label, listed)
        lines = [resource_line("resource", resource) for resource in listed]
        said = "\n".join(lines) if lines else "The server lists no resources."
        return ToolOutcome(True, cut(said), f"{label}: {len(lines)} listed")


class ReadResource:
    def __init__(self, manager: "McpManager", server: str) -> None:
        self.manager, self.server = manager, server
        self.name = tool_name(server, "read_resource")
        self.description = (
            f"Read one resource of the MCP server {server} by its URI (from list_resources, "
            "or a resource link in a result)."
        )
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "the resource's URI"}},
            "required": ["uri"],
        }

    def parse(self, arguments: str) -> ReadArgs:
        return ReadArgs(text(load_object(arguments, {"uri"}, set()), "uri"))

    def access(self, args: ReadArgs, ctx: ToolContext) -> Access:
        return Access("read", (ctx.workspace,))

    def describe(self, args: ReadArgs, ctx: ToolContext) -> str:
        return safe_summary(f"mcp: {self.server} read resource")

    async def run(self, args: ReadArgs, ctx: ToolContext) -> ToolOutcome:
        label = f"{self.server} read resource"
        try:
            future = self.manager.submit_read_resource(self.server, args.uri)
        except RuntimeError:
            return failed(label, "no_result")
        result = await awaited(future)
        if isinstance(result, str):
            return failed(label, result)
        return await anyio.to_thread.run_sync(_outcome, label, result)


def _outcome(label: str, result: mcp_types.ReadResourceResult) -> ToolOutcome:
    images: list[ImagePart] = []
    parts = [contents_text(contents, images) for contents in result.contents]
    said = "\n".join(parts) if parts else "The resource has no contents."
    return ToolOutcome(True, cut(said), f"{label} completed", images=tuple(images))
