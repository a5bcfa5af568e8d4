"""Spawn `magi-code serve --stdio` and time it to the `initialize` result with 200 skills and
50 agent profiles installed in MC_HOME, against the same with none (issue 13: target within
10 ms of it; startup parses front matter only, bodies are read on demand).
"""

import compileall
import os
import statistics
import tempfile
from pathlib import Path

import magi_code
from bench.bench_startup import console_script, once

RUNS = 30
SKILLS, PROFILES = 200, 50
BODY = "Step by step instructions.\n" * 400  # ~10 KiB a body that startup must not read


def install(home: Path) -> None:
    for i in range(SKILLS):
        folder = home / "skills" / f"skill-{i:03d}"
        (folder / "scripts").mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:03d}\ndescription: Skill {i}: what it does and when to use "
            f"it.\nallowed-tools: read_file grep\n---\n{BODY}"
        )
        (folder / "scripts" / "run.py").write_text("print('resource')\n")
    (home / "agents").mkdir()
    for i in range(PROFILES):
        (home / "agents" / f"agent-{i:02d}.md").write_text(
            f"---\ndescription: Agent {i}\nmode: subagent\ntools: [read_file, grep]\n---\n{BODY}"
        )


def main() -> None:
    compileall.compile_dir(Path(magi_code.__file__).parent, quiet=1)
    command = [*console_script(), "serve", "--stdio"]
    with tempfile.TemporaryDirectory() as tmp:
        bare, full = Path(tmp) / "bare", Path(tmp) / "full"
        bare.mkdir()
        full.mkdir()
        install(full)
        envs = {
            name: dict(os.environ, MC_HOME=str(home))
            for name, home in (("none", bare), ("installed", full))
        }
        for env in envs.values():
            once(command, env, tmp)  # warm the page cache and .pyc files
        times: dict[str, list[float]] = {name: [] for name in envs}
        for _ in range(RUNS):  # interleaved, so load on the machine hits both alike
            for name, env in envs.items():
                times[name].append(once(command, env, tmp)[0])
    none, installed = (statistics.median(times[n]) * 1000 for n in ("none", "installed"))
    print(
        f"spawn -> initialize result, median over {RUNS} runs: {none:.1f} ms with no skills or "
        f"profiles; {installed:.1f} ms with {SKILLS} skills and {PROFILES} profiles; "
        f"difference {installed - none:+.1f} ms (target within 10 ms); ratio "
        f"{installed / none:.2f}"
    )


if __name__ == "__main__":
    main()
