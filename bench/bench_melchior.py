"""melchior figures: a `status` round trip over a session's socket, one `melchior tool` exec,
and listing a project that holds 1,000 live sessions. Targets: < 200 µs, < 60 ms, < 100 ms.

Runs against real `melchior serve` children in a private runtime directory. PYTHONDONTWRITEBYTECODE
may be set here; an installed package carries its bytecode, so melchior's modules are compiled
once before the exec is timed (the figure without bytecode is printed too).
"""

from __future__ import annotations

import compileall
import io
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import melchior
from melchior import client, identity, registry, tool

SESSIONS = 1000


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def _start(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    spec = identity.fork(env, "main", "bench")
    child_env = {**env, **spec["environment"]}
    proc = subprocess.Popen(
        [sys.executable, "-m", "melchior.cli", "serve"],
        env=child_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert json.loads(proc.stdout.readline())["event"] == "listening"
    return proc, child_env


def _round_trip(env: dict[str, str]) -> None:
    proc, session_env = _start(env)
    me = identity.from_env(session_env)
    assert me is not None
    directory = registry.project_dir(me.project, env)
    with client.open_as(me, directory, me.id) as conn:
        for _ in range(200):
            conn.call("status")
        samples = []
        for _ in range(3000):
            t = time.perf_counter()
            conn.call("status")
            samples.append(time.perf_counter() - t)
    baseline = _echo_baseline(directory)
    rt = _median_us(samples)
    print(f"status round trip over the socket: median {rt:.0f} µs (target < 200 µs)")
    print(f"  baseline, bare 4-byte echo over AF_UNIX to another process: {baseline:.0f} µs")
    print(f"  ratio {rt / baseline:.1f}x")
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait()


ECHO = """
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)
print("ready", flush=True)
c, _ = s.accept()
while (d := c.recv(64)):
    c.sendall(d)
"""


def _echo_baseline(directory: str) -> float:
    path = os.path.join(directory, "echo")
    proc = subprocess.Popen([sys.executable, "-c", ECHO, path], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.readline()
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    samples = []
    for i in range(3200):
        t = time.perf_counter()
        sock.sendall(b"ping")
        sock.recv(64)
        if i >= 200:
            samples.append(time.perf_counter() - t)
    sock.close()
    proc.wait()
    os.unlink(path)
    return _median_us(samples)


def _exec(env: dict[str, str]) -> None:
    proc, session_env = _start(env)
    script = shutil.which("melchior", path=os.path.dirname(sys.executable))
    command = [script] if script else [sys.executable, "-m", "melchior.cli"]
    args = [*command, "tool", "--verb=status"]

    def timed(argv: list[str], runs: int = 21) -> tuple[float, float]:
        """Median wall time and median CPU time (user + system) of one exec, in ms."""
        walls, cpus = [], []
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            done = subprocess.run(argv, env=session_env, capture_output=True)
            walls.append(time.perf_counter() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            assert done.returncode == 0, done.stdout
        return statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3

    package = os.path.dirname(melchior.__file__)
    cold = timed(args, 7) if not os.path.isdir(os.path.join(package, "__pycache__")) else None
    compileall.compile_dir(package, quiet=1)
    warm, warm_cpu = timed(args)
    bare, bare_cpu = timed([sys.executable, "-c", "pass"])
    print(f"one `melchior tool --verb=status` exec: median {warm:.1f} ms (target < 60 ms)")
    print(f"  baseline, `python -c pass`: {bare:.1f} ms; ratio {warm / bare:.1f}x")
    print(f"  CPU time (user+sys, less sensitive to load): {warm_cpu:.1f} ms vs {bare_cpu:.1f} ms")
    if cold is not None:
        print(f"  without bytecode (PYTHONDONTWRITEBYTECODE, first runs): {cold[0]:.1f} ms")
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait()


def _listing(env: dict[str, str]) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < SESSIONS + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, SESSIONS + 1024), hard))
    directory = registry.project_dir("crowd", env)
    # One process holds every socket: a listening socket answers a connect from its backlog,
    # which is all liveness asks of it.
    listeners = []
    for _ in range(SESSIONS):
        sid = registry.mint(directory, "main", None, "unused")
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(os.path.join(directory, sid))
        sock.listen(64)
        listeners.append(sock)
    caller = registry.session_ids(directory)[0]
    token = "caller-secret"
    registry.write_atomic(
        os.path.join(directory, f"{caller}.key"),
        json.dumps({"sha256": registry.digest(token), "role": "main", "minter": None}).encode(),
    )
    caller_env = {
        **env,
        identity.ENV_PROJECT: "crowd",
        identity.ENV_ID: caller,
        identity.ENV_TOKEN: token,
    }
    samples, cpu, count = [], [], 0
    for _ in range(9):
        t, c = time.perf_counter(), time.process_time()
        answer, _ = tool.run(["--verb=list"], caller_env, io.BytesIO())
        samples.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        count = answer["n"]
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "melchior.cli", "tool", "--verb=list"],
        env=caller_env,
        capture_output=True,
    )
    exec_ms = (time.perf_counter() - t) * 1e3
    assert json.loads(done.stdout)["n"] == count == SESSIONS
    listing = statistics.median(samples) * 1e3
    print(f"listing a project of {count} live sessions: median {listing:.1f} ms (target < 100 ms)")
    print(f"  CPU time of one listing: {statistics.median(cpu) * 1e3:.1f} ms")
    print(f"  the same as one `melchior tool --verb=list` exec: {exec_ms:.1f} ms")
    for sock in listeners:
        sock.close()


def main() -> None:
    run = Path(tempfile.mkdtemp(prefix="melb-", dir="/tmp"))
    run.chmod(0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAGI_MELCHIOR_")}
    env["XDG_RUNTIME_DIR"] = str(run)
    try:
        _round_trip(env)
        _exec(env)
        _listing(env)
    finally:
        shutil.rmtree(run, ignore_errors=True)


if __name__ == "__main__":
    main()
