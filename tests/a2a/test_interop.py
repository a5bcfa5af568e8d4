"""Interop: magi-code's `a2a_NAME` tool, through `magi-code exec`, calls an A2A agent no one here
wrote: the A2A project's own Hello World sample (tests/a2a/helloworld, unmodified; it listens
on 127.0.0.1:9999, as published)."""

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from magi_code.client import environment

SAMPLE = Path(__file__).parent / "helloworld"
PORT = 9999  # the sample's own
MAGI = str(Path(sys.executable).with_name("magi-code"))


@pytest.fixture
def hello_world() -> Iterator[str]:
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", PORT)) == 0:
            pytest.skip(f"port {PORT}, where the sample agent listens, is taken")
    process = subprocess.Popen(
        [sys.executable, "__main__.py"],
        cwd=SAMPLE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{PORT}"
    deadline = time.monotonic() + 20
    while True:
        assert process.poll() is None and time.monotonic() < deadline
        try:
            urllib.request.urlopen(f"{url}/.well-known/agent-card.json", timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    yield url
    process.terminate()
    process.wait(10)


def test_exec_calls_the_a2a_sample_agent(hello_world: str, tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (home / "settings.toml").write_text(f'[a2a.agents.hello]\nurl = "{hello_world}"\n')
    call = {"name": "a2a_hello", "arguments": {"prompt": "how are you"}}
    prompt = "fixture:" + json.dumps([{"tools": [call]}, {"text": "it greeted us"}])
    done = subprocess.run(
        [MAGI, "exec", "--json", "--approval-mode", "full", prompt],
        cwd=workspace,
        env=environment(home),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [(e["data"]["kind"], e["data"]["state"]) for e in lines if e["event"] == "activity"]
    assert ("subagent", "completed") in kinds
    stored = (home / "sessions" / f"{lines[0]['data']['session_id']}.jsonl").read_text()
    assert "Hello, World! I have received your request (how are you)" in stored
