"""Spawn `magi-code serve --stdio` and time it to the `initialize` result; RSS after. Then the
memory of a session's whole process tree (the agent and its `melchior serve` child) after one
turn on the fixture provider.

Target (issue 2): at most 50 ms median on a 2-core machine, at least 20 runs.
"""

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import magi_code
from bench.peer import tree, tree_rss_mib
from magi_code.client import LocalAgentClient

RUNS = 30
INIT = (
    b'{"protocol":"magi-code.local-agent","version":1,"id":"i","method":"initialize",'
    b'"params":{"required_capabilities":["status"]}}\n'
)


def console_script() -> list[str]:
    script = Path(sys.executable).with_name("magi-code")
    return [str(script)] if script.exists() else [sys.executable, "-m", "magi_code.cli"]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def once(command: list[str], env: dict[str, str], cwd: str) -> tuple[float, int]:
    started = time.perf_counter()
    child = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(INIT)
    child.stdin.flush()
    line = child.stdout.readline()
    elapsed = time.perf_counter() - started
    assert "result" in json.loads(line), line
    rss = rss_kib(child.pid)
    child.stdin.close()
    child.wait()
    return elapsed, rss


def after_one_turn(env: dict[str, str], cwd: str) -> tuple[int, float]:
    """(processes, MiB of RSS) of the agent's whole tree once a session has run one turn."""
    with LocalAgentClient.spawn(cwd=Path(cwd), env=env) as child:
        child.request("initialize", {"required_capabilities": ["turn.start"]})
        session_id = child.request("session.create")["session_id"]
        child.request("turn.start", {"session_id": session_id, "prompt": "hi"})
        while child.next_event(30).name != "run.finished":
            pass
        pid = child.process.pid
        return len(tree(pid)), tree_rss_mib(pid)


# The floor: the same interpreter answering one line with nothing imported beyond json.
BASELINE = [
    sys.executable,
    "-c",
    "import sys,json;sys.stdin.readline();print(json.dumps({'result':1}),flush=True);"
    "sys.stdin.read()",
]


def main() -> None:
    # An installed package has bytecode (pip compiles on install); this machine sets
    # PYTHONDONTWRITEBYTECODE, so compile ours as an install would, then time the start.
    compileall.compile_dir(Path(magi_code.__file__).parent, quiet=1)
    command = [*console_script(), "serve", "--stdio"]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, MC_HOME=os.path.join(tmp, "home"))
        once(command, env, tmp)  # warm the page cache and .pyc files
        runs, floor = [], []
        for _ in range(RUNS):  # interleaved, so load on the machine hits both alike
            runs.append(once(command, env, tmp))
            floor.append(once(BASELINE, env, tmp)[0])
    median = statistics.median(t for t, _ in runs)
    base = statistics.median(floor)
    print(
        f"spawn -> initialize result: median {median * 1000:.1f} ms over {RUNS} runs "
        f"(target <= 50 ms); bare interpreter answering one line: {base * 1000:.1f} ms; "
        f"ratio {median / base:.2f}"
    )
    print(f"RSS after initialize: median {statistics.median(r for _, r in runs) / 1024:.1f} MiB")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, MC_HOME=os.path.join(tmp, "home"))
        trees = [after_one_turn(env, tmp) for _ in range(5)]
    processes = max(n for n, _ in trees)
    print(
        f"a session's whole process tree after one turn ({processes} processes: the agent and "
        f"its melchior serve): median {statistics.median(m for _, m in trees):.1f} MiB RSS"
    )


if __name__ == "__main__":
    main()
