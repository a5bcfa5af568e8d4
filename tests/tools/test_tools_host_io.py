"""The file tools through a host's I/O (an editor's buffers): the same numbering, notes and
bounds as on the local disk, and nothing written locally."""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from magi_code.tools.base import Tool, ToolContext, ToolOutcome
from magi_code.tools.builtin import builtin_tools
from magi_code.tools.host_io import HostIO, HostRun
from magi_code.tools.limits import EDIT_FILE_BYTES, LINE_CHARS, SHELL_OUTPUT_BYTES

pytestmark = pytest.mark.anyio

TOOLS = builtin_tools()
FILE_BYTES = 2 * EDIT_FILE_BYTES  # what these hosts carry: past every tool's own bound


class Buffers:
    """A host holding every file as text, as an editor's open buffers."""

    def __init__(self, texts: dict[Path, str]) -> None:
        self.texts = texts
        self.writes: list[Path] = []

    async def read_text(self, path: Path) -> str:
        if path not in self.texts:
            raise RuntimeError(f"secret detail about {path}")
        return self.texts[path]

    async def write_text(self, path: Path, text: str) -> None:
        self.writes.append(path)
        self.texts[path] = text

    def context(self, ctx: ToolContext) -> ToolContext:
        host = HostIO(FILE_BYTES, read_text=self.read_text, write_text=self.write_text)
        return ToolContext(ctx.workspace, ctx.env, host=host)


async def call(name: str, ctx: ToolContext, **arguments: Any) -> ToolOutcome:
    tool: Tool[Any] = TOOLS[name]
    return await tool.run(tool.parse(json.dumps(arguments)), ctx)


TEXTS = [
    "",
    "one\n",
    "one\ntwo",
    "a\r\nb\r\n\r\nc\n",
    "x\x0cy\u2028z\n",  # only a line feed ends a line
    "\n".join(f"line {n}" for n in range(1, 8)) + "\n",
    "long " + "y" * (LINE_CHARS + 5) + "\nshort\n",
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize(("offset", "limit"), [(1, 2000), (2, 2), (3, 1), (7, 5), (9, 1)])
async def test_a_host_read_reads_as_the_disk_does(
    ws: Path, ctx: ToolContext, text: str, offset: int, limit: int
) -> None:
    path = ws / "f.txt"
    path.write_bytes(text.encode())
    local = await call("read_file", ctx, path="f.txt", offset=offset, limit=limit)
    path.write_text("not what the host has")
    hosted = await call("read_file", Buffers({path: text}).context(ctx), path="f.txt",
                        offset=offset, limit=limit)  # fmt: skip
    assert (hosted.ok, hosted.output, hosted.summary) == (local.ok, local.output, local.summary)


async def test_a_host_read_of_binary_text_is_refused(ws: Path, ctx: ToolContext) -> None:
    outcome = await call("read_file", Buffers({ws / "b": "a\x00b"}).context(ctx), path="b")
    assert not outcome.ok and outcome.output == "error: not_text: b looks binary"


async def test_a_host_refusal_is_a_code_without_its_words(ws: Path, ctx: ToolContext) -> None:
    host = Buffers({})
    for name, arguments in [
        ("read_file", {"path": "gone"}),
        ("edit_file", {"path": "gone", "old": "a", "new": "b"}),
    ]:
        outcome = await call(name, host.context(ctx), **arguments)
        assert not outcome.ok and outcome.output.startswith("error: host_error: ")
        assert "secret" not in outcome.output + outcome.summary


EDGE = [(EDIT_FILE_BYTES, True), (EDIT_FILE_BYTES + 1, False)]


@pytest.mark.parametrize(("size", "edited"), EDGE)
async def test_a_host_edit_is_bounded_at_its_exact_edge(
    ws: Path, ctx: ToolContext, size: int, edited: bool
) -> None:
    path = ws / "big.txt"
    text = "old" + "é" * ((size - 3) // 2) + "z" * ((size - 3) % 2)
    assert len(text.encode()) == size
    host = Buffers({path: text})
    outcome = await call("edit_file", host.context(ctx), path="big.txt", old="old", new="new")
    assert outcome.ok is edited
    if edited:
        assert host.texts[path].startswith("new") and host.writes == [path]
    else:
        assert outcome.output == f"error: too_large: big.txt exceeds {EDIT_FILE_BYTES} bytes"
        assert host.writes == []
    assert not path.exists()


async def test_host_writes_and_edits_leave_the_disk_alone(ws: Path, ctx: ToolContext) -> None:
    host = Buffers({ws / "a.txt": "x = 1\nx = 1\n"})
    ambiguous = await call("edit_file", host.context(ctx), path="a.txt", old="x = 1", new="y")
    assert not ambiguous.ok and "occurs 2 times" in ambiguous.output
    done = await call("edit_file", host.context(ctx), path="a.txt", old="x", new="y",
                      replace_all=True)  # fmt: skip
    assert done.output == "edited a.txt: 2 replacements"
    wrote = await call("write_file", host.context(ctx), path="sub/n.txt", content="héllo")
    assert wrote.output == "wrote sub/n.txt (6 bytes)"
    assert host.texts == {ws / "a.txt": "y = 1\ny = 1\n", ws / "sub/n.txt": "héllo"}
    assert list(ws.iterdir()) == []


@pytest.mark.parametrize(("size", "hosted"), [(10, True), (11, False)])
async def test_files_past_what_the_host_carries_stay_local(
    ws: Path, ctx: ToolContext, size: int, hosted: bool
) -> None:
    disk = ws / "on-disk.txt"
    disk.write_text("d" * size)
    host = Buffers({disk: "from the host\n"})
    small = ToolContext(ws, ctx.env, host=HostIO(10, host.read_text, host.write_text))
    read = await call("read_file", small, path="on-disk.txt")
    assert ("from the host" in read.output) is hosted
    wrote = await call("write_file", small, path="new.txt", content="w" * size)
    assert wrote.ok and (ws / "new.txt").exists() is not hosted
    assert host.writes == ([ws / "new.txt"] if hosted else [])


@pytest.mark.parametrize(
    ("size", "noted"), [(SHELL_OUTPUT_BYTES, False), (SHELL_OUTPUT_BYTES + 1, True)]
)
async def test_a_host_shell_keeps_the_output_bound(
    ws: Path, ctx: ToolContext, size: int, noted: bool
) -> None:
    seen: list[tuple[str, Path, float, int]] = []

    async def run(
        command: str, cwd: Path, env: Mapping[str, str], timeout_s: float, output_bytes: int
    ) -> HostRun:
        assert env == ctx.env
        seen.append((command, cwd, timeout_s, output_bytes))
        return HostRun("a" + "z" * (size - 1), truncated=False, exit_code=0)

    hosted = ToolContext(ws, ctx.env, host=HostIO(FILE_BYTES, run=run))
    outcome = await call("shell", hosted, command="yes", timeout=5)
    assert seen == [("yes", ws, 5.0, SHELL_OUTPUT_BYTES)]
    assert outcome.output.startswith("[... earlier output omitted ...]\n") is noted
    kept = outcome.output.removeprefix("[... earlier output omitted ...]\n")
    assert kept == ("a" if not noted else "") + "z" * (SHELL_OUTPUT_BYTES - 1 + noted) + (
        "\n[exit code 0]"
    )


async def test_a_host_shell_reports_timeout_and_signal(ws: Path, ctx: ToolContext) -> None:
    endings = iter(
        [
            HostRun("partial", truncated=True, exit_code=None, timed_out=True),
            HostRun("", truncated=False, exit_code=None, signal="SIGTERM"),
        ]
    )

    async def run(*_: object) -> HostRun:
        return next(endings)

    hosted = ToolContext(ws, ctx.env, host=HostIO(FILE_BYTES, run=run))
    late = await call("shell", hosted, command="sleep 9", timeout=1)
    assert not late.ok
    assert late.output == (
        "[... earlier output omitted ...]\npartial\n[timed out after 1 s; process killed]"
    )
    killed = await call("shell", hosted, command="x")
    assert not killed.ok and killed.output == "(no output)\n[killed by signal SIGTERM]"
