"""The MCP client against the reference server `@modelcontextprotocol/server-everything`
(installed by npm, conftest.py), through the real `magi-code exec`, over stdio and streamable
HTTP: an image result reaches each wire as its image part; embedded resources give their text,
resource links their URI and name; the server's resources are listed and read by the tools of
ours; roots are the workspace; exec declares no elicitation (nobody can answer), so the
server does not offer its eliciting tool; progress comes live (`tool.progress`) and ends in
the activity summary; the server's instructions reach the model under its name;
`readOnlyHint` tools are decided as reads (never wider than the rules); the task-only tool is
not offered; a cut result says how much was cut."""

import base64
import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from magi_code.mcp.definitions import canonical_digest
from magi_code.mcp.limits import INSTRUCTIONS_CHARS
from magi_code.mcp.manager import McpManager
from magi_code.mcp.results import view
from magi_code.tools.limits import OUTPUT_BYTES
from providers.local_server import LocalServer, Reply
from support.exec import exec_run, json_lines, run_magi_code
from support.sessions import records
from support.settings import local_provider_settings
from support.wires import WIRES, image_parts

SSE = {"content-type": "text/event-stream"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def settings(definition: dict[str, Any], extra: str = "") -> str:
    table = "\n".join(f"{key} = {json.dumps(value)}" for key, value in definition.items())
    digest = canonical_digest("ev", definition)
    return f'{extra}[mcp]\napproved = ["{digest}"]\n[mcp.servers.ev]\n{table}\n'


def stdio(entry: Path) -> dict[str, Any]:
    return {"command": "node", "args": [str(entry), "stdio"], "enabled": True}


def run(
    tmp_path: Path, text: str, prompt: str, *mode: str, status: int = 0
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One exec turn ending with `status`: its events, and the session's records."""
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    (home / "settings.toml").write_text(text)
    done = exec_run(["--json", *mode, prompt], workspace, home, timeout=120)
    assert done.returncode == status, done.stderr
    events = json_lines(done.stdout)
    return events, records(home, events[0]["data"]["session_id"])


def scripted(*calls: tuple[str, dict[str, Any]]) -> str:
    """A fixture-model prompt making `calls` in order, one per round."""
    rounds = [{"tools": [{"name": name, "arguments": args}]} for name, args in calls]
    return "fixture:" + json.dumps([*rounds, {"text": "done"}])


def results(records: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [
        (r["name"].removeprefix("mcp__ev__"), r["state"], r["result"])
        for r in records
        if r["type"] == "tool" and "result" in r
    ]


CALLS = (
    ("mcp__ev__get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
    ("mcp__ev__get-resource-links", {"count": 2}),
    ("mcp__ev__get-tiny-image", {}),
    ("mcp__ev__list_resources", {}),
    ("mcp__ev__read_resource", {"uri": "demo://resource/dynamic/text/2"}),
    ("mcp__ev__read_resource", {"uri": "demo://resource/dynamic/blob/1"}),
    ("mcp__ev__get-roots-list", {}),
    ("mcp__ev__trigger-elicitation-request", {}),
    ("mcp__ev__trigger-long-running-operation", {"duration": 1, "steps": 2}),
    ("mcp__ev__simulate-research-query", {"topic": "x"}),
)


def check_results(
    tmp_path: Path, events: list[dict[str, Any]], records: list[dict[str, Any]]
) -> None:
    got = results(records)
    assert [state for _, state, _ in got] == ["completed"] * 7 + ["failed", "completed", "failed"]
    by = {name: result for name, _, result in got}
    reference = by["get-resource-reference"]
    assert "[resource: uri=demo://resource/dynamic/text/1; type=text/plain]" in reference
    assert "Resource 1: This is a plaintext resource" in reference
    links = by["get-resource-links"]
    assert "uri=demo://resource/dynamic/blob/1; name=Blob Resource 1" in links
    assert "uri=demo://resource/dynamic/text/2; name=Text Resource 2" in links
    assert "[image: PNG, 20×20 px" in by["get-tiny-image"]
    image = next(r for r in records if r.get("name") == "mcp__ev__get-tiny-image" and "result" in r)
    assert base64.b64decode(image["images"][0]["data"]).startswith(PNG_MAGIC)
    assert "uri=demo://resource/static/document/architecture.md" in by["list_resources"]
    text, blob = [r for n, _, r in got if n == "read_resource"]
    assert "Resource 2: This is a plaintext resource" in text
    assert "[resource: uri=demo://resource/dynamic/blob/1; type=text/plain]" in blob
    assert "[binary contents not shown: " in blob
    workspace = (tmp_path / "workspace").resolve()
    assert f"URI: {workspace.as_uri()}" in by["get-roots-list"]
    assert by["trigger-elicitation-request"] == '{"error": "rejected: invalid_arguments"}'
    for name, _, result in got:
        assert "content]" not in result, name
    summaries = [
        e["data"]["summary"]
        for e in events
        if e["event"] == "activity" and e["data"]["state"] == "completed"
    ]
    assert "ev.trigger-long-running-operation completed (progress 2 of 2)" in summaries
    progress = [e["data"] for e in events if e["event"] == "tool.progress"]
    assert [(p["progress"], p["total"]) for p in progress] == [(1, 2), (2, 2)]
    assert {p["name"] for p in progress} == {"mcp__ev__trigger-long-running-operation"}
    started = [e["data"] for e in events if e["event"] == "activity"]
    running = next(a for a in started if a["name"] == "mcp__ev__trigger-long-running-operation")
    assert {p["activity_id"] for p in progress} == {running["activity_id"]}
    # The task-only tool is no tool of the turn's: the call is rejected before any server sees it.
    assert by["simulate-research-query"] == '{"error": "rejected: invalid_arguments"}'


def test_results_resources_roots_elicitation_and_progress_over_stdio(
    everything: Path, tmp_path: Path
) -> None:
    events, records = run(
        tmp_path, settings(stdio(everything)), scripted(*CALLS), "--approval-mode", "full"
    )
    check_results(tmp_path, events, records)


@pytest.fixture
def everything_http(everything: Path, tmp_path: Path) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        ["node", str(everything), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        with socket.socket() as client:
            if client.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    process.kill()
    process.wait()


def test_results_resources_roots_elicitation_and_progress_over_http(
    everything_http: str, tmp_path: Path
) -> None:
    definition = {"url": everything_http, "enabled": True}
    events, records = run(
        tmp_path, settings(definition), scripted(*CALLS), "--approval-mode", "full"
    )
    check_results(tmp_path, events, records)


def test_read_only_tools_are_decided_as_reads_never_wider_than_the_rules(
    everything: Path, tmp_path: Path
) -> None:
    """Under the default approval mode (ask: nothing that asks is allowed), a `readOnlyHint`
    tool runs and one without it is refused; a rule naming the read-only tool still decides."""
    calls = (
        ("mcp__ev__echo", {"message": "hi"}),
        ("mcp__ev__toggle-simulated-logging", {}),
        ("mcp__ev__get-sum", {"a": 1, "b": 2}),
    )
    rule = '[[permissions.rules]]\ntool = "mcp__ev__get-sum"\ndecision = "deny"\n'
    _, records = run(tmp_path, settings(stdio(everything), rule), scripted(*calls))
    states = [(name, state) for name, state, _ in results(records)]
    assert states == [
        ("echo", "completed"),
        ("toggle-simulated-logging", "failed"),
        ("get-sum", "failed"),
    ]


def test_a_result_over_the_bound_says_how_much_was_cut(server_def: Any, tmp_path: Path) -> None:
    size = OUTPUT_BYTES + 1000
    _, records = run(
        tmp_path,
        settings(server_def()),
        scripted(("mcp__ev__repeat", {"text": "x", "times": size})),
        "--approval-mode",
        "full",
    )
    [(_, state, result)] = results(records)
    assert state == "completed"
    assert result.endswith(f" of {size:,} bytes not shown]")
    assert len(result.encode()) <= OUTPUT_BYTES


def text_result(text: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)])


def test_the_cut_is_at_the_exact_bound() -> None:
    assert view(text_result("é" * (OUTPUT_BYTES // 2)))[0] == "é" * (OUTPUT_BYTES // 2)
    over, _ = view(text_result("x" * (OUTPUT_BYTES + 1)))
    assert over.endswith(f" of {OUTPUT_BYTES + 1:,} bytes not shown]")
    assert len(over.encode()) <= OUTPUT_BYTES


# ---- an image on each wire, and the server's instructions in the request -------------------


TOOL = "mcp__ev__get-tiny-image"


@pytest.mark.parametrize("wire", list(WIRES))
def test_an_image_result_reaches_each_wire_and_the_instructions_the_model(
    wire: str, everything: Path, tmp_path: Path
) -> None:
    path, call, text = WIRES[wire]
    with LocalServer() as server:
        provider = local_provider_settings(server, wire, table="images = true\n")
        server.script(
            path,
            Reply(chunks=[call(TOOL, "{}")], headers=SSE),
            Reply(chunks=[text("ok")], headers=SSE),
        )
        run(tmp_path, settings(stdio(everything), provider), "look")
    first, second = (json.loads(r.body) for r in server.requests)
    assert image_parts(wire, first) == []
    [image] = image_parts(wire, second)
    assert base64.b64decode(image).startswith(PNG_MAGIC)
    told = json.dumps(first)
    assert "Instructions of the MCP server ev:" in told
    assert "Everything Server" in told


# ---- the server's instructions: bounded, and shown by `magi-code context` -----------------


@pytest.mark.parametrize("size", [INSTRUCTIONS_CHARS, INSTRUCTIONS_CHARS + 1])
def test_instructions_are_kept_whole_up_to_the_bound_and_a_cut_says_so(
    server_def: Any, size: int
) -> None:
    definition = {**server_def(), "env": {"ECHO_INSTRUCTIONS": str(size)}}
    servers = {"echo": definition}
    manager = McpManager.start(servers, approved=[canonical_digest("echo", definition)])
    try:
        [(name, said)] = manager.instructions()
    finally:
        manager.close()
    assert name == "echo"
    if size == INSTRUCTIONS_CHARS:
        assert said == "i" * size
    else:
        assert (
            said
            == "i" * INSTRUCTIONS_CHARS + f"\n[instructions cut at {INSTRUCTIONS_CHARS} characters]"
        )


def test_magi_code_context_shows_the_servers_instructions_and_tools(
    everything: Path, tmp_path: Path
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir()
    workspace.mkdir()
    (home / "settings.toml").write_text(settings(stdio(everything)))
    done = run_magi_code(["context"], workspace, home, timeout=120)

    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "== mcp: MCP server ev (" in out
    assert "Instructions of the MCP server ev:\n# Everything Server" in out
    offered = next(line for line in out.splitlines() if line.startswith("tools offered:"))
    assert "mcp__ev__get-tiny-image" in offered and "mcp__ev__read_resource" in offered
    assert "mcp__ev__simulate-research-query" not in offered
