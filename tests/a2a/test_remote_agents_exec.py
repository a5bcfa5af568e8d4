"""Remote agents through the real `magi-code exec`: the fixture model scripts the `a2a_peer` call
to tests/a2a/remote_agent.py (a real server process): the reply reaches the model and the
token no record; the company proxy carries it; SIGINT mid-call cancels the remote task."""

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from test_remote_agents import EXEC, TOKEN, Remote, exec_settings, script, start

from magi_code.client import environment

__all__ = ["start"]  # the fixture, taken from the tool's tests


def test_exec_delegates_to_a_remote_agent_through_its_tool(
    start: Callable[..., Remote], tmp_path: Path
) -> None:
    remote = start("--token", TOKEN)
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    exec_settings(home, remote.url, token=True)
    prompt = script(
        {"tools": [{"name": "a2a_peer", "arguments": {"prompt": "from exec"}}]},
        {"text": "the peer answered"},
    )
    done = subprocess.run(
        [*EXEC, "--json", "--approval-mode", "full", prompt],
        cwd=workspace,
        env=environment(home, PEER_TOKEN=TOKEN),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [(e["data"]["kind"], e["data"]["state"]) for e in lines if e["event"] == "activity"]
    assert ("subagent", "completed") in kinds and ("tool", "completed") in kinds
    session = lines[0]["data"]["session_id"]
    stored = (home / "sessions" / f"{session}.jsonl").read_text()
    assert "echo: from exec" in stored  # the remote's reply reached the model
    assert TOKEN not in stored and TOKEN not in done.stdout.decode()


def test_the_remote_is_reached_through_the_company_proxy(
    start: Callable[..., Remote], tmp_path: Path
) -> None:
    from providers.proxy_peer import PASSWORD, CompanyProxy

    remote = start()
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    exec_settings(home, remote.url)
    prompt = script({"tools": [{"name": "a2a_peer", "arguments": {"prompt": "via proxy"}}]})
    with CompanyProxy(tmp_path / "proxy") as proxy:
        done = subprocess.run(
            [*EXEC, "--approval-mode", "full", prompt],
            cwd=workspace,
            env=environment(home, HTTP_PROXY=proxy.url()),
            capture_output=True,
            timeout=60,
        )
        seen = proxy.seen()
    assert done.returncode == 0, done.stderr
    # (the proxy logs each upstream connection it opens: the call's POST reuses the card's)
    assert seen == [f"GET 127.0.0.1:{remote.port_a}"]
    assert "echo: via proxy" in "".join(p.read_text() for p in home.rglob("*.jsonl"))
    assert PASSWORD not in "".join(p.read_text() for p in home.rglob("*.jsonl"))


def test_sigint_to_exec_mid_call_cancels_the_remote_task(
    start: Callable[..., Remote], tmp_path: Path
) -> None:
    remote = start()
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    exec_settings(home, remote.url)
    prompt = script({"tools": [{"name": "a2a_peer", "arguments": {"prompt": "hang"}}]})
    process = subprocess.Popen(
        [*EXEC, "--approval-mode", "full", prompt],
        cwd=workspace,
        env=environment(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not any(r["path"] == "/rpc" for r in remote.requests()):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.02)
    time.sleep(0.3)  # the remote task is working
    os.kill(process.pid, signal.SIGINT)
    process.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while "cancelled" not in {r.get("event") for r in remote.requests()}:
        assert time.monotonic() < deadline, remote.requests()
        time.sleep(0.05)
    assert "cancel_requested" in {r.get("event") for r in remote.requests()}
