"""grep through ripgrep: when `rg` is on the tool environment's PATH, it does the search.

`rg --json` runs as a child in its own session, as the Python search does (grep.py), with the
same bounds: GREP_TIMEOUT_S, then its group is killed, as it is on cancellation and as soon as
GREP_MATCHES + 1 matches or TEXT_BYTES of lines are in; at most RG_READ_BYTES of its output is
read, and one record of it past RG_RECORD_BYTES is shown without its text. (WALK_ENTRIES is
the Python walk's: rg's walk is bounded by the time alone.) rg is asked to skip what the
Python walk skips: ignored files (`.gitignore`, `.ignore`, the global excludes, as rg itself
reads them), `.git`, symlinks, binary files and files over GREP_FILE_BYTES, in the same order
(`--sort path`), with no configuration file and no encoding sniffing; hidden files are
searched. The include glob is applied here, by globs.py, to every path rg reports (a glob's
names also narrow rg's own search, as a file type, when their syntax is rg's too).

rg is not used (`usable`), and the Python search runs instead, when the root is a file, when
the search would reach a protected path (`skip`), or when the pattern is one that rg's regex
syntax reads otherwise than Python's (a class in a class, class set operations, `\\<`, `\\>`,
`\\b{`), and it gives way when it refuses the pattern (look-arounds, back-references). Hard
links to protected files (`linked`) are dropped from its results before they are shown.
"""

import base64
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread

from magi_code.tools.globs import expand_braces
from magi_code.tools.limits import (
    GREP_FILE_BYTES,
    GREP_KILL_GRACE_S,
    GREP_MATCHES,
    GREP_TIMEOUT_S,
    RG_READ_BYTES,
    RG_RECORD_BYTES,
    TEXT_BYTES,
)
from magi_code.tools.paths import inside
from magi_code.tools.processes import kill_group
from magi_code.tools.search import Request, Result, included
from magi_code.tools.text import Lines, cut_line
from magi_code.tools.walk import GIT_ENV

TIMED_OUT: Literal["timed_out"] = "timed_out"
LONG_LINE = "[a line too long to show here: read_file shows its start]"
_TYPE = "grepinclude"  # the file type an include becomes
_HEAD_BYTES = 32 * 1024  # of a record too long to parse: where its path is
_NOT_RUST = re.compile(r"\\[<>]|\\[bB]\{")  # read otherwise by rg's regex syntax
_NOT_A_TYPE_GLOB = frozenset("\\[]{},:")
_MATCH_PATH = re.compile(rb'^\{"type":"match","data":\{"path":\{"(text|bytes)":"((?:[^"\\]|\\.)*)"')
_LINE_NUMBER = re.compile(rb'"line_number":(\d+)')


def find(env: Mapping[str, str]) -> str | None:
    """The `rg` on the tool environment's PATH, if any."""
    return shutil.which("rg", path=env.get("PATH", ""))


def usable(request: Request) -> bool:
    """Whether rg may run this search (see the module's docstring); the root is a folder."""
    root = Path(request.root)
    if any(inside(Path(p), root) or inside(root, Path(p)) for p in request.skip):
        return False
    return _same_in_rust(request.pattern)


def _same_in_rust(pattern: str) -> bool:
    """False for what rg's regex syntax reads otherwise than Python's `re` (conservatively)."""
    if "\x00" in pattern or _NOT_RUST.search(pattern):
        return False
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "[":
            end = i + 1
            if pattern[end : end + 1] == "^":
                end += 1
            if pattern[end : end + 1] == "]":
                end += 1
            while end < len(pattern) and pattern[end] != "]":
                if pattern[end] == "[" or pattern[end : end + 2] in ("&&", "--", "~~"):
                    return False  # a nested class or a set operation in rg
                end += 2 if pattern[end] == "\\" else 1
            i = end
        i += 1
    return True


def command(rg: str, request: Request) -> list[str]:
    argv = [rg, "--json", "--no-config", "--hidden", "--sort", "path", "--crlf"]
    argv += ["--encoding", "none", "--max-filesize", str(GREP_FILE_BYTES), "--glob", "!.git"]
    if request.ignore_case:
        argv.append("--ignore-case")
    names = _type_globs(request.include)
    if names:
        argv += [arg for name in names for arg in ("--type-add", f"{_TYPE}:{name}")]
        argv += ["--type", _TYPE]
    return [*argv, "--regexp", request.pattern, "--", "."]


def _type_globs(include: str | None) -> list[str]:
    """The names an include keeps as rg file-type globs (each alternative's last segment), or
    none when one of them has a syntax rg reads otherwise (then rg searches every file)."""
    if include is None:
        return []
    names = list(dict.fromkeys(one.rpartition("/")[2] for one in expand_braces(include)))
    for name in names:
        if not name or "**" in name or _NOT_A_TYPE_GLOB & set(name):
            return []
    return names


class Reader:
    """`rg --json` output in, the search's lines and counts out. Sans-I/O: `feed` it chunks;
    `done` turns true once a bound is reached (nothing more is wanted)."""

    def __init__(self, shown: str, wanted: Callable[[str], bool] | None) -> None:
        self.prefix = "" if shown == "." else shown.rstrip("/") + "/"
        self.wanted = wanted
        self.out = Lines(TEXT_BYTES)
        self.result = Result()
        self.files: list[str] = []  # the path (relative to the root) of each line in `out`
        self.finished = False  # rg's summary came: it searched everything it meant to
        self.done = False
        self._read = 0
        self._record = bytearray()
        self._head: bytes | None = None  # set while skipping a record past RG_RECORD_BYTES
        self._line_number: bytes | None = None
        self._carry = b""

    def feed(self, chunk: bytes) -> None:
        self._read += len(chunk)
        start = 0
        while not self.done:
            newline = chunk.find(b"\n", start)
            piece = chunk[start:] if newline < 0 else chunk[start:newline]
            self._take(piece)
            if newline < 0:
                break
            self._end_record()
            start = newline + 1
        if self._read > RG_READ_BYTES and not self.done:
            self.result.output_cut = self.done = True

    def _take(self, piece: bytes) -> None:
        if self._head is None:
            self._record += piece
            if len(self._record) <= RG_RECORD_BYTES:
                return
            self._head, piece = bytes(self._record[:_HEAD_BYTES]), bytes(self._record)
            self._record.clear()
        if self._line_number is None:
            found = _LINE_NUMBER.search(self._carry + piece)
            if found is not None:
                self._line_number = found.group(1)
            self._carry = piece[-32:]

    def _end_record(self) -> None:
        if self._head is not None:
            self._long_record(self._head, self._line_number)
            self._head = self._line_number = None
            self._carry = b""
            return
        try:
            record = json.loads(self._record)
        except ValueError:
            record = None
        self._record.clear()
        if not isinstance(record, dict):
            return
        if record.get("type") == "summary":
            self.finished = True
        elif record.get("type") == "match":
            try:
                data = record["data"]
                path = _path(data["path"])
                text = _text(data["lines"]).removesuffix("\n").removesuffix("\r")
                self._match(path, str(int(data["line_number"])), cut_line(text))
            except (KeyError, TypeError, ValueError):
                return

    def _long_record(self, head: bytes, line_number: bytes | None) -> None:
        found = _MATCH_PATH.match(head)
        if found is None:
            return  # not a match: rg's other records are small
        try:
            raw = json.loads(b'"' + found.group(2) + b'"')
            path = _path({found.group(1).decode(): raw})
        except ValueError:
            return
        number = line_number.decode() if line_number is not None else "?"
        self._match(path, number, LONG_LINE)

    def _match(self, path: str, number: str, text: str) -> None:
        rel = path.removeprefix("./")
        if self.wanted is not None and not self.wanted(rel):
            return
        self.result.matches += 1
        if self.result.matches <= GREP_MATCHES and self.out.add(
            f"{self.prefix}{rel}:{number}:{text}"
        ):
            self.files.append(rel)
        self.done = self.result.matches > GREP_MATCHES or self.out.full

    def results(self, refused: set[str]) -> Result:
        """The result, without the lines of the files in `refused` (counted as skipped)."""
        out = self.out
        if refused:
            out = Lines(TEXT_BYTES)
            for line, rel in zip(self.out.lines, self.files, strict=True):
                if rel not in refused:
                    out.add(line)
            self.result.matches -= len(self.out.lines) - len(out.lines)
            self.result.skipped += len(refused)
        self.result.lines, self.result.dropped = out.lines, self.out.dropped
        return self.result


def _path(field: Any) -> str:
    if "text" in field:
        return str(field["text"])
    return os.fsdecode(base64.b64decode(field["bytes"]))


def _text(field: Any) -> str:
    if "text" in field:
        return str(field["text"])
    return base64.b64decode(field["bytes"]).decode("utf-8", "replace")


async def search(
    rg: str, request: Request, env: Mapping[str, str]
) -> Result | Literal["timed_out"] | None:
    """rg's result; TIMED_OUT after GREP_TIMEOUT_S; None when rg did not start or refused the
    search (its pattern), so that the Python search runs instead."""
    reader = Reader(request.shown, included(request.include))
    try:
        with anyio.CancelScope(shield=True):  # a cancellation inside the spawn would orphan it
            process = await anyio.open_process(
                command(rg, request),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=request.root,
                env={name: env[name] for name in GIT_ENV if name in env},
                start_new_session=True,
            )
    except OSError:
        return None
    timed_out = True
    try:
        with anyio.move_on_after(GREP_TIMEOUT_S):
            assert process.stdout is not None
            async for chunk in process.stdout:
                reader.feed(chunk)
                if reader.done:
                    break
            else:
                await process.wait()
            timed_out = False
    finally:
        with anyio.CancelScope(shield=True):
            await kill_group(process, GREP_KILL_GRACE_S)
            await process.aclose()
    if timed_out:
        return TIMED_OUT
    if not reader.done and not reader.finished:
        return None  # rg stopped before searching: it refused the pattern
    refused: set[str] = set()
    if request.linked and reader.files:
        refused = await anyio.to_thread.run_sync(_linked, request, set(reader.files))
    return reader.results(refused)


def _linked(request: Request, files: set[str]) -> set[str]:
    """Those of `files` that are hard links to a protected file."""
    identities = {(device, inode) for device, inode in request.linked}
    refused = set()
    for rel in files:
        try:
            st = os.stat(os.path.join(request.root, rel), follow_symlinks=False)
        except OSError:
            refused.add(rel)  # gone since: show nothing of it
            continue
        if st.st_nlink > 1 and (st.st_dev, st.st_ino) in identities:
            refused.add(rel)
    return refused
