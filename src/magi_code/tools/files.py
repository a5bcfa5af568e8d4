"""read_file, write_file and edit_file: one file each call, blocking I/O in a worker thread.

read_file returns an image file (PNG, JPEG, GIF or WebP, known by its first bytes) as an
image beside a line of text (tools/images.py: bounded, downscaled when too large); every
other file as numbered lines of text.

A read's thread is abandoned on cancellation (it changes nothing, and stops at its next
cancellation check); a write's thread is waited for, so a write is never left half-done behind
the runner's back, and it is bounded, so the wait is short. Failures become outcomes with a
stable error word, never an exception's text.

With a host (`ctx.host`: an editor's buffers over ACP) the text goes through it instead, for
files it carries: the same numbering, notes and bounds, and the disk is left to the host.
"""

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import anyio
import anyio.from_thread

from magi_code.records import record
from magi_code.tools import args as A
from magi_code.tools.base import Access, ToolContext, ToolOutcome
from magi_code.tools.host_io import HostIO
from magi_code.tools.images import SNIFF_BYTES, ImageRefused, read_from, sniff
from magi_code.tools.limits import (
    BINARY_SNIFF_BYTES,
    CANCEL_CHECK_LINES,
    EDIT_FILE_BYTES,
    READ_DEFAULT_LINES,
    READ_MAX_LINES,
    TEXT_BYTES,
)
from magi_code.tools.paths import display, open_regular, os_error_code, resolve
from magi_code.tools.summaries import safe_summary
from magi_code.tools.text import Lines, cut_line, decode_line, is_binary, read_line

Guard = Callable[[os.stat_result], bool]  # refuses a hard link to a protected file


def failed(code: str, what: str, summary: str) -> ToolOutcome:
    return ToolOutcome(ok=False, output=f"error: {code}: {what}", summary=f"{summary}: {code}")


_PATH = {"type": "string", "description": "File path, relative to the workspace or absolute."}


@record
class ReadArgs:
    path: str
    offset: int  # first line, 1-based
    limit: int  # lines


class ReadFile:
    name = "read_file"
    description = (
        "Read a file. Text comes as numbered lines (number, tab, text): use offset (1-based "
        "line) and limit (lines) to page through long files. An image (PNG, JPEG, GIF, WebP) "
        "comes as the image itself, for you to look at."
    )

    def __init__(self) -> None:
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {
                "path": _PATH,
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": READ_MAX_LINES},
            },
            "required": ["path"],
            "additionalProperties": False,
        }

    def parse(self, arguments: str) -> ReadArgs:
        f = A.load_object(arguments, {"path"}, {"offset", "limit"})
        return ReadArgs(
            A.text(f, "path"),
            A.whole(f, "offset", 1, 1, 2**62),
            A.whole(f, "limit", READ_DEFAULT_LINES, 1, READ_MAX_LINES),
        )

    def access(self, args: ReadArgs, ctx: ToolContext) -> Access:
        return Access("read", (resolve(ctx, args.path),))

    def describe(self, args: ReadArgs, ctx: ToolContext) -> str:
        return safe_summary(f"read {display(ctx, resolve(ctx, args.path))}")

    async def run(self, args: ReadArgs, ctx: ToolContext) -> ToolOutcome:
        path = resolve(ctx, args.path)
        shown = display(ctx, path)
        host = await _host(ctx, path)
        if host is not None and await anyio.to_thread.run_sync(_image_on_disk, path):
            host = None  # the client's buffers hold text: an image is read from the disk
        if host is not None and host.read_text is not None:
            try:
                text = await host.read_text(path)
            except Exception:  # noqa: BLE001 - the host's refusal, whatever its words
                return failed("host_error", f"the client could not read {shown}", f"read {shown}")
            return _read_text(text, shown, args)
        try:
            return await anyio.to_thread.run_sync(
                _read, path, shown, args, _guard(ctx, "read"), abandon_on_cancel=True
            )
        except OSError as e:
            return failed(os_error_code(e), shown, f"read {shown}")


async def _host(ctx: ToolContext, path: Path, writing: int = 0) -> HostIO | None:
    """The host to go through for `path`, or None for the local disk: no host, or a file (on
    disk, or `writing` bytes) larger than the host carries."""
    if ctx.host is None or writing > ctx.host.file_bytes:
        return None
    size = await anyio.to_thread.run_sync(_disk_size, path)
    return ctx.host if size <= ctx.host.file_bytes else None


def _disk_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # not on disk (yet): only the host knows it
        return 0


def _guard(ctx: ToolContext, kind: str) -> Guard | None:
    """What refuses a hard link to a protected file, when the context knows them."""
    return ctx.protected.guard(kind) if ctx.protected is not None else None


def _image_on_disk(path: Path) -> bool:
    try:
        with open_regular(path) as handle:
            return sniff(handle.read(SNIFF_BYTES)) is not None
    except OSError:
        return False


def _read(path: Path, shown: str, args: ReadArgs, guard: Guard | None) -> ToolOutcome:
    out = Lines(TEXT_BYTES)
    number = 0
    with open_regular(path, refused=guard) as handle:
        if sniff(handle.read(SNIFF_BYTES)) is not None:
            handle.seek(0)
            return _read_image(handle, shown)
        handle.seek(0)
        if is_binary(handle):
            return failed("not_text", f"{shown} looks binary", f"read {shown}")
        while (raw := read_line(handle)) is not None:
            number += 1
            if number % CANCEL_CHECK_LINES == 0:
                anyio.from_thread.check_cancelled()  # a far offset can mean a long skip
            if number < args.offset:
                continue
            if len(out.lines) >= args.limit or not out.add(
                f"{number:6}\t{cut_line(decode_line(raw))}"
            ):
                break
    first, last = args.offset, args.offset + len(out.lines) - 1
    if not out.lines:
        note = "(empty file)" if number == 0 else f"(no line {args.offset}: {number} lines)"
        return ToolOutcome(ok=True, output=note, summary=f"read {shown} (no lines)")
    text = "\n".join(out.lines)
    if raw is not None:
        text += f"\n[more lines follow: read_file with offset={last + 1}]"
    return ToolOutcome(ok=True, output=text, summary=f"read {shown} (lines {first}-{last})")


def _read_image(handle: BinaryIO, shown: str) -> ToolOutcome:
    try:
        image = read_from(handle)
    except ImageRefused as refused:
        return failed(refused.code, f"{shown}: {refused.why}", f"read {shown}")
    return ToolOutcome(
        ok=True,
        output=f"{shown}: {image.description}",
        summary=f"read {shown} (image)",
        images=(image,),
    )


def _read_text(text: str, shown: str, args: ReadArgs) -> ToolOutcome:
    """`_read` over text the host gave, with the same numbering, bounds and notes."""
    if "\x00" in text[:BINARY_SNIFF_BYTES]:
        return failed("not_text", f"{shown} looks binary", f"read {shown}")
    out = Lines(TEXT_BYTES)
    lines = [line.removesuffix("\r") for line in text.split("\n")]  # as `decode_line` splits
    if lines[-1] == "":
        lines.pop()  # the text ends with a line feed, or is empty
    number = args.offset - 1
    for line in lines[args.offset - 1 :]:
        if len(out.lines) >= args.limit or not out.add(f"{number + 1:6}\t{cut_line(line)}"):
            break
        number += 1
    first, last = args.offset, number
    if not out.lines:
        note = "(empty file)" if not lines else f"(no line {args.offset}: {len(lines)} lines)"
        return ToolOutcome(ok=True, output=note, summary=f"read {shown} (no lines)")
    shown_text = "\n".join(out.lines)
    if last < len(lines):
        shown_text += f"\n[more lines follow: read_file with offset={last + 1}]"
    return ToolOutcome(ok=True, output=shown_text, summary=f"read {shown} (lines {first}-{last})")


@record
class WriteArgs:
    path: str
    content: str


class WriteFile:
    name = "write_file"
    description = "Create or overwrite a file with the given content; parent folders are created."

    def __init__(self) -> None:
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {"path": _PATH, "content": {"type": "string"}},
            "required": ["path", "content"],
            "additionalProperties": False,
        }

    def parse(self, arguments: str) -> WriteArgs:
        f = A.load_object(arguments, {"path", "content"}, set())
        return WriteArgs(A.text(f, "path"), A.text(f, "content", empty=True, nul=True))

    def access(self, args: WriteArgs, ctx: ToolContext) -> Access:
        return Access("write", (resolve(ctx, args.path),))

    def describe(self, args: WriteArgs, ctx: ToolContext) -> str:
        return safe_summary(f"write {display(ctx, resolve(ctx, args.path))}")

    async def run(self, args: WriteArgs, ctx: ToolContext) -> ToolOutcome:
        path = resolve(ctx, args.path)
        shown = display(ctx, path)
        try:
            data = args.content.encode("utf-8")
        except UnicodeEncodeError:
            return failed("not_text", "content is not valid Unicode", f"write {shown}")
        host = await _host(ctx, path, len(data))
        if host is not None and host.write_text is not None:
            try:
                await host.write_text(path, args.content)
            except Exception:  # noqa: BLE001 - the host's refusal, whatever its words
                return failed("host_error", f"the client could not write {shown}", f"write {shown}")
            return ToolOutcome(
                ok=True, output=f"wrote {shown} ({len(data)} bytes)", summary=f"wrote {shown}"
            )
        try:
            existed = await anyio.to_thread.run_sync(_write, path, data, _guard(ctx, "write"))
        except OSError as e:
            return failed(os_error_code(e), shown, f"write {shown}")
        verb = "overwrote" if existed else "created"
        return ToolOutcome(
            ok=True, output=f"{verb} {shown} ({len(data)} bytes)", summary=f"{verb} {shown}"
        )


def _write(path: Path, data: bytes, guard: Guard | None) -> bool:
    """Write in place (keeping mode, owner and hard links); report whether the file existed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    existed = path.exists()
    with open_regular(path, write=True, refused=guard) as handle:
        handle.write(data)
    return existed


@record
class EditArgs:
    path: str
    old: str
    new: str
    replace_all: bool


class EditFile:
    name = "edit_file"
    description = (
        "Replace exact text in a file. `old` must occur exactly once unless replace_all is "
        "true; include surrounding lines to make it unique."
    )

    def __init__(self) -> None:
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {
                "path": _PATH,
                "old": {"type": "string", "description": "Exact text to replace (non-empty)."},
                "new": {"type": "string", "description": "Replacement text."},
                "replace_all": {"type": "boolean"},
            },
            "required": ["path", "old", "new"],
            "additionalProperties": False,
        }

    def parse(self, arguments: str) -> EditArgs:
        f = A.load_object(arguments, {"path", "old", "new"}, {"replace_all"})
        return EditArgs(
            A.text(f, "path"),
            A.text(f, "old", nul=True),
            A.text(f, "new", empty=True, nul=True),
            A.flag(f, "replace_all"),
        )

    def access(self, args: EditArgs, ctx: ToolContext) -> Access:
        return Access("write", (resolve(ctx, args.path),))

    def describe(self, args: EditArgs, ctx: ToolContext) -> str:
        return safe_summary(f"edit {display(ctx, resolve(ctx, args.path))}")

    async def run(self, args: EditArgs, ctx: ToolContext) -> ToolOutcome:
        path = resolve(ctx, args.path)
        shown = display(ctx, path)
        host = await _host(ctx, path)
        if host is not None and host.read_text is not None and host.write_text is not None:
            try:
                text = await host.read_text(path)
            except Exception:  # noqa: BLE001 - the host's refusal, whatever its words
                return failed("host_error", f"the client could not read {shown}", f"edit {shown}")
            try:
                too_large = len(text.encode("utf-8")) > EDIT_FILE_BYTES
            except UnicodeEncodeError:
                return failed("not_text", f"{shown} is not UTF-8 text", f"edit {shown}")
            if too_large:
                why = f"{shown} exceeds {EDIT_FILE_BYTES} bytes"
                return failed("too_large", why, f"edit {shown}")
            edited = _replaced(text, shown, args)
            if isinstance(edited, ToolOutcome):
                return edited
            try:
                await host.write_text(path, edited[0].decode("utf-8"))
            except Exception:  # noqa: BLE001 - the host's refusal, whatever its words
                return failed("host_error", f"the client could not write {shown}", f"edit {shown}")
            return _edited(shown, edited[1])
        try:
            guards = _guard(ctx, "read"), _guard(ctx, "write")
            return await anyio.to_thread.run_sync(_edit, path, shown, args, guards)
        except OSError as e:
            return failed(os_error_code(e), shown, f"edit {shown}")


def _edit(
    path: Path, shown: str, args: EditArgs, guards: tuple[Guard | None, Guard | None]
) -> ToolOutcome:
    summary = f"edit {shown}"
    with open_regular(path, refused=guards[0]) as handle:
        data = handle.read(EDIT_FILE_BYTES + 1)
    if len(data) > EDIT_FILE_BYTES:
        return failed("too_large", f"{shown} exceeds {EDIT_FILE_BYTES} bytes", summary)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return failed("not_text", f"{shown} is not UTF-8 text", summary)
    edited = _replaced(text, shown, args)
    if isinstance(edited, ToolOutcome):
        return edited
    with open_regular(path, write=True, refused=guards[1]) as handle:
        handle.write(edited[0])
    return _edited(shown, edited[1])


def _replaced(text: str, shown: str, args: EditArgs) -> tuple[bytes, int] | ToolOutcome:
    """The edited file as UTF-8 and the number of replacements, or why there are none."""
    summary = f"edit {shown}"
    count = text.count(args.old)
    if count == 0:
        return failed("no_match", f"`old` does not occur in {shown}", summary)
    if count > 1 and not args.replace_all:
        why = f"`old` occurs {count} times in {shown}; add context or set replace_all"
        return failed("ambiguous", why, summary)
    if args.old == args.new:
        return failed("no_change", "`old` and `new` are identical", summary)
    try:
        new_data = text.replace(args.old, args.new).encode("utf-8")
    except UnicodeEncodeError:
        return failed("not_text", "`new` is not valid Unicode", summary)
    return new_data, count


def _edited(shown: str, count: int) -> ToolOutcome:
    plural = "" if count == 1 else "s"
    return ToolOutcome(
        ok=True, output=f"edited {shown}: {count} replacement{plural}", summary=f"edited {shown}"
    )
