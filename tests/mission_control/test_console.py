"""`magi-code --prompt` on a real pseudo-terminal: the same runner, rendered for a person."""

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from magi_code.client import environment


def run_in_pty(
    args: list[str], cwd: Path, home: Path, answers: dict[bytes, bytes]
) -> tuple[int, bytes]:
    leader, follower = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "magi_code.cli", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=cwd,
        env=environment(home),
        close_fds=True,
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                seen += chunk
                for question, answer in list(answers.items()):
                    if question in seen:
                        os.write(leader, answer)
                        del answers[question]
            elif process.poll() is not None:
                break
        return process.wait(10), seen.replace(b"\r\n", b"\n")
    finally:
        os.close(leader)


def prompt(*rounds: dict[str, object]) -> str:
    return "fixture:" + json.dumps(list(rounds))


def test_prompt_streams_a_reply_and_runs_tools(tmp_path: Path) -> None:
    text = prompt(
        {"text": "looking", "deltas": 3, "tools": [{"name": "list_dir", "arguments": {}}]},
        {"text": "finished"},
    )
    code, out = run_in_pty(["--prompt", text], tmp_path, tmp_path / "home", {})
    assert code == 0
    assert b"looking" in out and b"finished" in out
    assert b"[list_dir completed]" in out
    sessions = list((tmp_path / "home" / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1  # the same session store as the local agent


def test_prompt_asks_for_approval_at_the_terminal(tmp_path: Path) -> None:
    write = {"name": "write_file", "arguments": {"path": "a.txt", "content": "yes"}}
    code, out = run_in_pty(
        ["--prompt", prompt({"tools": [write]}, {"text": "wrote it"})],
        tmp_path,
        tmp_path / "home",
        {b"[y/N]": b"y\n"},
    )
    assert code == 0, out
    assert (tmp_path / "a.txt").read_text() == "yes"


def test_prompt_denies_by_default(tmp_path: Path) -> None:
    write = {"name": "write_file", "arguments": {"path": "b.txt", "content": "no"}}
    code, out = run_in_pty(
        ["--prompt", prompt({"tools": [write]}, {"text": "ok"})],
        tmp_path,
        tmp_path / "home",
        {b"[y/N]": b"\n"},
    )
    assert code == 0, out
    assert not (tmp_path / "b.txt").exists()
    assert b"[write_file failed]" in out
