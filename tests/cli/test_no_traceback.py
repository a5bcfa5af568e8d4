"""Ctrl-C and Ctrl-D wherever a person can press them, on a real pseudo-terminal that is the
child's controlling terminal (so Ctrl-C is a real SIGINT, as at a shell): the key prompt of
`login openai`, the wait for the browser of `login codex`, Mission Control's startup before
its first screen; `acp` on a terminal; and `magi-code "PROMPT"` opening Mission Control with
the prompt sent. Each ends cleanly: no traceback, 130 for Ctrl-C."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from magi_code.client import environment
from mission_control.terminal import Terminal
from support.exec import MAGI_CODE

CTRL_C, CTRL_D = "\x03", "\x04"
APP_STARTED = b"\x1b[?1000h"  # what Textual writes as it takes the terminal


def run(args: list[str], cwd: Path, home: Path, wait_for: str, key: str) -> tuple[int, str]:
    """Start `magi-code ARGS`, type `key` once `wait_for` is on screen; its exit code and
    everything it wrote."""
    terminal = Terminal(args, cwd, home, controlling=True)
    try:
        terminal.wait_for(wait_for)
        terminal.send(key)
        return terminal.wait_exit(), terminal.raw.decode(errors="replace")
    finally:
        terminal.close()


def test_ctrl_c_at_the_key_prompt_of_login(tmp_path: Path) -> None:
    code, said = run(
        ["login", "openai"], tmp_path, tmp_path / "home", "API key for openai:", CTRL_C
    )
    assert "Traceback" not in said and code == 130
    assert not (tmp_path / "home" / "credentials.json").exists()


def test_ctrl_d_at_the_key_prompt_of_login(tmp_path: Path) -> None:
    code, said = run(
        ["login", "openai"], tmp_path, tmp_path / "home", "API key for openai:", CTRL_D
    )
    assert "Traceback" not in said and code == 1
    assert "no API key given" in said
    assert not (tmp_path / "home" / "credentials.json").exists()


def test_ctrl_c_while_login_codex_waits_for_the_browser(tmp_path: Path) -> None:
    args = ["login", "codex", "--no-browser", "--callback-port", "0"]
    args += ["--authorize-url", "https://auth.invalid/authorize"]
    code, said = run(args, tmp_path, tmp_path / "home", "Sign in at:", CTRL_C)
    assert "Traceback" not in said and "CancelledError" not in said
    assert code == 130
    assert not (tmp_path / "home" / "credentials.json").exists()


SLOW_SERVER = """\
import sys, time
open(sys.argv[1], "w").close()
time.sleep(120)
"""


def approved_slow_mcp_server(home: Path, marker: Path) -> None:
    """An enabled, approved stdio MCP server that never answers: startup waits on it."""
    server = home.parent / "slow_server.py"
    server.write_text(SLOW_SERVER)
    env = environment(home)
    for args in (
        ["add", "slow", "--", sys.executable, str(server), str(marker)],
        ["approve", "slow"],
    ):
        subprocess.run(
            [MAGI_CODE, "mcp", *args], env=env, capture_output=True, check=True, timeout=60
        )


def test_ctrl_c_during_mission_control_startup(tmp_path: Path) -> None:
    """Startup is waiting for an MCP server (before the first screen): Ctrl-C there ends the
    launch with 130, no traceback, and the server is not left behind."""
    home, marker = tmp_path / "home", tmp_path / "server-started"
    approved_slow_mcp_server(home, marker)
    terminal = Terminal([], tmp_path, home, controlling=True)
    try:
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            terminal.pump(0.05)
        assert marker.exists(), terminal.text()
        terminal.settle(0.3)
        terminal.send(CTRL_C)
        code, said = terminal.wait_exit(), terminal.raw.decode(errors="replace")
    finally:
        terminal.close()
    assert "Traceback" not in said and code == 130, said
    deadline = time.monotonic() + 5
    while running_with(str(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running_with(str(marker)) == []


def running_with(word: str) -> list[int]:
    """The processes whose command line holds `word`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and word.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:  # it ended meanwhile
            continue
    return found


def test_ctrl_c_at_the_trust_question(tmp_path: Path) -> None:
    (tmp_path / ".magi-code").mkdir()
    (tmp_path / ".magi-code" / "settings.toml").write_text('model = "fixture-model"\n')
    code, said = run([], tmp_path, tmp_path / "home", "choice [t/c/Q]:", CTRL_C)
    assert "Traceback" not in said and code == 130


@pytest.mark.parametrize("delay", [0.1, 0.3])
def test_ctrl_c_early_in_the_launch(tmp_path: Path, delay: float) -> None:
    """Ctrl-C while the launch is still importing and loading: 130, no traceback. The first
    screen takes longer than these delays; should it come first on a fast machine, Ctrl-C is
    the app's key (it arms quitting) and this case is not what ran."""
    terminal = Terminal([], tmp_path, tmp_path / "home", controlling=True)
    try:
        terminal.settle(delay)
        terminal.send(CTRL_C)
        try:
            code = terminal.wait_exit(10)
        except subprocess.TimeoutExpired:
            if APP_STARTED in terminal.raw:  # the app took the terminal (mouse reporting on)
                pytest.skip("the first screen came up before Ctrl-C")
            raise
        said = terminal.raw.decode(errors="replace")
    finally:
        terminal.close()
    assert "Traceback" not in said and code == 130, said


def test_acp_on_a_terminal_says_it_speaks_acp_on_pipes(tmp_path: Path) -> None:
    terminal = Terminal(["acp"], tmp_path, tmp_path / "home", controlling=True)
    try:
        terminal.send("hello\n")  # what a person types into it
        code = terminal.wait_exit()
        said = terminal.raw.decode(errors="replace")
    finally:
        terminal.close()
    assert "Traceback" not in said and code == 2
    assert "acp speaks the Agent Client Protocol on stdin and stdout, which must be pipes" in said
    assert "jsonrpc" not in said
    assert not (tmp_path / "home").exists()


def test_a_prompt_argument_opens_mission_control_with_it_sent(tmp_path: Path) -> None:
    """`magi-code "PROMPT"`, as Codex and Claude Code: the prompt is the first message, its
    answer comes, and the session stays open for the next one (Ctrl-D leaves)."""
    terminal = Terminal(["say hello, please"], tmp_path, tmp_path / "home", controlling=True)
    try:
        screen = terminal.wait_for("Hello from the fixture model.", 30)
        assert "› say hello, please" in screen
        terminal.wait_for("idle ·")
        terminal.settle(0.5)
        assert terminal.process.poll() is None  # still open, unlike --prompt
        terminal.send(CTRL_D)
        assert terminal.wait_exit() == 0
    finally:
        terminal.close()
    assert "Traceback" not in terminal.raw.decode(errors="replace")


def interrupted_while_loading(script: str) -> subprocess.CompletedProcess[bytes]:
    """A Python process whose argv[0] is `script` imports magi_code, then gets a SIGINT before
    any entry point runs, as Ctrl-C in the first milliseconds of `magi-code` lands."""
    code = (
        "import os, signal, sys, time\n"
        "sys.argv[0] = sys.argv[1]\n"
        "import magi_code.cli\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "time.sleep(5)\n"
    )
    return subprocess.run([sys.executable, "-c", code, script], capture_output=True, timeout=30)


def test_ctrl_c_while_the_script_loads_ends_it_as_sigint_does() -> None:
    done = interrupted_while_loading(MAGI_CODE)
    assert done.returncode == -signal.SIGINT and b"Traceback" not in done.stderr


def test_another_program_importing_magi_code_keeps_pythons_ctrl_c() -> None:
    done = interrupted_while_loading("/usr/local/bin/some-tool")
    assert done.returncode == -signal.SIGINT and b"KeyboardInterrupt" in done.stderr


def test_after_loading_the_script_turns_ctrl_c_into_its_quiet_130(tmp_path: Path) -> None:
    code = (
        "import os, signal, sys\n"
        "sys.argv[0] = sys.argv[1]\n"
        "from magi_code import cli\n"
        "cli.dispatch = lambda args: os.kill(os.getpid(), signal.SIGINT) or 0\n"
        "sys.exit(cli.main(['--version']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, MAGI_CODE], capture_output=True, timeout=30)

    assert done.returncode == 130 and b"Traceback" not in done.stderr
