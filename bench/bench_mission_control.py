"""Mission Control on a real pseudo-terminal (read through pyte), as a person meets it.

1. Launch -> input-ready: from spawning `magi-code` until its status line says `idle` under
   the prompt box (target: under 400 ms). Baseline: a bare Textual app with one TextArea, the
   framework's own floor, in the same run.
2. Keystroke echo while a 10,000-delta reply streams: one key every 150 ms, timed from the
   write to the pty until the screen shows it in the prompt (target: under 50 ms). Baseline:
   the same keys at idle.
"""

import fcntl
import os
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import pyte

LAUNCHES = 10
KEYS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"  # nothing else on screen is upper case
COLUMNS, ROWS = 120, 40
BARE_APP = (
    "from textual.app import App\n"
    "from textual.widgets import Static, TextArea\n"
    "class Bare(App):\n"
    "    def compose(self):\n"
    "        yield TextArea()\n"
    "        yield Static('idle')\n"
    "Bare().run(inline=True)\n"
)


class Pty:
    def __init__(self, command: list[str], cwd: str, env: dict[str, str]) -> None:
        self.leader, follower = os.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.screen.write_process_input = lambda data: os.write(self.leader, data.encode())
        self.stream = pyte.ByteStream(self.screen)
        self.process = subprocess.Popen(
            command, stdin=follower, stdout=follower, stderr=follower, cwd=cwd, env=env
        )
        os.close(follower)

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def until(self, needle: str, seconds: float = 30.0) -> float:
        """Read until `needle` is on screen; the time it took."""
        started = time.perf_counter()
        while needle not in self.text():
            if time.perf_counter() - started > seconds:
                raise TimeoutError(needle)
            ready, _, _ = select.select([self.leader], [], [], 0.01)
            if ready:
                try:
                    self.stream.feed(os.read(self.leader, 1 << 16))
                except OSError:
                    raise TimeoutError(needle) from None
        return time.perf_counter() - started

    def echo(self, key: str, seconds: float = 5.0) -> float:
        """Type `key` and read raw output until it comes back; the time it took. Raw bytes,
        not the emulator: pyte's parsing of streamed frames would be timed too."""
        started = time.perf_counter()
        os.write(self.leader, key.encode())
        seen = b""
        while key.encode() not in seen:
            if time.perf_counter() - started > seconds:
                raise TimeoutError(key)
            ready, _, _ = select.select([self.leader], [], [], 0.005)
            if ready:
                seen += os.read(self.leader, 1 << 16)
        elapsed = time.perf_counter() - started
        self.stream.feed(seen)
        return elapsed

    def drain(self, seconds: float) -> None:
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            ready, _, _ = select.select([self.leader], [], [], 0.005)
            if ready:
                self.stream.feed(os.read(self.leader, 1 << 16))

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
        os.close(self.leader)


def environment(home: str) -> dict[str, str]:
    """A fresh MC_HOME, as a person's day-to-day launch sees it (no first-run screen)."""
    return dict(
        os.environ,
        MC_HOME=home,
        MC_NO_FIRST_RUN="1",
        TERM="xterm-256color",
        COLORTERM="truecolor",
    )


def launch_ms(command: list[str], cwd: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    pty = Pty(command, cwd, env)
    try:
        pty.until("idle")
        return (time.perf_counter() - started) * 1000
    finally:
        pty.close()


def echoes(command: list[str], cwd: str, env: dict[str, str], *, streaming: bool) -> list[float]:
    """Echo times of KEYS typed 150 ms apart, at idle or while a 10,000-delta reply streams."""
    pty = Pty(command, cwd, env)
    try:
        pty.until("idle")
        if streaming:
            script = 'fixture:[{"text": "word ", "repeat": 10000, "delay_ms": 1}]'
            os.write(pty.leader, script.encode() + b"\r")
            pty.until("word word")
        echoes = []
        for key in KEYS:
            echoes.append(pty.echo(key) * 1000)
            pty.drain(0.15)
            if streaming and "running" not in pty.text():
                break  # the reply ended: later keys would not be "while it streams"
        return echoes
    finally:
        pty.close()


def main() -> None:
    binary = str(Path(sys.executable).with_name("magi-code"))
    with tempfile.TemporaryDirectory(prefix="mcbench") as tmp:  # lower-case path
        workspace = Path(tmp, "ws")
        workspace.mkdir()
        env = environment(str(Path(tmp, "home")))
        launch_ms([binary], str(workspace), env)  # warm the file cache and bytecode
        ours = [launch_ms([binary], str(workspace), env) for _ in range(LAUNCHES)]
        bare = [launch_ms([sys.executable, "-c", BARE_APP], str(workspace), env) for _ in range(5)]
        ours_median, bare_median = statistics.median(ours), statistics.median(bare)
        print(
            f"launch -> input-ready: median {ours_median:.0f} ms, max {max(ours):.0f} ms "
            f"({LAUNCHES} runs; target < 400 ms); bare Textual app {bare_median:.0f} ms; "
            f"ratio {ours_median / bare_median:.2f}"
        )
        idle = echoes([binary], str(workspace), env, streaming=False)
        busy = echoes([binary], str(workspace), env, streaming=True)
        print(
            f"keystroke echo while a 10,000-delta reply streams: median "
            f"{statistics.median(busy):.1f} ms, max {max(busy):.1f} ms "
            f"({len(busy)} keys; target < 50 ms); at idle median "
            f"{statistics.median(idle):.1f} ms; ratio "
            f"{statistics.median(busy) / statistics.median(idle):.2f}"
        )


if __name__ == "__main__":
    main()
