"""read_file, write_file, edit_file, list_dir, glob and grep on real files in tmp_path."""

import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest

from magi_code.limits import SUMMARY_BYTES
from magi_code.tools.base import Access, Tool, ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.builtin import builtin_tools
from magi_code.tools.limits import (
    ARGUMENTS_BYTES,
    GLOB_RESULTS,
    GREP_MATCHES,
    LINE_CHARS,
    READ_DEFAULT_LINES,
    READ_MAX_LINES,
    TEXT_BYTES,
)
from magi_code.tools.walk import Walk

pytestmark = pytest.mark.anyio

TOOLS = builtin_tools()


async def call(name: str, ctx: ToolContext, **arguments: Any) -> ToolOutcome:
    tool: Tool[Any] = TOOLS[name]
    return await tool.run(tool.parse(json.dumps(arguments)), ctx)


# ---- read_file -------------------------------------------------------------------------------


async def test_read_numbers_lines_and_pages(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    whole = await call("read_file", ctx, path="a.txt")
    assert whole.ok
    assert whole.output.split("\n")[0] == "     1\tline 1"
    assert whole.output.split("\n")[-1] == "    10\tline 10"
    assert "more lines follow" not in whole.output
    page = await call("read_file", ctx, path="a.txt", offset=4, limit=3)
    assert page.output.split("\n") == [
        "     4\tline 4",
        "     5\tline 5",
        "     6\tline 6",
        "[more lines follow: read_file with offset=7]",
    ]
    assert page.summary == "read a.txt (lines 4-6)"


async def test_read_default_limit_edge(ctx: ToolContext, ws: Path) -> None:
    (ws / "n.txt").write_text("x\n" * READ_DEFAULT_LINES)
    exact = await call("read_file", ctx, path="n.txt")
    assert "more lines follow" not in exact.output
    (ws / "n1.txt").write_text("x\n" * (READ_DEFAULT_LINES + 1))
    over = await call("read_file", ctx, path="n1.txt")
    assert over.output.endswith(f"offset={READ_DEFAULT_LINES + 1}]")


async def test_read_output_is_bounded_and_long_lines_cut(ctx: ToolContext, ws: Path) -> None:
    (ws / "wide.txt").write_text(("y" * (LINE_CHARS + 1) + "\n") * 200)
    out = await call("read_file", ctx, path="wide.txt")
    assert len(out.output.encode()) <= TEXT_BYTES + 200
    assert f"line cut at {LINE_CHARS}" in out.output
    assert "more lines follow" in out.output


async def test_read_refuses_binary_missing_and_directories(ctx: ToolContext, ws: Path) -> None:
    (ws / "bin").write_bytes(b"\x7fELF\x00\x01")
    (ws / "dir").mkdir()
    binary = await call("read_file", ctx, path="bin")
    missing = await call("read_file", ctx, path="nope.txt")
    folder = await call("read_file", ctx, path="dir")
    assert not binary.ok and "not_text" in binary.output
    assert not missing.ok and "not_found" in missing.output
    assert not folder.ok and "is_a_directory" in folder.output


async def test_read_empty_file_and_offset_past_end(ctx: ToolContext, ws: Path) -> None:
    (ws / "empty").write_text("")
    (ws / "two").write_text("a\nb\n")
    assert (await call("read_file", ctx, path="empty")).output == "(empty file)"
    assert (await call("read_file", ctx, path="two", offset=5)).output == "(no line 5: 2 lines)"


# ---- write_file / edit_file --------------------------------------------------------------------


async def test_write_creates_parents_then_overwrites(ctx: ToolContext, ws: Path) -> None:
    first = await call("write_file", ctx, path="deep/er/new.txt", content="héllo\n")
    assert first.ok and first.summary == "created deep/er/new.txt"
    assert (ws / "deep/er/new.txt").read_text() == "héllo\n"
    second = await call("write_file", ctx, path="deep/er/new.txt", content="")
    assert second.ok and second.summary == "overwrote deep/er/new.txt"
    assert (ws / "deep/er/new.txt").read_bytes() == b""


async def test_write_keeps_mode_of_existing_file(ctx: ToolContext, ws: Path) -> None:
    script = ws / "run.sh"
    script.write_text("old")
    script.chmod(0o750)
    await call("write_file", ctx, path="run.sh", content="new")
    assert script.stat().st_mode & 0o777 == 0o750
    assert script.read_text() == "new"


async def test_edit_replaces_exactly_once(ctx: ToolContext, ws: Path) -> None:
    (ws / "f.py").write_text("a = 1\nb = 2\n")
    out = await call("edit_file", ctx, path="f.py", old="b = 2", new="b = 3")
    assert out.ok and out.output == "edited f.py: 1 replacement"
    assert (ws / "f.py").read_text() == "a = 1\nb = 3\n"


async def test_edit_refuses_missing_match(ctx: ToolContext, ws: Path) -> None:
    (ws / "f.py").write_text("a = 1\n")
    out = await call("edit_file", ctx, path="f.py", old="zzz", new="q")
    assert not out.ok and "no_match" in out.output
    assert (ws / "f.py").read_text() == "a = 1\n"


async def test_edit_refuses_ambiguous_match_unless_replace_all(ctx: ToolContext, ws: Path) -> None:
    (ws / "f.py").write_text("x = 0\nx = 0\n")
    out = await call("edit_file", ctx, path="f.py", old="x = 0", new="x = 1")
    assert not out.ok and "ambiguous" in out.output and "2 times" in out.output
    assert (ws / "f.py").read_text() == "x = 0\nx = 0\n"
    both = await call("edit_file", ctx, path="f.py", old="x = 0", new="x = 1", replace_all=True)
    assert both.ok and "2 replacements" in both.output
    assert (ws / "f.py").read_text() == "x = 1\nx = 1\n"


async def test_edit_refuses_non_utf8_and_empty_old(ctx: ToolContext, ws: Path) -> None:
    (ws / "latin").write_bytes(b"caf\xe9\n")
    out = await call("edit_file", ctx, path="latin", old="caf", new="tea")
    assert not out.ok and "not_text" in out.output
    with pytest.raises(ToolInputError) as err:
        TOOLS["edit_file"].parse(json.dumps({"path": "latin", "old": "", "new": "x"}))
    assert err.value.code == "invalid_arguments"


# ---- list_dir / glob -----------------------------------------------------------------------------


async def test_list_dir_marks_dirs_and_links(ctx: ToolContext, ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "b.txt").write_text("")
    (ws / "link").symlink_to(ws / "b.txt")
    out = await call("list_dir", ctx)
    assert out.output.split("\n") == ["b.txt", "link@", "sub/"]
    assert (await call("list_dir", ctx, path="sub")).output == "(empty directory)"
    assert "not_found" in (await call("list_dir", ctx, path="gone")).output


async def test_glob_matches_across_folders(ctx: ToolContext, ws: Path) -> None:
    for rel in ["a.py", "src/b.py", "src/deep/c.py", "src/deep/c.txt", ".git/x.py"]:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("")
    out = await call("glob", ctx, pattern="**/*.py")
    assert out.output.split("\n") == ["a.py", "src/b.py", "src/deep/c.py"]
    assert (await call("glob", ctx, pattern="src/*.py")).output == "src/b.py"
    assert (await call("glob", ctx, pattern="*.rs")).output == "(no matches)"


async def test_glob_result_bound_edge(ctx: ToolContext, ws: Path) -> None:
    for i in range(GLOB_RESULTS):
        (ws / f"f{i:05}.t").write_text("")
    exact = await call("glob", ctx, pattern="*.t")
    assert len(exact.output.split("\n")) == GLOB_RESULTS
    (ws / "zz.t").write_text("")
    over = await call("glob", ctx, pattern="*.t")
    lines = over.output.split("\n")
    assert lines[-1] == f"[stopped after {GLOB_RESULTS} matches]"
    assert len(lines) == GLOB_RESULTS + 1


@pytest.mark.parametrize("pattern", ["../*", "/etc/*", "a/../../b", ""])
def test_glob_refuses_patterns_leaving_the_workspace(pattern: str) -> None:
    with pytest.raises(ToolInputError):
        TOOLS["glob"].parse(json.dumps({"pattern": pattern}))


# ---- grep ----------------------------------------------------------------------------------------


async def test_grep_finds_lines_and_skips_binary(ctx: ToolContext, ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src/a.py").write_text("import os\nvalue = 1\nVALUE = 2\n")
    (ws / "src/b.txt").write_text("value here\n")
    (ws / "blob.bin").write_bytes(b"value\x00value\n")
    out = await call("grep", ctx, pattern=r"value")
    assert out.output.split("\n") == [
        "src/a.py:2:value = 1",
        "src/b.txt:1:value here",
        "[1 binary, oversized or unreadable files skipped]",
    ]
    only_py = await call("grep", ctx, pattern="value", include="*.py", ignore_case=True)
    assert only_py.output.split("\n") == ["src/a.py:2:value = 1", "src/a.py:3:VALUE = 2"]
    one_file = await call("grep", ctx, pattern="os", path="src/a.py")
    assert one_file.output == "src/a.py:1:import os"
    below = await call("grep", ctx, pattern="here", path="src")
    assert below.output == "src/b.txt:1:value here"  # paths stay relative to the workspace


async def test_grep_does_not_follow_symlinked_files(
    ctx: ToolContext, ws: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("token\n")
    (ws / "link.txt").symlink_to(secret)
    assert (await call("grep", ctx, pattern="token")).output == "(no matches)"


async def test_grep_match_bound_edge(ctx: ToolContext, ws: Path) -> None:
    (ws / "exact.txt").write_text("hit\n" * GREP_MATCHES)
    exact = await call("grep", ctx, pattern="hit", path="exact.txt")
    assert exact.output.split("\n") == [f"exact.txt:{i}:hit" for i in range(1, GREP_MATCHES + 1)]
    (ws / "over.txt").write_text("hit\n" * (GREP_MATCHES + 1))
    over = await call("grep", ctx, pattern="hit", path="over.txt")
    lines = over.output.split("\n")
    assert lines[:-1] == [f"over.txt:{i}:hit" for i in range(1, GREP_MATCHES + 1)]
    assert lines[-1] == f"[stopped after {GREP_MATCHES} matches]"
    assert over.summary == f"grep in over.txt ({GREP_MATCHES})"


async def test_grep_bad_regex_is_an_outcome(ctx: ToolContext) -> None:
    out = await call("grep", ctx, pattern="(unclosed")
    assert not out.ok and "bad_pattern" in out.output


# ---- parse and access --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ("{not json", "invalid_json"),
        ("[1]", "invalid_arguments"),
        ('{"path": "a", "path": "b"}', "invalid_json"),
        ('{"path": "a", "extra": 1}', "invalid_arguments"),
        ('{"path": 3}', "invalid_arguments"),
        ('{"path": "a", "limit": true}', "invalid_arguments"),
        ('{"path": "a", "limit": 0}', "invalid_arguments"),
        (json.dumps({"path": "a", "limit": READ_MAX_LINES + 1}), "invalid_arguments"),
        ('{"path": "a\\u0000b"}', "invalid_arguments"),
        ("{}", "invalid_arguments"),
    ],
)
def test_read_parse_rejects_bad_shapes(arguments: str, code: str) -> None:
    with pytest.raises(ToolInputError) as err:
        TOOLS["read_file"].parse(arguments)
    assert err.value.code == code
    assert str(err.value) == code  # the exception text is the code, never the input


def test_arguments_size_edge() -> None:
    tool = TOOLS["write_file"]
    frame = json.dumps({"path": "a", "content": ""})
    fits = json.dumps({"path": "a", "content": "x" * (ARGUMENTS_BYTES - len(frame))})
    assert len(fits) == ARGUMENTS_BYTES
    assert tool.parse(fits).content.startswith("x")
    with pytest.raises(ToolInputError) as err:
        tool.parse(fits[:-2] + 'xx"}')
    assert err.value.code == "arguments_too_large"


def test_access_resolves_relative_and_symlinked_paths(
    ctx: ToolContext, ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (ws / "door").symlink_to(outside)
    read = TOOLS["read_file"]
    assert read.access(read.parse('{"path": "x/../a.txt"}'), ctx) == Access("read", (ws / "a.txt",))
    through = read.access(read.parse('{"path": "door/f"}'), ctx)
    assert through.paths == (outside.resolve() / "f",)
    write = TOOLS["write_file"]
    assert write.access(write.parse('{"path": "b", "content": ""}'), ctx).kind == "write"
    shell = TOOLS["shell"]
    assert shell.access(shell.parse('{"command": "ls"}'), ctx) == Access("shell", (), "ls")


def test_describe_is_safe(ctx: ToolContext) -> None:
    shell = TOOLS["shell"]
    key = "sk-" + "a" * 40
    line = shell.describe(shell.parse(json.dumps({"command": f"curl -H 'x: {key}'\nls"})), ctx)
    assert key not in line and "\n" not in line and line.startswith("run: curl")
    read = TOOLS["read_file"]
    assert read.describe(read.parse('{"path": "src/app.py"}'), ctx) == "read src/app.py"


def test_every_builtin_has_a_schema() -> None:
    assert set(TOOLS) == {
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "glob",
        "grep",
        "shell",
        "web_fetch",
        "update_plan",
    }
    for name, tool in TOOLS.items():
        assert tool.name == name and tool.description
        assert tool.parameters["type"] == "object"
        assert tool.parameters["additionalProperties"] is False
        json.dumps(tool.parameters)


def test_outcome_bounds_its_own_summary() -> None:
    out = ToolOutcome(ok=True, output="x", summary="p" * 5000 + os.linesep)
    assert len(out.summary.encode()) <= SUMMARY_BYTES


# ---- things that would block a worker thread ----------------------------------------------


async def test_fifos_and_devices_are_refused_without_blocking(ctx: ToolContext, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    with anyio.fail_after(5):
        reading = await call("read_file", ctx, path="pipe")
        writing = await call("write_file", ctx, path="pipe", content="x")
        editing = await call("edit_file", ctx, path="pipe", old="a", new="b")
        device = await call("read_file", ctx, path="/dev/zero")
        grep_one = await call("grep", ctx, pattern="x", path="pipe")
        grep_all = await call("grep", ctx, pattern="x")
    for out in (reading, editing, device):
        assert not out.ok and "not_a_regular_file" in out.output
    assert grep_one.output == "(no matches)\n[1 binary, oversized or unreadable files skipped]"
    assert not writing.ok  # no reader: ENXIO, or refused after open
    assert grep_all.output == "(no matches)"


async def test_cancelling_a_runaway_regex_returns_at_once(ctx: ToolContext, ws: Path) -> None:
    """The search runs in a child process: a catastrophic pattern (hours on this line) neither
    holds the event loop nor outlives the cancellation."""
    (ws / "evil.txt").write_text("a" * 40 + "b\n")
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        with anyio.move_on_after(1.0) as scope:
            await call("grep", ctx, pattern="(a+)+$", path="evil.txt")
        tg.cancel_scope.cancel()
    assert scope.cancelled_caught
    assert time.monotonic() - started < 3.0
    assert ticks > 20  # the loop kept running while the search spun
    assert search_children() == []


def search_children() -> list[int]:
    """Live children of this process running the search module."""
    found = []
    for name in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if b"magi_code.tools.search" in cmdline and int(fields[1]) == os.getpid():
            found.append(int(name))
    return found


async def test_a_cancelled_walk_stops_in_its_thread(ws: Path) -> None:
    for i in range(50):
        (ws / f"d{i}").mkdir()
        for j in range(20):
            (ws / f"d{i}" / f"f{j}").write_text("")
    walk = Walk(ws, anyio.from_thread.check_cancelled)

    def work() -> int:
        anyio.from_thread.run_sync(scope.cancel)  # the host is cancelled while we walk
        return sum(1 for _ in walk.entries())

    with anyio.CancelScope() as scope:
        await anyio.to_thread.run_sync(work)
    assert scope.cancelled_caught
    assert 0 < walk.visited < 1050  # it stopped early, at a cancellation check


async def test_undecodable_names_reach_the_model_as_valid_text(ctx: ToolContext, ws: Path) -> None:
    raw = os.fsencode(ws) + b"/bad\xff.txt"
    with open(raw, "wb") as handle:
        handle.write(b"needle\n")
    for out in (
        await call("list_dir", ctx),
        await call("glob", ctx, pattern="*.txt"),
        await call("grep", ctx, pattern="needle"),
    ):
        assert out.ok
        assert "bad\ufffd.txt" in out.output
        out.output.encode("utf-8")  # strict: no lone surrogates
