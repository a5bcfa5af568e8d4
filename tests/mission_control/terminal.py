"""The real `magi-code` binary on a real pseudo-terminal, read through a terminal emulator
(pyte), so tests see the screen a person would see and type what a person would type."""

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pyte

from magi_code.client import environment
from magi_code.limits import APPROVAL_ARM_MS

BINARY = str(Path(sys.executable).parent / "magi-code")
FRAME_GAP_S = 0.03  # no output this long: the frame being written has arrived
FRAME_READ_S = 0.5  # an app redrawing without pause is read this long at most


def prompt(*rounds: dict[str, object]) -> str:
    return "fixture:" + json.dumps(list(rounds))


class Terminal:
    def __init__(
        self,
        args: list[str],
        cwd: Path,
        home: Path,
        columns: int = 110,
        rows: int = 34,
        *,
        controlling: bool = False,
        first_run: bool = False,
    ) -> None:
        """`controlling`: the terminal is the child's controlling terminal, so Ctrl-C and
        Ctrl-D typed outside raw mode act as at a shell (SIGINT; end of input). `first_run`:
        Mission Control may open its first-run screen (off: the fixture answers, as before)."""
        self.leader, follower = os.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.screen = pyte.Screen(columns, rows)
        self.screen.write_process_input = self.send  # answers the app's terminal queries
        self.stream = pyte.ByteStream(self.screen)
        self.raw = b""
        self.process = subprocess.Popen(
            [BINARY, *args],
            stdin=follower,
            stdout=follower,
            stderr=follower,
            cwd=cwd,
            env=environment(
                home,
                TERM="xterm-256color",
                COLORTERM="truecolor",
                COLUMNS=str(columns),  # pytest-xdist's workers set 80x24, which would win
                LINES=str(rows),
                **({} if first_run else {"MC_NO_FIRST_RUN": "1"}),
            ),
            close_fds=True,
            start_new_session=True,
            preexec_fn=(lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0)) if controlling else None,
        )
        os.close(follower)

    def send(self, data: str | bytes) -> None:
        os.write(self.leader, data.encode() if isinstance(data, str) else data)

    def pump(self, seconds: float) -> None:
        ready, _, _ = select.select([self.leader], [], [], seconds)
        if ready:
            try:
                chunk = os.read(self.leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            self.raw += chunk
            self.stream.feed(chunk)

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def wait_for(self, needle: str, seconds: float = 15.0) -> str:
        """The screen once `needle` is on it and the frame that drew it has arrived whole."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if needle in self.text():
                self.finish_frame()
                return self.text()
            self.pump(0.05)
        raise AssertionError(f"{needle!r} never appeared on screen:\n{self.text()}")

    def wait_for_match(self, pattern: str, seconds: float = 15.0) -> re.Match[str]:
        """The first match of the regular expression `pattern` on screen, once there is one
        (a line half drawn does not match a pattern that spans it)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if re.search(pattern, self.text()) is not None:
                self.finish_frame()
                found = re.search(pattern, self.text())
                assert found is not None, f"{pattern!r} matched a frame the next one undid"
                return found
            self.pump(0.05)
        raise AssertionError(f"{pattern!r} never matched the screen:\n{self.text()}")

    def finish_frame(self) -> None:
        """Read on until the output pauses (FRAME_GAP_S; at most FRAME_READ_S): a frame larger
        than one read arrives in parts, and the first may hold the needle but not the rest."""
        deadline = time.monotonic() + FRAME_READ_S
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.leader], [], [], FRAME_GAP_S)
            if not ready:
                return
            self.pump(0)

    def settle(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.pump(0.02)

    def wait_exit(self, seconds: float = 15.0) -> int:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.process.poll() is None:
            self.pump(0.05)
        self.pump(0.05)
        return self.process.wait(1)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
        os.close(self.leader)


def run_in_pty(
    args: list[str], cwd: Path, home: Path, answers: dict[bytes, bytes]
) -> tuple[int, bytes]:
    """Run to the end, typing each answer once its question is on screen (and the approval is
    armed); the exit code and the raw output."""
    terminal = Terminal(args, cwd, home)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and terminal.process.poll() is None:
            terminal.pump(0.05)
            for question, answer in list(answers.items()):
                if question.decode().rstrip() in terminal.text():
                    terminal.settle(APPROVAL_ARM_MS / 1000 + 0.1)  # a typed-ahead key is no answer
                    terminal.send(answer)
                    del answers[question]
        return terminal.wait_exit(), terminal.raw
    finally:
        terminal.close()
