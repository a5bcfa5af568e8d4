"""list_dir and glob: names only, never file contents; bounded counts, sorted output.

Directories are shown with a trailing `/`, symlinks with a trailing `@`. glob patterns are
relative to the workspace and may not climb out of it (`..` or absolute patterns are refused
at parse time), so the workspace read they declare is the whole of what they touch. Both only
read, so their threads are abandoned on cancellation.
"""

import os
from pathlib import Path

import anyio
import anyio.from_thread

from magi_code.records import record
from magi_code.tools import args as A
from magi_code.tools.base import Access, ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.files import failed
from magi_code.tools.globs import GlobError, compile_glob
from magi_code.tools.limits import GLOB_RESULTS, LIST_ENTRIES, TEXT_BYTES
from magi_code.tools.paths import display, os_error_code, resolve
from magi_code.tools.summaries import safe_summary
from magi_code.tools.text import Lines
from magi_code.tools.walk import Walk


def _mark(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return "@"
    return "/" if entry.is_dir(follow_symlinks=False) else ""


@record
class ListArgs:
    path: str


class ListDir:
    name = "list_dir"
    description = "List a directory's entries (folders end with /, symlinks with @)."

    def __init__(self) -> None:
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Directory; default '.'"}},
            "additionalProperties": False,
        }

    def parse(self, arguments: str) -> ListArgs:
        f = A.load_object(arguments, set(), {"path"})
        return ListArgs(A.text(f, "path", "."))

    def access(self, args: ListArgs, ctx: ToolContext) -> Access:
        return Access("read", (resolve(ctx, args.path),))

    def describe(self, args: ListArgs, ctx: ToolContext) -> str:
        return safe_summary(f"list {display(ctx, resolve(ctx, args.path))}")

    async def run(self, args: ListArgs, ctx: ToolContext) -> ToolOutcome:
        path = resolve(ctx, args.path)
        shown = display(ctx, path)
        try:
            names = await anyio.to_thread.run_sync(_list, path, abandon_on_cancel=True)
        except OSError as e:
            return failed(os_error_code(e), shown, f"list {shown}")
        out = Lines(TEXT_BYTES)
        for name in names[:LIST_ENTRIES]:
            out.add(name)
        out.dropped += max(0, len(names) - LIST_ENTRIES)
        text = out.render("entries") if names else "(empty directory)"
        return ToolOutcome(ok=True, output=text, summary=f"list {shown} ({len(names)} entries)")


def _list(path: Path) -> list[str]:
    with os.scandir(path) as it:
        return sorted(entry.name + _mark(entry) for entry in it)


@record
class GlobArgs:
    pattern: str


class Glob:
    name = "glob"
    description = (
        "Find paths in the workspace matching a glob such as 'src/**/*.py' "
        "('**' spans folders; '*' and '?' stay within one name). .git is skipped."
    )

    def __init__(self) -> None:
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Relative to the workspace."}
            },
            "required": ["pattern"],
            "additionalProperties": False,
        }

    def parse(self, arguments: str) -> GlobArgs:
        f = A.load_object(arguments, {"pattern"}, set())
        pattern = A.text(f, "pattern")
        if pattern.startswith("/"):
            raise ToolInputError("invalid_arguments")
        try:
            compile_glob(pattern)
        except GlobError:
            raise ToolInputError("invalid_arguments") from None
        return GlobArgs(pattern)

    def access(self, args: GlobArgs, ctx: ToolContext) -> Access:
        return Access("read", (ctx.workspace,))

    def describe(self, args: GlobArgs, ctx: ToolContext) -> str:
        return safe_summary(f"glob {args.pattern}")

    async def run(self, args: GlobArgs, ctx: ToolContext) -> ToolOutcome:
        matches, walk = await anyio.to_thread.run_sync(
            _glob, ctx.workspace, args.pattern, abandon_on_cancel=True
        )
        out = Lines(TEXT_BYTES)
        for rel in sorted(matches)[:GLOB_RESULTS]:
            out.add(rel)
        text = out.render("paths") if matches else "(no matches)"
        if len(matches) > GLOB_RESULTS:
            text += f"\n[stopped after {GLOB_RESULTS} matches]"
        if walk.truncated:
            text += f"\n[search stopped after {walk.visited} entries]"
        summary = f"glob {args.pattern} ({min(len(matches), GLOB_RESULTS)} matches)"
        return ToolOutcome(ok=True, output=text, summary=summary)


def _glob(root: Path, pattern: str) -> tuple[list[str], Walk]:
    """Matches (one over GLOB_RESULTS signals a cut) and the walk that found them."""
    glob = compile_glob(pattern)
    walk = Walk(root, anyio.from_thread.check_cancelled)
    found: list[str] = []
    for rel, entry in walk.entries():
        if glob.matches(rel):
            found.append(rel + _mark(entry))
            if len(found) > GLOB_RESULTS:
                break
    return found, walk
