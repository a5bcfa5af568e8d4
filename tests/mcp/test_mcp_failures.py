"""An MCP server that fails, through the real binary: at startup `exec` names it with its
reason (the bounded, redacted tail of a stdio server's stderr, an HTTP server's status) and
fails, or with `--skip-failed-mcp` continues without it after one warning; `serve --stdio`
keeps its bare `mcp_unavailable`. A stdio server that stopped after startup is restarted for
the next call, which tells the model so; a failed restart, or a stop past RESTARTS, fails the
server for good (fragile_server.py)."""

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from magi_code.client import ErrorResponse, LocalAgentClient, environment
from magi_code.mcp.definitions import canonical_digest
from magi_code.mcp.errors import McpUnavailable
from magi_code.mcp.failures import StderrTail
from magi_code.mcp.limits import RESTARTS, STDERR_TAIL_BYTES, STDERR_TAIL_LINES
from magi_code.mcp.manager import McpManager
from support.exec import exec_run

FRAGILE = str(Path(__file__).with_name("fragile_server.py"))
SECRET = "sk-abcdefghijklmnopqrstuvwxyz0123456789"


def settings(home: Path, name: str, definition: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    lines = [f'[mcp]\napproved = ["{canonical_digest(name, definition)}"]', f"[mcp.servers.{name}]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in definition.items()]
    (home / "settings.toml").write_text("\n".join(lines).replace("True", "true") + "\n")


def stdio(home: Path, mode: str) -> None:
    definition = {"command": sys.executable, "args": [FRAGILE, mode, str(home)], "enabled": True}
    settings(home, "fragile", definition)


def starts(home: Path) -> int:
    path = home / "starts"
    return len(path.read_text().split()) if path.exists() else 0


def run_exec(tmp_path: Path, *flags: str, prompt: str = "hi") -> subprocess.CompletedProcess[str]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return exec_run(
        ["--approval-mode", "full", *flags, prompt],
        workspace,
        tmp_path / "home",
        text=True,
        timeout=120,
    )


def tool_results(tmp_path: Path, *calls: tuple[str, dict[str, Any]]) -> list[str]:
    """One exec turn making `calls` in order, one per model round, each round after the first
    waiting a second first (a server that answered, then died, is gone by then)."""
    rounds: list[dict[str, Any]] = [
        {"tools": [{"name": f"mcp__fragile__{tool}", "arguments": arguments}]}
        for tool, arguments in calls
    ]
    for later in rounds[1:]:
        later.update(text=".", delay_ms=1000)
    done = run_exec(tmp_path, "--json", prompt="fixture:" + json.dumps([*rounds, {"text": "ok"}]))
    assert done.returncode == 0, done.stderr
    session = json.loads(done.stdout.splitlines()[0])["data"]["session_id"]
    records = (tmp_path / "home" / "sessions" / f"{session}.jsonl").read_text().splitlines()
    return [
        record["result"]
        for record in map(json.loads, records)
        if record["type"] == "tool" and "result" in record
    ]


def test_exec_names_a_stdio_server_that_fails_with_its_redacted_stderr(tmp_path: Path) -> None:
    stdio(tmp_path / "home", "fail")
    done = run_exec(tmp_path)
    assert done.returncode == 2
    said = done.stderr
    assert "MCP server 'fragile' failed to start: it exited with status 1" in said
    assert "loading the index" in said and "fatal: API_KEY=[REDACTED] refused" in said
    assert SECRET not in said and "approve" not in said  # it is approved already
    assert "--skip-failed-mcp" in said


def test_the_stderr_tail_keeps_the_last_lines_and_bytes(tmp_path: Path) -> None:
    stdio(tmp_path / "home", "chatty-fail")  # 100 lines: line 0 .. line 99
    said = run_exec(tmp_path).stderr
    first = 100 - STDERR_TAIL_LINES
    assert f"  line {first}\n" in said and "  line 99\n" in said
    assert f"  line {first - 1}\n" not in said
    tail = StderrTail()
    tail.feed(b"x" * (STDERR_TAIL_BYTES - 1) + b"a")
    tail.feed(b"b")
    assert tail.text() == "x" * (STDERR_TAIL_BYTES - 2) + "ab"  # exactly the last bytes


def test_skip_failed_mcp_warns_once_and_the_turn_completes(tmp_path: Path) -> None:
    stdio(tmp_path / "home", "fail")
    done = run_exec(tmp_path, "--skip-failed-mcp")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()  # the model's answer
    warnings = [line for line in done.stderr.splitlines() if "fragile" in line]
    assert len(warnings) == 1
    assert (
        "warning: continuing without MCP server 'fragile': it exited with status 1" in (warnings[0])
    )
    assert SECRET not in done.stderr


def test_a_server_that_misses_its_deadline_says_so_with_its_stderr(tmp_path: Path) -> None:
    args = [FRAGILE, "slow", str(tmp_path)]
    definition = {"command": sys.executable, "args": args, "enabled": True}
    approved = [canonical_digest("slow", definition)]
    with pytest.raises(McpUnavailable) as caught:
        McpManager.start({"slow": definition}, approved=approved, connect_s=0.5)
    assert caught.value.server == "slow"
    assert caught.value.reason == (
        "it did not finish starting within 0.5 s; its stderr ended with:\n  warming up the cache"
    )


class Answers500(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(500)
        self.send_header("Content-Length", "14")
        self.end_headers()
        self.wfile.write(b"secret details")

    do_GET = do_DELETE = do_POST

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def failing_http() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answers500)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    server.shutdown()
    server.server_close()


def test_exec_names_an_http_server_with_its_status(tmp_path: Path, failing_http: str) -> None:
    settings(tmp_path / "home", "web", {"url": failing_http, "enabled": True})
    done = run_exec(tmp_path)
    assert done.returncode == 2
    assert "MCP server 'web' failed to start: it answered HTTP 500" in done.stderr
    assert "secret details" not in done.stderr


def test_serve_stdio_stays_strict_and_says_nothing_more(tmp_path: Path) -> None:
    stdio(tmp_path / "home", "fail")
    with LocalAgentClient.spawn(cwd=tmp_path, env=environment(tmp_path / "home")) as agent:
        with pytest.raises(ErrorResponse) as caught:
            agent.request("initialize", {"required_capabilities": []})
        assert caught.value.code == "mcp_unavailable"
        wire = json.dumps(agent.frames)
    assert starts(tmp_path / "home") == 1  # it did try the server
    for leak in ("fragile", "status 1", "loading", "REDACTED", "failed to start"):
        assert leak not in wire


def test_a_killed_stdio_server_is_restarted_for_the_next_call(tmp_path: Path) -> None:
    stdio(tmp_path / "home", "fragile")
    results = tool_results(tmp_path, ("answer_then_die", {}), ("echo", {"text": "again"}))
    assert results[0] == "goodbye"
    assert "the MCP server fragile had stopped; it was restarted for this call" in results[1]
    assert "again" in results[1]
    assert starts(tmp_path / "home") == 2


def test_a_server_that_cannot_restart_is_failed_for_good(tmp_path: Path) -> None:
    stdio(tmp_path / "home", "once")  # every start after the first fails at once
    results = tool_results(
        tmp_path,
        ("answer_then_die", {}),
        ("echo", {"text": "echo-2"}),
        ("echo", {"text": "echo-3"}),
    )
    assert results[0] == "goodbye"
    for later in results[1:]:
        assert "could not be started again" in later and "echo-" not in later
    assert starts(tmp_path / "home") == 2  # one restart was tried, never another


def test_restarts_are_bounded(tmp_path: Path) -> None:
    stdio(tmp_path / "home", "fragile")
    deaths = [("answer_then_die", {})] * (RESTARTS + 1)  # the first start, then RESTARTS more
    results = tool_results(tmp_path, *deaths, ("echo", {"text": "one too many"}))
    assert all("goodbye" in result for result in results[:-1])  # RESTARTS restarts pass
    assert "could not be started again" in results[-1]  # the one after them is refused
    assert starts(tmp_path / "home") == RESTARTS + 1


MC_QUESTION = b"choice [c/Q]: "
READY = b"idle"  # Mission Control's status line once it is up


def test_mission_control_asks_to_continue_without_a_failed_server(tmp_path: Path) -> None:
    from mission_control.terminal import run_in_pty

    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    stdio(home, "fail")
    code, out = run_in_pty([], work, home, {MC_QUESTION: b"c\n", READY: b"\x04"})
    assert code == 0, out
    assert out.count(MC_QUESTION) == 1
    assert b"'fragile': it exited with status 1" in out and b"loading the index" in out
    assert SECRET.encode() not in out


def test_mission_control_quits_at_a_failed_server(tmp_path: Path) -> None:
    from mission_control.terminal import run_in_pty

    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    stdio(home, "fail")
    code, out = run_in_pty([], work, home, {MC_QUESTION: b"q\n"})
    assert code == 1 and READY not in out, out
