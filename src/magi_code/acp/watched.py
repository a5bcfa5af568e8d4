"""The tool calls of one ACP prompt as the runner makes them: each tool of the turn's setup
wrapped to note its call's arguments, what it touches, its output and the client terminal it
ran in, so its ACP tool call can show them. The runner is not changed: the wrappers pass
every call through.

A call is noted when its arguments are parsed and found again by its parsed arguments (the
same object through access and run), so a `code` program's own calls never overwrite the
`code` call's notes.
"""

from pathlib import Path
from typing import Any

from magi_code.records import field, record
from magi_code.tools.base import Access, Tool, ToolContext, ToolOutcome


@record(frozen=False)
class Call:
    tool: str
    arguments: str  # the model's JSON text
    paths: tuple[Path, ...] = ()  # what it reads or writes, resolved against the workspace
    output: str | None = None  # what the model is told; None until it ran
    terminal: str | None = None  # the client terminal it ran in


@record(frozen=False)
class Calls:
    """The prompt's calls, by their parsed arguments; `last` is the one parsed last."""

    by_args: dict[int, tuple[Any, Call]] = field(default_factory=dict)
    last: Call | None = None

    def parsed(self, tool: str, arguments: str, args: Any) -> None:
        call = self.last = Call(tool, arguments)
        self.by_args[id(args)] = (args, call)  # the args are held: their id stays theirs

    def of(self, args: Any) -> Call | None:
        held = self.by_args.get(id(args))
        return held[1] if held is not None else None


class Watched:
    """A tool as the runner sees it, noting its calls on `calls`."""

    def __init__(self, inner: Tool[Any], calls: Calls) -> None:
        self.inner, self.calls = inner, calls
        self.name = inner.name
        self.description = inner.description
        self.parameters = inner.parameters

    def parse(self, arguments: str) -> Any:
        args = self.inner.parse(arguments)
        self.calls.parsed(self.name, arguments, args)
        return args

    def access(self, args: Any, ctx: ToolContext) -> Access:
        access = self.inner.access(args, ctx)
        call = self.calls.of(args)
        if call is not None:
            call.paths = tuple(access.paths)
        return access

    def describe(self, args: Any, ctx: ToolContext) -> str:
        return self.inner.describe(args, ctx)

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutcome:
        outcome = await self.inner.run(args, ctx)
        call = self.calls.of(args)
        if call is not None:
            call.output = outcome.output
        return outcome
