"""The grep search itself, run in a child process: `python -m magi_code.tools.search`.

Why a process: Python's `re` holds the GIL for a whole match, and the pattern is the model's;
a catastrophic one would freeze the event loop (and the protocol writer with it). In a child,
the parent's loop stays free and a timeout or cancellation kills the search outright.

Protocol: one JSON request object on stdin, one JSON result object on stdout. No anyio here,
nothing printed but the result, and no path or text outside `root` is read: symlinked files
met during a walk are skipped, as are binary (NUL in the head) and oversized files, files
under `skip` (the credential store, the session files) and hard links to one (`linked`).
"""

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from magi_code.records import asdict, field, record
from magi_code.tools.globs import compile_glob
from magi_code.tools.limits import GREP_FILE_BYTES, GREP_MATCHES, TEXT_BYTES
from magi_code.tools.paths import open_regular, os_error_code
from magi_code.tools.text import Lines, cut_line, decode_line, is_binary, read_line
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


@record
class Request:
    root: str
    shown: str  # how the root is displayed; prefixes every result path
    pattern: str
    ignore_case: bool
    include: str | None
    skip: list[str] = field(default_factory=list)  # canonical paths never read
    linked: list[list[int]] = field(default_factory=list)  # [device, inode] of those files


def search(request: Request) -> Result:
    regex = re.compile(request.pattern, re.IGNORECASE if request.ignore_case else 0)
    out = Lines(TEXT_BYTES)
    result = Result()

    linked = {(device, inode) for device, inode in request.linked}

    def refused(st: os.stat_result) -> bool:
        return st.st_nlink > 1 and (st.st_dev, st.st_ino) in linked

    def scan(path: Path, shown: str) -> None:
        if any(path == Path(p) or Path(p) in path.parents for p in request.skip):
            result.skipped += 1
            return
        _scan(path, shown, regex, out, result, refused)

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


def _done(out: Lines, result: Result) -> bool:
    return result.matches > GREP_MATCHES or out.full


def _walk(
    root: Path, request: Request, scan: Callable[[Path, str], None], out: Lines, result: Result
) -> None:
    wanted = compile_glob(request.include) if request.include else None
    on_names = request.include is not None and "/" not in request.include
    prefix = "" if request.shown == "." else request.shown.rstrip("/") + "/"
    walk = Walk(root)
    for rel, entry in walk.entries():
        if _done(out, result):
            break
        if not entry.is_file(follow_symlinks=False):
            continue
        if wanted and not wanted.matches(entry.name if on_names else rel):
            continue
        scan(Path(entry.path), prefix + rel)
    result.visited, result.truncated = walk.visited, walk.truncated


def _scan(
    path: Path,
    shown: str,
    regex: re.Pattern[str],
    out: Lines,
    result: Result,
    refused: Callable[[os.stat_result], bool],
) -> None:
    try:
        if path.stat().st_size > GREP_FILE_BYTES:
            result.skipped += 1
            return
        with open_regular(path, refused=refused) as handle:
            if is_binary(handle):
                result.skipped += 1
                return
            number = 0
            while not _done(out, result) and (raw := read_line(handle)) is not None:
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
