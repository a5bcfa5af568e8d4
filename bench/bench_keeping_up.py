"""Mission Control keeps up with the model: rendering never slows a run down (issue 29).

A local mock provider streams one 600-delta Markdown reply at 50 deltas a second (12 s).

1. Wall time, process start to exit: `magi-code exec PROMPT` (stdout a pipe) against
   `magi-code --prompt PROMPT` on a real pseudo-terminal (its output read as fast as it comes,
   as a terminal would). Target: Mission Control at most 1.1x exec. Their CPU times are
   printed too, with the machine's load average: the wall times move with the load.
2. Keystroke echo while that reply streams in an open Mission Control: one key every 150 ms,
   timed from the write to the pty until its bytes come back (target: under 50 ms). The keys
   are Cyrillic letters, whose UTF-8 bytes appear nowhere else in the output (an ASCII letter
   would match an escape sequence or the streamed text).
"""

import os
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.bench_mission_control import Pty, environment
from bench.mock_responses import MockResponses

DELTAS = 600
PER_SECOND = 50.0
RUNS = 3
KEYS = "абвгдежзийклмнопрстуфхцчшщ"
KEY_GAP_S = 0.15
PROMPT = "explain the release process"  # lower case: nothing else to type
# The reply: Markdown a model writes (headings, lists, code, emphasis), cut in model-sized
# deltas of a few characters.
REPLY = (
    "## release steps\n\nfirst, *check* the `changelog` and the version in "
    "`pyproject.toml`; then:\n\n- run the **whole** test suite\n- build the wheel with "
    "`make build`\n- tag the commit\n\n```sh\ngit tag -s v1.2.3 -m 'v1.2.3'\ngit push "
    "--tags\n```\n\nthe ci publishes it once the tag lands.\n\n"
)


def reply_deltas() -> list[str]:
    text = REPLY * (DELTAS * 5 // len(REPLY) + 1)
    return [text[n * 5 : n * 5 + 5] for n in range(DELTAS)]


def settings(home: Path, url: str) -> None:
    home.mkdir()
    (home / "settings.toml").write_text(
        'provider = "mock"\nmodel = "mock-model"\n[providers.mock]\n'
        f'wire_api = "openai-responses"\nbase_url = "{url}"\nmodels = ["mock-model"]\n'
    )


def exec_run(binary: str, cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of `magi-code exec PROMPT`, start to exit."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [binary, "exec", PROMPT],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdout is not None
    said = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.stdout.close()
    assert os.waitstatus_to_exitcode(status) == 0 and said, "exec failed"
    return elapsed, usage.ru_utime + usage.ru_stime


def mission_control_run(binary: str, cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of `magi-code --prompt PROMPT` on a pty, start to exit; a thread
    reads the pty as fast as the app writes, as a terminal would."""
    started = time.perf_counter()
    pty = Pty([binary, "--prompt", PROMPT], cwd, env)
    reader = threading.Thread(target=read_to_end, args=(pty.leader,), daemon=True)
    reader.start()
    _, status, usage = os.wait4(pty.process.pid, 0)
    elapsed = time.perf_counter() - started
    pty.process.returncode = os.waitstatus_to_exitcode(status)
    os.close(pty.leader)
    reader.join()
    assert pty.process.returncode == 0, f"Mission Control exited {pty.process.returncode}"
    return elapsed, usage.ru_utime + usage.ru_stime


def read_to_end(leader: int) -> None:
    while True:
        try:
            if not os.read(leader, 1 << 16):
                return
        except OSError:  # EIO: the app is gone
            return


def echoes_while_streaming(binary: str, cwd: str, env: dict[str, str]) -> list[float]:
    """Echo times of KEYS typed KEY_GAP_S apart once the reply shows. While it streams, the
    output is read raw and never parsed (the emulator would take CPU from the app)."""
    pty = Pty([binary], cwd, env)
    try:
        pty.until("idle")
        os.write(pty.leader, PROMPT.encode() + b"\r")
        pty.until("release steps")
        started = time.perf_counter()
        echoed = []
        for key in KEYS:
            echoed.append(raw_echo(pty.leader, key) * 1000)
            raw_drain(pty.leader, KEY_GAP_S)
        streamed = time.perf_counter() - started
        assert streamed < DELTAS / PER_SECOND - 1, "the reply ended before the last key"
        return echoed
    finally:
        pty.close()


def raw_echo(leader: int, key: str, seconds: float = 5.0) -> float:
    """Type `key`; the time until its bytes come back."""
    wanted, seen = key.encode(), b""
    started = time.perf_counter()
    os.write(leader, wanted)
    while wanted not in seen:
        if time.perf_counter() - started > seconds:
            raise TimeoutError(key)
        ready, _, _ = select.select([leader], [], [], 0.005)
        if ready:
            seen = seen[-len(wanted) :] + os.read(leader, 1 << 16)
    return time.perf_counter() - started


def raw_drain(leader: int, seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    while (left := deadline - time.perf_counter()) > 0:
        ready, _, _ = select.select([leader], [], [], left)
        if ready:
            os.read(leader, 1 << 16)


def main() -> None:
    binary = str(Path(sys.executable).with_name("magi-code"))
    with MockResponses(per_second=PER_SECOND) as mock, tempfile.TemporaryDirectory() as tmp:
        mock.deltas = reply_deltas()
        workspace = Path(tmp, "ws")
        workspace.mkdir()
        home = Path(tmp, "home")
        settings(home, mock.url)
        env = environment(str(home))
        exec_runs, ours = [], []
        load = os.getloadavg()[0]
        for _ in range(RUNS):  # interleaved, so load on the machine hits both alike
            exec_runs.append(exec_run(binary, str(workspace), env))
            ours.append(mission_control_run(binary, str(workspace), env))
        exec_wall = statistics.median(wall for wall, _ in exec_runs)
        ours_wall = statistics.median(wall for wall, _ in ours)
        exec_cpu = statistics.median(cpu for _, cpu in exec_runs)
        ours_cpu = statistics.median(cpu for _, cpu in ours)
        print(
            f"{DELTAS}-delta reply at {PER_SECOND:g} deltas/s, start -> exit: exec median "
            f"{exec_wall:.2f} s, Mission Control median {ours_wall:.2f} s (max "
            f"{max(wall for wall, _ in ours):.2f} s; {RUNS} runs each); ratio "
            f"{ours_wall / exec_wall:.3f} (target <= 1.1); CPU time: exec {exec_cpu:.2f} s, "
            f"Mission Control {ours_cpu:.2f} s; load average {load:.1f} on "
            f"{os.cpu_count()} CPUs at the start"
        )
        echoed = echoes_while_streaming(binary, str(workspace), env)
        print(
            f"keystroke echo while it streams: median {statistics.median(echoed):.1f} ms, "
            f"max {max(echoed):.1f} ms ({len(echoed)} keys, {KEY_GAP_S * 1000:.0f} ms apart; "
            "target < 50 ms)"
        )


if __name__ == "__main__":
    main()
