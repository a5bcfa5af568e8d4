"""What a tool call will do, shown to a person before they allow it. Pure: texts in, text out.

An edit or a write becomes a unified diff of the file as it is now against the file as the
call would leave it; a shell call is its command and working folder; any other tool (MCP, a
bridge) is its name and an arguments summary. Everything shown is redacted and bounded: a
preview is for reading, not a copy of the file.
"""

import difflib
import json
from typing import Any

from magi_code.records import asdict, is_record, record
from magi_code.redact import redact

PREVIEW_LINES = 400  # diff lines shown; the rest is counted, not shown
ARGUMENT_CHARS = 2000  # of an arguments summary


@record
class Preview:
    kind: str  # "diff", "shell" or "call"
    title: str
    body: str


def unified_diff(before: str, after: str, name: str) -> str:
    """A unified diff of two texts, at most PREVIEW_LINES lines with a count of the rest."""
    lines = list(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            f"a/{name}",
            f"b/{name}",
        )
    )
    shown = [line if line.endswith("\n") else line + "\n" for line in lines[:PREVIEW_LINES]]
    if len(lines) > PREVIEW_LINES:
        shown.append(f"… {len(lines) - PREVIEW_LINES} more diff lines\n")
    return redact("".join(shown))


def edited(current: str, old: str, new: str, replace_all: bool) -> str | None:
    """The file after an edit_file call, or None when the call would fail (no unique match)."""
    count = current.count(old) if old else 0
    if count == 0 or (count > 1 and not replace_all):
        return None
    return current.replace(old, new)


def preview(tool: str, args: Any, current: str | None, shown_path: str, cwd: str) -> Preview:
    """The preview of one call. `current` is the file's text now (None: absent or unreadable),
    `shown_path` the path as the workspace names it."""
    if tool == "edit_file":
        after = None if current is None else edited(current, args.old, args.new, args.replace_all)
        if after is None:
            return Preview("call", f"edit {shown_path}", "(the text to replace was not found)")
        return Preview("diff", f"edit {shown_path}", unified_diff(current or "", after, shown_path))
    if tool == "write_file":
        verb = "overwrite" if current is not None else "create"
        diff = unified_diff(current or "", args.content, shown_path)
        return Preview("diff", f"{verb} {shown_path}", diff)
    if tool == "shell":
        return Preview("shell", "run a command", f"$ {redact(args.command)}\n  in {cwd}")
    return Preview("call", f"call {tool}", arguments_summary(args))


def outside_preview(command: str, cwd: str) -> Preview:
    """The question to run again, outside the sandbox, a command the sandbox refused."""
    body = (
        f"$ {redact(command)}\n  in {cwd}\nThe sandbox refused part of it (a read, a write or a "
        "connection). Outside, it runs with all your rights; allowed once, whichever key."
    )
    return Preview("shell", "run it again OUTSIDE the sandbox", body)


def arguments_summary(args: Any) -> str:
    """The arguments as JSON when they are plain data, else their text; redacted and cut."""
    if is_record(args):
        args = asdict(args)
    try:
        text = json.dumps(args, ensure_ascii=False, indent=1, default=repr)
    except (TypeError, ValueError):
        text = repr(args)
    if len(text) > ARGUMENT_CHARS:
        text = text[:ARGUMENT_CHARS] + "…"
    return redact(text)
