"""One magi-code session delegating to another over A2A: `magi-code exec` calls its `a2a_peer`
tool, which reaches `magi-code a2a serve` (another MC_HOME, a token on both sides); the
remote's fixture model follows the script the tool's prompt carries. SIGINT to exec mid-call
reaches the remote turn: the remote session records the cancel."""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from magi_code.a2a.agents import RemoteAgentDef
from magi_code.a2a.remote import RemoteAgentTool
from magi_code.client import environment
from magi_code.tools.base import ToolContext, ToolOutcome

MAGI = str(Path(sys.executable).with_name("magi-code"))
TOKEN = "peer-token-7d1e2a-secret"


def fixture(*rounds: dict[str, Any]) -> str:
    return "fixture:" + json.dumps(list(rounds))


def records(home: Path) -> list[dict[str, Any]]:
    found = []
    for path in sorted((home / "sessions").glob("*.jsonl")):
        found += [json.loads(line) for line in path.read_text().splitlines() if line]
    return found


class Served:
    """A running `magi-code a2a serve` with a token: its URL and its MC_HOME."""

    def __init__(self, tmp_path: Path, settings: str = "") -> None:
        self.home, workspace = tmp_path / "remote-home", tmp_path / "remote-ws"
        self.home.mkdir()
        workspace.mkdir()
        (self.home / "settings.toml").write_text(f'[a2a]\ntokens = ["env:SERVE_TOKEN"]\n{settings}')
        errors = tmp_path / "serve.err"
        with open(errors, "wb") as sink:
            self.process = subprocess.Popen(
                [MAGI, "a2a", "serve", "--port", "0", str(workspace)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=sink,
                env=environment(self.home, SERVE_TOKEN=TOKEN),
            )
        deadline = time.monotonic() + 30
        while " at http" not in errors.read_text():
            assert self.process.poll() is None and time.monotonic() < deadline, errors.read_text()
            time.sleep(0.02)
        self.url = errors.read_text().split(" at ")[1].split()[0]

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(15)


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    served = Served(tmp_path)
    yield served.url, served.home
    served.stop()


def caller(tmp_path: Path, url: str) -> tuple[Path, Path]:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (home / "settings.toml").write_text(
        f'[a2a.agents.peer]\nurl = "{url}"\ntoken = "env:PEER_TOKEN"\n'
    )
    return home, workspace


def delegate(prompt: str) -> str:
    return fixture({"tools": [{"name": "a2a_peer", "arguments": {"prompt": prompt}}]})


def test_a_session_delegates_to_another_magi_code_over_a2a(
    remote: tuple[str, Path], tmp_path: Path
) -> None:
    url, remote_home = remote
    home, workspace = caller(tmp_path, url)
    done = subprocess.run(
        [MAGI, "exec", "--json", "--approval-mode", "full", delegate(fixture({"text": "hi back"}))],
        cwd=workspace,
        env=environment(home, PEER_TOKEN=TOKEN),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [(e["data"]["kind"], e["data"]["state"]) for e in lines if e["event"] == "activity"]
    assert ("subagent", "completed") in kinds
    mine = (home / "sessions" / f"{lines[0]['data']['session_id']}.jsonl").read_text()
    assert "hi back" in mine  # the remote's reply reached this session's model
    theirs = records(remote_home)
    assert any(r.get("type") == "run_finished" and r.get("outcome") == "completed" for r in theirs)
    assert TOKEN not in mine and TOKEN not in json.dumps(theirs)


def test_sigint_to_the_caller_cancels_the_remote_turn(
    remote: tuple[str, Path], tmp_path: Path
) -> None:
    url, remote_home = remote
    home, workspace = caller(tmp_path, url)
    slow = fixture({"text": "working on it", "hang": True})
    process = subprocess.Popen(
        [MAGI, "exec", "--approval-mode", "full", delegate(slow)],
        cwd=workspace,
        env=environment(home, PEER_TOKEN=TOKEN),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not any(r.get("type") == "user" for r in records(remote_home)):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)  # the remote turn is under way
    os.kill(process.pid, signal.SIGINT)
    process.communicate(timeout=30)
    deadline = time.monotonic() + 15
    while not any(r.get("type") == "run_finished" for r in records(remote_home)):
        assert time.monotonic() < deadline, records(remote_home)
        time.sleep(0.05)
    finished = [r for r in records(remote_home) if r.get("type") == "run_finished"]
    assert finished[-1]["outcome"] == "cancelled"


def test_a_refusal_by_the_remote_reaches_the_model_in_its_words(tmp_path: Path) -> None:
    """Over its bound of tasks per caller, the server refuses with an A2A error; the tool
    says the remote refused and what it said, and the first call goes on."""
    served = Served(tmp_path, "tasks_per_token = 1\n")
    peer = RemoteAgentTool(RemoteAgentDef("peer", served.url, "PEER_TOKEN"), {"PEER_TOKEN": TOKEN})
    slow = peer.parse(json.dumps({"prompt": fixture({"text": "working on it", "hang": True})}))
    seen: list[Any] = []

    async def emit(event: Any) -> None:
        seen.append(event)

    async def main() -> ToolOutcome:
        async with anyio.create_task_group() as group:
            group.start_soon(peer.run, slow, ToolContext(tmp_path, {}, detail=emit))
            while not seen:  # the first call's turn is under way: its text streams in
                await anyio.sleep(0.02)
            second: ToolOutcome = await peer.run(slow, ToolContext(tmp_path, {}))
            group.cancel_scope.cancel()
        return second

    try:
        refused = anyio.run(main)
    finally:
        served.stop()
    assert not refused.ok
    assert refused.output.startswith("error: the remote agent peer refused the request; it said:")
