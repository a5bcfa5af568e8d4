"""Time `magi-code exec` on the fixture provider, process start to exit, one-line turn.

Target (issue 15): under 150 ms median on a 2-core machine. The floor is the same interpreter
starting, printing one line and exiting, interleaved with the runs so load hits both alike.
The CPU time (user + system) of the child is printed too: it moves less with the machine's load.
"""

import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import magi_code

RUNS = 20
BASELINE = [sys.executable, "-c", "print('Hello from the fixture model.')"]


def console_script() -> list[str]:
    script = Path(sys.executable).with_name("magi-code")
    return [str(script)] if script.exists() else [sys.executable, "-m", "magi_code.cli"]


def once(command: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(wall, cpu) seconds of one run, start to exit."""
    started = time.perf_counter()
    child = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env, cwd=cwd
    )
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.stdout.close()
    assert output and os.waitstatus_to_exitcode(status) == 0
    return elapsed, usage.ru_utime + usage.ru_stime


def main() -> None:
    compileall.compile_dir(Path(magi_code.__file__).parent, quiet=1)  # as an install would
    command = [*console_script(), "exec", "say hello in one line"]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, MC_HOME=os.path.join(tmp, "home"))
        once(command, env, tmp)  # warm the page cache
        runs, floor = [], []
        for _ in range(RUNS):
            runs.append(once(command, env, tmp))
            floor.append(once(BASELINE, env, tmp))
    median, base = statistics.median(t for t, _ in runs), statistics.median(t for t, _ in floor)
    cpu = statistics.median(c for _, c in runs)
    print(
        f"exec one-line turn, start -> exit: median {median * 1000:.1f} ms over {RUNS} runs "
        f"(target < 150 ms); bare interpreter printing one line: {base * 1000:.1f} ms; "
        f"ratio {median / base:.2f}; exec CPU time: median {cpu * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
