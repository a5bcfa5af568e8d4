"""grep: a Python regex over the text files under one path, as `path:line:text` lines.

Bounded everywhere: GREP_MATCHES matches, TEXT_BYTES of output, LINE_READ_BYTES of each line
seen by the regex (a pathological pattern meets a bounded subject), GREP_FILE_BYTES per file,
WALK_ENTRIES entries. Binary files (NUL in the head) and symlinked files met during a walk are
skipped: the walk must not read outside the path it declared. The worker thread checks
cancellation between files.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.from_thread

from magi_code.tools import args as A
from magi_code.tools.base import Access, ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.files import failed
from magi_code.tools.globs import GlobError, compile_glob
from magi_code.tools.limits import CANCEL_CHECK_LINES, GREP_FILE_BYTES, GREP_MATCHES, TEXT_BYTES
from magi_code.tools.paths import display, open_regular, os_error_code, resolve
from magi_code.tools.summaries import safe_summary
from magi_code.tools.text import Lines, cut_line, decode_line, is_binary, read_line
from magi_code.tools.walk import Walk


@dataclass(frozen=True)
class GrepArgs:
    pattern: str
    path: str
    include: str | None  # glob on names (no '/') or on paths relative to `path`
    ignore_case: bool


@dataclass
class _Found:
    out: Lines = field(default_factory=lambda: Lines(TEXT_BYTES))
    matches: int = 0  # one past GREP_MATCHES means "and there are more"
    files: int = 0
    skipped: int = 0  # binary, oversized or unreadable files
    walk: Walk | None = None

    @property
    def done(self) -> bool:
        return self.matches > GREP_MATCHES or self.out.full


class Grep:
    name = "grep"
    description = (
        "Search file contents with a Python regular expression. Prints path:line:text. "
        "`path` (default '.') may be a file or folder; `include` filters file names "
        "with a glob such as '*.py'. Binary files and .git are skipped."
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
            except GlobError:
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
            regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
        except (re.error, RecursionError, OverflowError):
            return failed("bad_pattern", "the regular expression does not compile", summary)
        try:
            found = await anyio.to_thread.run_sync(_search, root, shown, regex, args.include)
        except OSError as e:
            return failed(os_error_code(e), shown, summary)
        count = min(found.matches, GREP_MATCHES)
        return ToolOutcome(ok=True, output=_render(found), summary=f"{summary} ({count})")


def _render(found: _Found) -> str:
    text = found.out.render("matches") if found.out.lines else "(no matches)"
    if found.matches > GREP_MATCHES:
        text += f"\n[stopped after {GREP_MATCHES} matches]"
    if found.walk is not None and found.walk.truncated:
        text += f"\n[search stopped after {found.walk.visited} entries]"
    if found.skipped:
        text += f"\n[{found.skipped} binary, oversized or unreadable files skipped]"
    return text


def _search(root: Path, shown: str, regex: re.Pattern[str], include: str | None) -> _Found:
    found = _Found()
    if not root.is_dir():
        root.stat()  # a missing path fails here with its OSError
        _scan(root, shown, regex, found)
        return found
    wanted = compile_glob(include) if include else None
    on_names = include is not None and "/" not in include
    found.walk = Walk(root)
    for rel, entry in found.walk.entries():
        if found.done:
            break
        if not entry.is_file(follow_symlinks=False):
            continue
        if wanted and not wanted.fullmatch(entry.name if on_names else rel):
            continue
        anyio.from_thread.check_cancelled()
        _scan(Path(entry.path), rel, regex, found)
    return found


def _scan(path: Path, shown: str, regex: re.Pattern[str], found: _Found) -> None:
    try:
        if path.stat().st_size > GREP_FILE_BYTES:
            found.skipped += 1
            return
        with open_regular(path) as handle:
            if is_binary(handle):
                found.skipped += 1
                return
            found.files += 1
            number = 0
            while not found.done and (raw := read_line(handle)) is not None:
                number += 1
                if number % CANCEL_CHECK_LINES == 0:
                    anyio.from_thread.check_cancelled()
                line = decode_line(raw)
                if regex.search(line):
                    found.matches += 1
                    if found.matches <= GREP_MATCHES:
                        found.out.add(f"{shown}:{number}:{cut_line(line)}")
    except OSError:
        found.skipped += 1
