"""list_dir and glob: names only, never file contents; bounded counts, sorted output.

Directories are shown with a trailing `/`, symlinks with a trailing `@`. glob patterns are
relative to the workspace and may not climb out of it (`..` or absolute patterns are refused
at parse time), so the workspace read they declare is the whole of what they touch. Both only
read, so their threads are abandoned on cancellation.

glob walks as grep's Python search does (walk.py: what the ignore files name is skipped, and
`.git`), in the Python walk even when `rg` is on PATH: `rg --files` lists neither folders nor
symlinks, which glob shows. The walk starts at the folder the pattern names literally
(`.venv/lib/*.py` walks `.venv/lib`), so an ignored folder is searched when named, as a path
given to rg is. A pattern past a glob bound (globs.py) is refused with the reason, at run.
"""

import os
from pathlib import Path

import anyio
import anyio.from_thread

from magi_code.records import record
from magi_code.tools import args as A
from magi_code.tools.base import Access, ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.files import failed
from magi_code.tools.globs import CLIMBS, EMPTY, GlobError, compile_glob, literal_folders
from magi_code.tools.limits import GLOB_RESULTS, LIST_ENTRIES, TEXT_BYTES
from magi_code.tools.paths import display, os_error_code, resolve
from magi_code.tools.summaries import safe_summary
from magi_code.tools.text import Lines
from magi_code.tools.walk import GIT_ENV, Walk


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
        "Find paths in the workspace matching a glob such as 'src/**/*.py' or "
        "'src/**/*.{ts,tsx}' ('**' spans folders; '*' and '?' stay within one name; "
        "{a,b} is either). Paths named by .gitignore, .ignore or git's global excludes are "
        "skipped (start the pattern with an ignored folder to look in it), as is .git."
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
        except GlobError as error:
            if error.problem in (EMPTY, CLIMBS):
                raise ToolInputError("invalid_arguments") from None
        return GlobArgs(pattern)

    def access(self, args: GlobArgs, ctx: ToolContext) -> Access:
        return Access("read", (ctx.workspace,))

    def describe(self, args: GlobArgs, ctx: ToolContext) -> str:
        return safe_summary(f"glob {args.pattern}")

    async def run(self, args: GlobArgs, ctx: ToolContext) -> ToolOutcome:
        try:
            compile_glob(args.pattern)
        except GlobError as error:
            return failed("glob_invalid", error.problem, f"glob {args.pattern}")
        git_env = {name: ctx.env[name] for name in GIT_ENV if name in ctx.env}
        matches, walk = await anyio.to_thread.run_sync(
            _glob, ctx.workspace, args.pattern, git_env, abandon_on_cancel=True
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


def _glob(root: Path, pattern: str, git_env: dict[str, str]) -> tuple[list[str], Walk]:
    """Matches (one over GLOB_RESULTS signals a cut) and the walk that found them."""
    glob = compile_glob(pattern)
    prefix = "/".join(literal_folders(pattern))
    start = root / prefix if prefix else root
    if prefix and (os.path.realpath(start) != str(start) or not start.is_dir()):
        start, prefix = root, ""  # a link or no folder: walk from the top (links unfollowed)
    walk = Walk(start, anyio.from_thread.check_cancelled, git_env)
    found: list[str] = []
    for rel, entry in walk.entries():
        rel = f"{prefix}/{rel}" if prefix else rel
        if glob.matches(rel):
            found.append(rel + _mark(entry))
            if len(found) > GLOB_RESULTS:
                break
    return found, walk
