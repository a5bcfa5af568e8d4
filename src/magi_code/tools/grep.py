"""grep: a regex over the text files under one path, as `path:line:text` lines.

With `rg` on the tool environment's PATH, ripgrep searches (tools/rg.py says when, and how
its bounds are kept); otherwise, or when rg gives way, the search runs in a Python child
process (`magi_code.tools.search`, which says why) in its own session. Either child is bounded
by GREP_TIMEOUT_S, and on timeout or cancellation its group is killed. Both skip the same
files (the ignore files, .git, binary and oversized files; walk.py) in the same order. The
Python search's results are bounded there (GREP_MATCHES, TEXT_BYTES, LINE_READ_BYTES per
line, GREP_FILE_BYTES per file, WALK_ENTRIES) and its reply is capped at GREP_REPLY_BYTES.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio

import magi_code
from magi_code.records import asdict, record, replace
from magi_code.tools import args as A
from magi_code.tools import rg
from magi_code.tools.base import Access, ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.files import failed
from magi_code.tools.globs import CLIMBS, EMPTY, GlobError, compile_glob
from magi_code.tools.limits import (
    GREP_KILL_GRACE_S,
    GREP_MATCHES,
    GREP_REPLY_BYTES,
    GREP_TIMEOUT_S,
)
from magi_code.tools.paths import display, resolve
from magi_code.tools.processes import kill_group
from magi_code.tools.search import Request, Result
from magi_code.tools.summaries import safe_summary
from magi_code.tools.walk import GIT_ENV


@record
class GrepArgs:
    pattern: str
    path: str
    include: str | None  # glob on names (no '/') or on paths relative to `path`
    ignore_case: bool


class Grep:
    name = "grep"
    description = (
        "Search file contents with a Python regular expression. Prints path:line:text. "
        "`path` (default '.') may be a file or folder; `include` filters file names "
        "with a glob such as '*.py' or '*.{ts,tsx}'. Files named by .gitignore, .ignore or "
        "git's global excludes are skipped (give an ignored folder as `path` to search it), "
        "as are binary files and .git."
    )

    def __init__(self) -> None:
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"},
                "include": {"type": "string"},
                "ignore_case": {"type": "boolean"},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        }

    def parse(self, arguments: str) -> GrepArgs:
        f = A.load_object(arguments, {"pattern"}, {"path", "include", "ignore_case"})
        include = A.text(f, "include") if "include" in f else None
        if include is not None:
            try:
                compile_glob(include)
            except GlobError as error:
                if error.problem in (EMPTY, CLIMBS):
                    raise ToolInputError("invalid_arguments") from None
        return GrepArgs(
            A.text(f, "pattern", nul=True),
            A.text(f, "path", "."),
            include,
            A.flag(f, "ignore_case"),
        )

    def access(self, args: GrepArgs, ctx: ToolContext) -> Access:
        return Access("read", (resolve(ctx, args.path),))

    def describe(self, args: GrepArgs, ctx: ToolContext) -> str:
        where = display(ctx, resolve(ctx, args.path))
        return safe_summary(f"grep {args.pattern} in {where}")

    async def run(self, args: GrepArgs, ctx: ToolContext) -> ToolOutcome:
        root = resolve(ctx, args.path)
        shown = display(ctx, root)
        summary = f"grep in {shown}"
        try:
            re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
        except (re.error, RecursionError, OverflowError):
            return failed("bad_pattern", "the regular expression does not compile", summary)
        if args.include is not None:
            try:
                compile_glob(args.include)
            except GlobError as error:
                return failed("glob_invalid", f"include: {error.problem}", summary)
        git_env = {name: ctx.env[name] for name in GIT_ENV if name in ctx.env}
        request = Request(
            str(root), shown, args.pattern, args.ignore_case, args.include, git_env=git_env
        )
        if ctx.protected is not None:  # never the store or the sessions, nor a link to them
            protected = ctx.protected
            request = replace(
                request,
                skip=[str(p) for p in protected.secrets],
                linked=[list(i) for i in protected.identities("read")],
            )
        reply = await _search(request, ctx)
        if reply is None:
            why = f"no result within {GREP_TIMEOUT_S:g} s (or the search failed); narrow it"
            return failed("search_failed", why, summary)
        if reply.error is not None:
            return failed(reply.error, shown, summary)
        count = min(reply.matches, GREP_MATCHES)
        return ToolOutcome(ok=True, output=_render(reply), summary=f"{summary} ({count})")


async def _search(request: Request, ctx: ToolContext) -> Result | None:
    """rg's result when it can search, else the Python search's; None when the search timed
    out or failed."""
    found = rg.find(ctx.env)
    if (
        found is not None
        and rg.usable(request)
        and await anyio.to_thread.run_sync(os.path.isdir, request.root)
    ):
        reply = await rg.search(found, request, ctx.env)
        if isinstance(reply, Result):
            return reply
        if reply == rg.TIMED_OUT:
            return None
    return await _run_search(request)  # no rg, or it gave way


async def _run_search(request: Request) -> Result | None:
    """The child's result, or None when it timed out, failed or answered out of bounds."""
    env = dict(os.environ)
    package_root = str(Path(magi_code.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    try:
        with anyio.CancelScope(shield=True):  # a cancellation inside the spawn would orphan it
            process = await anyio.open_process(
                [sys.executable, "-m", "magi_code.tools.search"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
    except OSError:
        return None
    reply = bytearray()
    try:
        with anyio.move_on_after(GREP_TIMEOUT_S):
            assert process.stdin is not None and process.stdout is not None
            await process.stdin.send(json.dumps(asdict(request)).encode())
            await process.stdin.aclose()
            async for chunk in process.stdout:
                reply += chunk
                if len(reply) > GREP_REPLY_BYTES:
                    return None
            await process.wait()
    finally:
        with anyio.CancelScope(shield=True):
            await kill_group(process, GREP_KILL_GRACE_S)
            await process.aclose()
    if process.returncode != 0:
        return None
    try:
        return Result(**json.loads(reply))
    except (ValueError, TypeError):
        return None


def _render(found: Result) -> str:
    text = "\n".join(found.lines) if found.lines else "(no matches)"
    if found.dropped:
        text += f"\n[... {found.dropped} more matches not shown: output limit reached]"
    if found.matches > GREP_MATCHES:
        text += f"\n[stopped after {GREP_MATCHES} matches]"
    if found.truncated:
        text += f"\n[search stopped after {found.visited} entries]"
    if found.output_cut:
        text += "\n[search stopped: ripgrep's output passed its bound; narrow the search]"
    if found.skipped:
        text += f"\n[{found.skipped} binary, oversized or unreadable files skipped]"
    return text
