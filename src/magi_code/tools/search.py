"""The grep search itself, run in a child process: `python -m magi_code.tools.search`.

Why a process: Python's `re` holds the GIL for a whole match, and the pattern is the model's;
a catastrophic one would freeze the event loop (and the protocol writer with it). In a child,
the parent's loop stays free and a timeout or cancellation kills the search outright.

Protocol: one JSON request object on stdin, one JSON result object on stdout. No anyio here,
nothing printed but the result, and no text outside `root` is read but the ignore files that
decide what the walk skips (walk.py: the root's parents', git's global excludes). Skipped:
symlinked files met during a walk, files the ignore files name, binary files (a NUL in the
first GREP_SNIFF_BYTES, rg's first read; a file with a NUL further on is searched up to that
line, as rg searches up to the read that holds it), oversized files, files under `skip` (the
credential store, the session files) and hard links to one (`linked`). A root that is a file
is searched whatever the ignore files say.
"""

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from magi_code.records import asdict, field, record
from magi_code.tools.globs import compile_glob
from magi_code.tools.limits import GREP_FILE_BYTES, GREP_MATCHES, GREP_SNIFF_BYTES, TEXT_BYTES
from magi_code.tools.paths import open_regular, os_error_code
from magi_code.tools.text import Lines, cut_line, decode_line, read_line
from magi_code.tools.walk import Walk


@record(frozen=False)
class Result:
    lines: list[str] = field(default_factory=list)
    dropped: int = 0  # lines that did not fit TEXT_BYTES
    matches: int = 0  # one past GREP_MATCHES means "and there are more"
    skipped: int = 0  # binary, oversized or unreadable files
    visited: int = 0
    truncated: bool = False  # the walk hit WALK_ENTRIES
    error: str | None = None  # an os_error_code for the root itself
    output_cut: bool = False  # rg's output passed RG_READ_BYTES (tools/rg.py)


@record
class Request:
    root: str
    shown: str  # how the root is displayed; prefixes every result path
    pattern: str
    ignore_case: bool
    include: str | None
    skip: list[str] = field(default_factory=list)  # canonical paths never read
    linked: list[list[int]] = field(default_factory=list)  # [device, inode] of those files
    git_env: dict[str, str] = field(default_factory=dict)  # walk.GIT_ENV's values


def search(request: Request) -> Result:
    flags = re.IGNORECASE if request.ignore_case else 0
    regex = re.compile(request.pattern, flags)
    whole = (
        None
        if _SEES_PAST_ITS_LINE.search(request.pattern)
        else re.compile(request.pattern, flags | re.MULTILINE)
    )
    out = Lines(TEXT_BYTES)
    result = Result()

    linked = {(device, inode) for device, inode in request.linked}

    def refused(st: os.stat_result) -> bool:
        return st.st_nlink > 1 and (st.st_dev, st.st_ino) in linked

    def scan(path: Path, shown: str) -> None:
        if any(path == Path(p) or Path(p) in path.parents for p in request.skip):
            result.skipped += 1
            return
        _scan(path, shown, (regex, whole), out, result, refused)

    root = Path(request.root)
    try:
        if root.is_dir():
            _walk(root, request, scan, out, result)
        else:
            root.stat()  # a missing root fails here
            scan(root, request.shown)
    except OSError as e:
        result.error = os_error_code(e)
    result.lines, result.dropped = out.lines, out.dropped
    return result


# What a pattern may hold and still be searched over a whole file at once (re.MULTILINE, with
# CRLF made LF) before its lines are: without \A, \Z and look-arounds a match in a line is
# also one in the whole text (`^`, `$` and `\b` see a line feed as they see a line's end), so
# a file where the whole search finds nothing has no matching line. The reverse may fail (a
# match across lines): the lines then decide.
_SEES_PAST_ITS_LINE = re.compile(r"\\[AZ]|\(\?<?[=!]")


def _done(out: Lines, result: Result) -> bool:
    return result.matches > GREP_MATCHES or out.full


def included(include: str | None) -> Callable[[str], bool] | None:
    """What `include` keeps, by path relative to the root: a glob without `/` is matched
    against names, one with `/` against the whole relative path."""
    if include is None:
        return None
    glob = compile_glob(include)
    if "/" in include:
        return glob.matches
    return lambda rel: glob.matches(rel.rpartition("/")[2])


def _walk(
    root: Path, request: Request, scan: Callable[[Path, str], None], out: Lines, result: Result
) -> None:
    wanted = included(request.include)
    prefix = "" if request.shown == "." else request.shown.rstrip("/") + "/"
    walk = Walk(root, ignores=request.git_env)
    for rel, entry in walk.entries():
        if _done(out, result):
            break
        if not entry.is_file(follow_symlinks=False):
            continue
        if wanted is not None and not wanted(rel):
            continue
        scan(Path(entry.path), prefix + rel)
    result.visited, result.truncated = walk.visited, walk.truncated


def _scan(
    path: Path,
    shown: str,
    regexes: tuple[re.Pattern[str], re.Pattern[str] | None],
    out: Lines,
    result: Result,
    refused: Callable[[os.stat_result], bool],
) -> None:
    try:
        if path.stat().st_size > GREP_FILE_BYTES:
            result.skipped += 1
            return
        regex, whole = regexes
        with open_regular(path, refused=refused) as handle:
            head = handle.read(GREP_SNIFF_BYTES)
            if b"\x00" in head:
                result.skipped += 1
                return
            if whole is not None:  # most files hold no match: one search tells, in C
                text = (head + handle.read(GREP_FILE_BYTES)).decode("utf-8", "replace")
                if not whole.search(text.replace("\r\n", "\n")):
                    return
            handle.seek(0)
            number = 0
            while not _done(out, result) and (raw := read_line(handle)) is not None:
                if b"\x00" in raw:
                    break  # a binary part: rg stops there too
                number += 1
                line = decode_line(raw)
                if regex.search(line):
                    result.matches += 1
                    if result.matches <= GREP_MATCHES:
                        out.add(f"{shown}:{number}:{cut_line(line)}")
    except OSError:
        result.skipped += 1


def main() -> None:
    request = Request(**json.loads(sys.stdin.buffer.read()))
    sys.stdout.write(json.dumps(asdict(search(request))))


if __name__ == "__main__":
    main()
