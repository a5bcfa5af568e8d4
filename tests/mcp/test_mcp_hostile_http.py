"""MCP over HTTP under a hostile server (hostile_http_server.py), through the real
`magi-code exec`: a malformed answer fails its call only and the next call reaches the server
(on a new session when the server lost ours); answers are bounded at MESSAGE_BYTES, plain or
as server-sent events, and never decompressed, with the peak memory of the process holding the
MCP client measured (`os.wait4`); an error with a null id fails its call at once. And the same
null-id error over stdio (null_id_server.py)."""

import concurrent.futures
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from test_mcp_http import call

from magi_code.client import environment
from magi_code.mcp.definitions import canonical_digest
from magi_code.mcp.limits import MESSAGE_BYTES
from magi_code.mcp.manager import McpManager
from support.exec import MAGI_CODE

HOSTILE = str(Path(__file__).with_name("hostile_http_server.py"))
NULL_ID = str(Path(__file__).with_name("null_id_server.py"))
MIB = 1024 * 1024
# What refusing a 100 MiB answer may add to the peak memory of a run that makes one small call.
REFUSAL_GROWTH = 64 * MIB


class Hostile:
    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True)
        self.folder = folder
        self.process = subprocess.Popen(
            [sys.executable, HOSTILE, str(folder)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while not (folder / "port").exists():
            assert self.process.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{(folder / 'port').read_text()}/mcp"

    def requests(self) -> list[str]:
        path = self.folder / "requests"
        return path.read_text().splitlines() if path.exists() else []

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[Hostile]:
    server = Hostile(tmp_path / "hostile")
    yield server
    server.kill()


@dataclass
class Run:
    results: list[tuple[str, str, str]]  # each call's tool, state and result (as recorded)
    seconds: dict[str, float]  # each call's time from started to done, by tool
    peak_rss: int  # bytes, of the exec process (it holds the MCP client)


def run_exec(tmp_path: Path, url: str, *calls: tuple[str, dict[str, Any]]) -> Run:
    """One exec turn that makes `calls` in order, one per model round, against the server."""
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    definition = {"url": url, "enabled": True}
    (home / "settings.toml").write_text(
        f'[mcp]\napproved = ["{canonical_digest("web", definition)}"]\n'
        f'[mcp.servers.web]\nurl = "{url}"\nenabled = true\n'
    )
    rounds = [{"tools": [{"name": f"mcp__web__{t}", "arguments": a}]} for t, a in calls]
    prompt = "fixture:" + json.dumps([*rounds, {"text": "done"}])
    with (tmp_path / "stderr").open("wb") as stderr:
        process = subprocess.Popen(
            [MAGI_CODE, "exec", "--json", "--approval-mode", "full", prompt],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=workspace,
            env=environment(home),
        )
    events: list[tuple[float, dict[str, Any]]] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            events.append((time.monotonic(), json.loads(line)))

    reader = threading.Thread(target=read)
    reader.start()
    reader.join(60)
    if reader.is_alive():
        process.kill()
        reader.join()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0, (tmp_path / "stderr").read_text()
    started, seconds = {}, {}
    for at, event in events:
        if event["event"] == "activity":
            name = event["data"]["name"].removeprefix("mcp__web__")
            if event["data"]["state"] == "started":
                started[name] = at
            else:
                seconds[name] = at - started[name]
    session = events[0][1]["data"]["session_id"]
    records = (home / "sessions" / f"{session}.jsonl").read_text().splitlines()
    results = [
        (record["name"].removeprefix("mcp__web__"), record["state"], record["result"])
        for record in map(json.loads, records)
        if record["type"] == "tool" and "result" in record
    ]
    return Run(results, seconds, usage.ru_maxrss * 1024)


@pytest.fixture(scope="module")
def baseline_rss(tmp_path_factory: pytest.TempPathFactory) -> int:
    """The peak memory of an exec run that makes one small call."""
    folder = tmp_path_factory.mktemp("baseline")
    server = Hostile(folder / "hostile")
    try:
        run = run_exec(folder, server.url, ("echo", {"text": "small"}))
    finally:
        server.kill()
    assert run.results == [("echo", "completed", "small")]
    return run.peak_rss


# What the model is told of a failed call, in part (the whole text is calls.FAILURES).
SAYS = {
    "malformed": "error: the MCP server's HTTP answer was malformed;",
    "too_large": f"error: the MCP server's answer is over {MESSAGE_BYTES} bytes;",
    "compressed": "error: the MCP server sent a compressed answer;",
    "no_result": "error: the MCP server gave no result",
}
AFTER = ("echo", "completed", "after")


def failed(result: tuple[str, str, str], tool: str, why: str) -> bool:
    return result[:2] == (tool, "failed") and result[2].startswith(SAYS[why])


def test_a_200_kb_header_line_fails_that_call_and_the_next_reaches_the_server(
    tmp_path: Path, hostile: Hostile
) -> None:
    run = run_exec(tmp_path, hostile.url, ("long_header", {}), ("echo", {"text": "after"}))
    first, after = run.results
    assert failed(first, "long_header", "malformed") and after == AFTER
    requests = hostile.requests()
    assert requests[-2:] == ["POST /mcp tools/call echo", "DELETE /mcp"]
    assert requests.count("POST /mcp initialize") == 1  # the session itself was kept


def test_bad_chunked_framing_fails_that_call_and_the_next_reaches_the_server(
    tmp_path: Path, hostile: Hostile
) -> None:
    run = run_exec(tmp_path, hostile.url, ("bad_chunks", {}), ("echo", {"text": "after"}))
    first, after = run.results
    assert failed(first, "bad_chunks", "malformed") and after == AFTER
    assert "POST /mcp tools/call echo" in hostile.requests()


def test_a_server_that_lost_our_session_gets_a_new_one_for_the_next_call(
    tmp_path: Path, hostile: Hostile
) -> None:
    """`forget` answers malformed and drops every session: the next call's POST gets 404, so
    the session is initialized again (the spec's rule) and the call made on it."""
    run = run_exec(tmp_path, hostile.url, ("forget", {}), ("echo", {"text": "after"}))
    first, after = run.results
    assert failed(first, "forget", "malformed") and after == AFTER
    posts = [line for line in hostile.requests() if line.startswith("POST")]
    assert posts[posts.index("POST /mcp tools/call forget") + 1 :] == [
        "POST /mcp tools/call echo",  # 404: the server holds no such session
        "POST /mcp initialize",
        "POST /mcp notifications/initialized",
        "POST /mcp tools/list",
        "POST /mcp tools/call echo",
    ]


def test_a_plain_answer_of_message_bytes_passes_and_one_byte_more_is_refused(
    tmp_path: Path, hostile: Hostile
) -> None:
    run = run_exec(
        tmp_path,
        hostile.url,
        ("big", {"size": MESSAGE_BYTES}),
        ("big", {"size": MESSAGE_BYTES + 1}),
        ("echo", {"text": "after"}),
    )
    (tool, state, result), refused, after = run.results
    assert (tool, state) == ("big", "completed") and result.startswith("xxxx")
    assert failed(refused, "big", "too_large")
    assert after == AFTER


def test_a_100_mib_answer_is_refused_with_bounded_memory(
    tmp_path: Path, hostile: Hostile, baseline_rss: int
) -> None:
    run = run_exec(tmp_path, hostile.url, ("big", {"size": 100 * MIB}), ("echo", {"text": "after"}))
    assert run.peak_rss < baseline_rss + REFUSAL_GROWTH, (run.peak_rss, baseline_rss)
    first, after = run.results
    assert failed(first, "big", "too_large") and after == AFTER


def test_a_gzip_bomb_is_refused_unread_with_bounded_memory(
    tmp_path: Path, hostile: Hostile, baseline_rss: int
) -> None:
    run = run_exec(tmp_path, hostile.url, ("gzip_bomb", {}), ("echo", {"text": "after"}))
    assert run.peak_rss < baseline_rss + REFUSAL_GROWTH, (run.peak_rss, baseline_rss)
    first, after = run.results
    assert failed(first, "gzip_bomb", "compressed") and after == AFTER


def test_a_server_sent_event_of_message_bytes_passes_and_one_byte_more_is_refused(
    tmp_path: Path, hostile: Hostile
) -> None:
    run = run_exec(
        tmp_path,
        hostile.url,
        ("sse_big", {"size": MESSAGE_BYTES}),
        ("sse_big", {"size": MESSAGE_BYTES + 1}),
        ("echo", {"text": "after"}),
    )
    (tool, state, result), refused, after = run.results
    assert (tool, state) == ("sse_big", "completed") and result.startswith("xxxx")
    assert failed(refused, "sse_big", "too_large")
    assert after == AFTER


def test_a_100_mib_server_sent_event_is_refused_with_bounded_memory(
    tmp_path: Path, hostile: Hostile, baseline_rss: int
) -> None:
    run = run_exec(
        tmp_path, hostile.url, ("sse_big", {"size": 100 * MIB}), ("echo", {"text": "after"})
    )
    assert run.peak_rss < baseline_rss + REFUSAL_GROWTH, (run.peak_rss, baseline_rss)
    first, after = run.results
    assert failed(first, "sse_big", "too_large") and after == AFTER


def test_an_error_with_a_null_id_fails_its_call_at_once(tmp_path: Path, hostile: Hostile) -> None:
    run = run_exec(tmp_path, hostile.url, ("null_id", {}), ("echo", {"text": "after"}))
    first, after = run.results
    assert failed(first, "null_id", "no_result") and after == AFTER
    assert run.seconds["null_id"] < 1.0


def start(name: str, definition: dict[str, Any]) -> McpManager:
    return McpManager.start({name: definition}, approved=[canonical_digest(name, definition)])


def test_over_http_a_null_id_error_is_the_answer_of_its_own_post_only(hostile: Hostile) -> None:
    manager = start("web", {"url": hostile.url, "enabled": True})
    try:
        napping = manager.submit("web", "nap", {"seconds": 1.5})
        garbled = manager.submit("web", "null_id", {})
        assert not isinstance(garbled.result(1.0), mcp_types.CallToolResult)
        awake = napping.result(10)  # the other call in flight is answered
        assert isinstance(awake, mcp_types.CallToolResult) and not awake.is_error
    except concurrent.futures.TimeoutError:
        pytest.fail("the null-id error did not fail its call at once")
    finally:
        manager.close()


def test_over_stdio_a_null_id_error_fails_every_call_in_flight_at_once() -> None:
    """The server cannot say which request it could not read, and all share one pipe: every
    call in flight fails, so the unreadable one never waits out CALL_TIMEOUT_S."""
    manager = start("raw", {"command": sys.executable, "args": [NULL_ID], "enabled": True})
    try:
        alone = manager.submit("raw", "garble", {})
        assert not isinstance(alone.result(1.0), mcp_types.CallToolResult)
        holding = manager.submit("raw", "hold", {})
        time.sleep(0.2)  # its request is written
        garbled = manager.submit("raw", "garble", {})
        assert not isinstance(garbled.result(1.0), mcp_types.CallToolResult)
        assert not isinstance(holding.result(0.1), mcp_types.CallToolResult)
        assert call(manager, "mcp__raw__echo", '{"text": "after"}').output == "after"
    except concurrent.futures.TimeoutError:
        pytest.fail("a call in flight still waits after the null-id error")
    finally:
        manager.close()
