"""MCP prompts as slash commands: `/mcp__SERVER__PROMPT ARGS` (as Claude Code names them, and
as our MCP tools are named: names.py) gets the prompt (prompts/get) with its arguments and
sends its messages as the person's prompt.

Rules:
- Arguments: the words as a shell splits them (quotes keep spaces); `NAME=VALUE` gives the
  argument NAME, any other word the next argument not given yet, in the prompt's order. A
  missing required argument, a word too many or an unclosed quote refuses the command with
  its usage (NotSent), and nothing is sent.
- The messages become one prompt: their blocks as a tool result's are (results.py), images as
  images; an assistant message is marked as one. The text is cut at ATTACHED_BYTES, saying so.
- Parsing is pure; `expand` waits for the server (a worker thread's, or exec's) at most
  ATTACH_S.
"""

import shlex
from typing import TYPE_CHECKING

import mcp_types

from magi_code.mcp.calls import FAILURES, waited
from magi_code.mcp.errors import NotSent
from magi_code.mcp.limits import ATTACH_S, ATTACHED_BYTES
from magi_code.mcp.names import tool_name
from magi_code.mcp.results import block_text, cut
from magi_code.providers.base import ImagePart
from magi_code.records import record
from magi_code.tools.summaries import one_line

if TYPE_CHECKING:
    from magi_code.mcp.manager import McpManager

DESCRIPTION_CHARS = 120  # of a prompt's description in a command list
ASSISTANT_MARK = "[the prompt's assistant message]"


@record
class PromptCommand:
    server: str
    prompt: mcp_types.Prompt

    @property
    def name(self) -> str:
        return tool_name(self.server, self.prompt.name)

    def arguments(self) -> str:
        """`city [state]`: the arguments in order, optional ones in brackets."""
        declared = self.prompt.arguments or []
        return " ".join(a.name if a.required else f"[{a.name}]" for a in declared)

    def usage(self) -> str:
        return f"/{self.name} {self.arguments()}".rstrip()

    def description(self) -> str:
        said = one_line(self.prompt.description or self.prompt.title or self.prompt.name)
        takes = f"; arguments: {self.arguments()}" if self.prompt.arguments else ""
        return f"{said[:DESCRIPTION_CHARS]} (MCP server {self.server}{takes})"


def prompt_commands(listed: list[tuple[str, mcp_types.Prompt]]) -> dict[str, PromptCommand]:
    """The connected servers' prompts (manager.prompts()) by command name."""
    commands = [PromptCommand(server, prompt) for server, prompt in listed]
    return {command.name: command for command in commands}


def arguments(command: PromptCommand, text: str) -> dict[str, str]:
    """The prompt's arguments from what follows the command; NotSent says what is wrong."""
    declared = command.prompt.arguments or []
    names = [argument.name for argument in declared]
    how = f"Usage: {command.usage()} (or NAME=VALUE)"
    try:
        words = shlex.split(text)
    except ValueError:
        raise NotSent(f"/{command.name}: a quote is not closed. {how}") from None
    given: dict[str, str] = {}
    positional: list[str] = []
    for word in words:
        key, equals, value = word.partition("=")
        if equals and key in names:
            given[key] = value
        else:
            positional.append(word)
    free = [name for name in names if name not in given]
    if len(positional) > len(free):
        extra = positional[len(free)]
        raise NotSent(f"/{command.name}: {extra!r} is one argument too many. {how}")
    given.update(zip(free, positional, strict=False))
    missing = [a.name for a in declared if a.required and a.name not in given]
    if missing:
        raise NotSent(f"/{command.name} needs {', '.join(missing)}. {how}")
    return given


def messages_text(result: mcp_types.GetPromptResult) -> tuple[str, tuple[ImagePart, ...]]:
    """The prompt's messages as one prompt's text, and its images."""
    images: list[ImagePart] = []
    parts = []
    for message in result.messages:
        said = block_text(message.content, images)
        parts.append(said if message.role == "user" else f"{ASSISTANT_MARK}\n{said}")
    return cut("\n\n".join(parts), ATTACHED_BYTES, "prompt"), tuple(images)


def expand(
    manager: "McpManager", command: PromptCommand, text: str
) -> tuple[str, tuple[ImagePart, ...]]:
    """The prompt `/NAME text` sends, got from its server; NotSent says why there is none."""
    given = arguments(command, text)
    server = command.server
    if server not in manager.connections:
        raise NotSent(f"The MCP server {server} is not connected: /mcp says why.")
    try:
        future = manager.submit_get_prompt(server, command.prompt.name, given)
    except RuntimeError:
        raise NotSent("The MCP servers are shutting down.") from None
    result = waited(future, ATTACH_S)
    if result is None:
        raise NotSent(f"/{command.name}: the MCP server {server} did not answer in {ATTACH_S:g} s.")
    if isinstance(result, str):
        raise NotSent(f"/{command.name} could not be run: {FAILURES[result]}.")
    if not isinstance(result, mcp_types.GetPromptResult):
        raise NotSent(f"/{command.name}: the server asks for more input, which is not supported.")
    if not result.messages:
        raise NotSent(f"/{command.name}: the MCP server {server} gave no messages.")
    return messages_text(result)
