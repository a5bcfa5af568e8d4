"""Remote agents as subagents: the `a2a_NAME` tool over a real A2A server process (the a2a-sdk's
own server classes, tests/a2a/remote_agent.py), its token's origin binding, its cached card,
its cancel, its answers to the model; and what a project file may say about remote agents."""

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from magi_code import limits
from magi_code.a2a.agents import AgentDefinitionError, RemoteAgentDef, remote_agents
from magi_code.a2a.remote import RemoteAgentTool
from magi_code.config.trust import admit_project
from magi_code.runner.events import Activity
from magi_code.tools.base import ToolContext, ToolOutcome
from magi_code.tools.live_output import ToolOutputDelta

HERE = Path(__file__).parent
SERVER = HERE / "remote_agent.py"
EXEC = [str(Path(sys.executable).with_name("magi-code")), "exec"]
TOKEN = "s3cret-a2a-token"


class Remote:
    """One running remote_agent.py: its two ports and its request log."""

    def __init__(self, tmp: Path, *flags: str) -> None:
        self.log, ports = tmp / "requests.jsonl", tmp / "ports"
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), str(ports), str(self.log), *flags],
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 15
        while not (ports.exists() and ports.read_text()):
            assert time.monotonic() < deadline and self.process.poll() is None
            time.sleep(0.02)
        self.port_a, self.port_b = map(int, ports.read_text().split())
        self.url = f"http://127.0.0.1:{self.port_a}"

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., Remote]]:
    started: list[Remote] = []

    def run(*flags: str) -> Remote:
        folder = tmp_path / f"remote{len(started)}"
        folder.mkdir()
        started.append(Remote(folder, *flags))
        return started[-1]

    yield run
    for remote in started:
        remote.stop()


class Seen:
    """What a call showed a face: its events and live deltas."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def emit(self, event: Any) -> None:
        self.events.append(event)

    def activities(self) -> list[tuple[str, str]]:
        return [(e.kind, e.state) for e in self.events if isinstance(e, Activity)]

    def live(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, ToolOutputDelta))


def tool(url: str, token_env: str | None = None, env: dict[str, str] | None = None) -> Any:
    return RemoteAgentTool(RemoteAgentDef("peer", url, token_env), env or {})


def call(remote_tool: Any, prompt: str, seen: Seen | None = None) -> ToolOutcome:
    seen = seen or Seen()
    ctx = ToolContext(Path.cwd(), {}, emit=seen.emit, detail=seen.emit, activity_id="act-1")
    args = remote_tool.parse(json.dumps({"prompt": prompt}))

    async def main() -> ToolOutcome:
        outcome: ToolOutcome = await remote_tool.run(args, ctx)
        return outcome

    return anyio.run(main)


def test_the_reply_streams_back_as_a_subagent_and_the_card_is_fetched_once(
    start: Callable[..., Remote],
) -> None:
    remote = start()
    peer, seen = tool(remote.url), Seen()
    first = call(peer, "hello there", seen)
    assert (first.ok, first.output) == (True, "echo: hello there")
    assert seen.activities() == [("subagent", "started"), ("subagent", "completed")]
    assert seen.live() == "echo: hello there"  # shown as it arrived
    assert "hello there" not in " ".join(e.summary for e in seen.events if isinstance(e, Activity))
    second = call(peer, "again")
    assert second.output == "echo: again"
    cards = [r for r in remote.requests() if r["path"] == "/.well-known/agent-card.json"]
    assert len(cards) == 1  # one fetch for two calls
    assert [r["path"] for r in remote.requests()].count("/rpc") == 2


def test_the_token_goes_only_to_the_origin_it_was_defined_with(
    start: Callable[..., Remote],
) -> None:
    remote = start("--card-names-b")  # the card sends the calls to another port
    peer = tool(remote.url, "PEER_TOKEN", {"PEER_TOKEN": TOKEN})
    assert call(peer, "hi").output == "echo: hi"
    moved = tool(f"{remote.url}/moved", "PEER_TOKEN", {"PEER_TOKEN": TOKEN})
    assert call(moved, "hi").output == "echo: hi"  # the card came by a redirect to port B
    seen = remote.requests()
    at_a = [r for r in seen if r["port"] == remote.port_a]
    at_b = [r for r in seen if r["port"] == remote.port_b]
    assert {r["path"] for r in at_b} == {"/rpc", "/.well-known/agent-card.json"}
    assert all(r["authorization"] == f"Bearer {TOKEN}" for r in at_a)
    assert all(r["authorization"] is None for r in at_b)


def test_a_refused_or_missing_token_is_a_clear_error(start: Callable[..., Remote]) -> None:
    remote = start("--token", TOKEN)
    wrong = call(tool(remote.url, "PEER_TOKEN", {"PEER_TOKEN": "wrong"}), "hi")
    assert not wrong.ok
    assert "refused the credentials (HTTP 401)" in wrong.output
    assert "wrong" not in wrong.output and "wrong" not in wrong.summary
    before = len(remote.requests())
    unset = call(tool(remote.url, "PEER_TOKEN", {}), "hi")
    assert not unset.ok and "PEER_TOKEN" in unset.output and "unset or empty" in unset.output
    assert len(remote.requests()) == before  # nothing was sent
    right = call(tool(remote.url, "PEER_TOKEN", {"PEER_TOKEN": TOKEN}), "hi")
    assert right.output == "echo: hi"


def test_an_unreachable_remote_says_so() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: nothing listens there
    seen = Seen()
    outcome = call(tool(f"http://127.0.0.1:{port}"), "hi", seen)
    assert not outcome.ok
    assert "could not be reached" in outcome.output and "[a2a.agents.peer] url" in outcome.output
    assert seen.activities() == [("subagent", "started"), ("subagent", "failed")]


def test_input_required_and_failure_say_what_the_remote_said(
    start: Callable[..., Remote],
) -> None:
    remote = start()
    asked = call(tool(remote.url), "ask: which branch?")
    assert not asked.ok
    assert "needs input" in asked.output and '"which branch?"' in asked.output
    said = "q" * limits.A2A_SAID_BYTES
    whole = call(tool(remote.url), f"ask: {said}")
    assert f'"{said}"' in whole.output
    cut = call(tool(remote.url), f"ask: {said}q")
    assert said[:-8] in cut.output and said not in cut.output and "…" in cut.output
    failed = call(tool(remote.url), "fail")
    assert not failed.ok
    assert "failed the task" in failed.output and "the disk is full" in failed.output


def test_the_reply_is_cut_at_its_bound_with_a_note(start: Callable[..., Remote]) -> None:
    remote = start()
    peer = tool(remote.url)
    whole = call(peer, f"big {limits.A2A_REPLY_BYTES}")
    assert whole.output == "x" * limits.A2A_REPLY_BYTES
    cut = call(peer, f"big {limits.A2A_REPLY_BYTES + 1}")
    assert cut.output.startswith("x" * limits.A2A_REPLY_BYTES + "\n[cut:")
    assert f"was {limits.A2A_REPLY_BYTES + 1} bytes" in cut.output


def test_cancelling_the_call_cancels_the_remote_task(start: Callable[..., Remote]) -> None:
    remote = start()
    peer, seen = tool(remote.url), Seen()
    ctx = ToolContext(Path.cwd(), {}, emit=seen.emit, detail=seen.emit, activity_id="a")

    async def main() -> None:
        with anyio.move_on_after(30) as scope:
            async with anyio.create_task_group() as group:

                async def cancel_once_working() -> None:
                    while "working on it" not in seen.live():
                        await anyio.sleep(0.02)
                    group.cancel_scope.cancel()

                group.start_soon(cancel_once_working)
                await peer.run(peer.parse('{"prompt": "hang"}'), ctx)
        assert not scope.cancelled_caught

    anyio.run(main)
    assert seen.activities() == [("subagent", "started"), ("subagent", "failed")]
    events = {r.get("event") for r in remote.requests()}
    assert {"cancel_requested", "cancelled"} <= events


def test_definitions_say_what_is_wrong() -> None:
    good = {"a2a": {"agents": {"build": {"url": "https://box:8042", "token": "env:BOX"}}}}
    (agent,) = remote_agents(good)
    assert (agent.tool_name, agent.token_env, agent.origin) == (
        "a2a_build",
        "BOX",
        ("https", "box", 8042),
    )
    bad = [
        ({"url": "ftp://box"}, "url must be an http:// or https:// URL"),
        ({"url": "https://user:pw@box"}, "no user name"),
        ({"url": "https://box", "token": "literal-token"}, 'token must be "env:VARIABLE"'),
        ({"url": "https://box", "tokn": "env:X"}, "takes only url and token"),
    ]
    for conf, says in bad:
        with pytest.raises(AgentDefinitionError, match=says):
            remote_agents({"a2a": {"agents": {"build": conf}}})
    longest = "n" * limits.A2A_AGENT_NAME_CHARS
    assert remote_agents({"a2a": {"agents": {longest: {"url": "https://box"}}}})
    for name in ("a b", longest + "n"):
        with pytest.raises(AgentDefinitionError, match="rename it"):
            remote_agents({"a2a": {"agents": {name: {"url": "https://box"}}}})


GLOBAL = {"a2a": {"agents": {"home": {"url": "https://home.example", "token": "env:HOME_T"}}}}


def test_an_untrusted_project_cannot_add_an_agent() -> None:
    project = {"a2a": {"agents": {"evil": {"url": "https://evil.example"}}}}
    kept, dropped = admit_project(project, GLOBAL, False, "p.toml")
    assert "a2a" not in kept or "agents" not in kept["a2a"]
    assert [d.key for d in dropped] == ["a2a.agents"]


def test_a_trusted_project_names_agents_but_never_tokens_nor_moves_a_global_one() -> None:
    project = {
        "a2a": {
            "agents": {
                "ci": {"url": "https://ci.example", "token": "env:HOME_T"},
                "home": {"url": "https://evil.example"},
            }
        }
    }
    kept, dropped = admit_project(project, GLOBAL, True, "p.toml")
    assert kept["a2a"]["agents"] == {"ci": {"url": "https://ci.example"}, "home": {}}
    assert sorted(d.key for d in dropped) == ["a2a.agents.ci.token", "a2a.agents.home.url"]
    assert all(not d.needs_trust for d in dropped)


def exec_settings(home: Path, url: str, token: bool = False) -> None:
    home.mkdir(exist_ok=True)
    agent = f'[a2a.agents.peer]\nurl = "{url}"\n' + ('token = "env:PEER_TOKEN"\n' if token else "")
    (home / "settings.toml").write_text(agent)


def script(*rounds: dict[str, Any]) -> str:
    return "fixture:" + json.dumps(list(rounds))


def test_the_sdk_loads_on_the_first_call_only(tmp_path: Path) -> None:
    """With an agent configured, admitting the workspace and offering its tool load neither the
    a2a-sdk nor httpx; without one, not even this package."""
    from source_imports import loaded_running

    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    exec_settings(home, "http://127.0.0.1:9")
    offer = (
        "from magi_code.runner.startup import admit\n"
        "from magi_code.runner.setup import parts\n"
        f"admitted = admit({str(workspace)!r}, {{'MC_HOME': {str(home)!r}}})\n"
        "assert 'a2a_peer' in parts(admitted).turn_tools()\n"
    )
    assert loaded_running(offer, ("a2a", "httpx")) == []
    (home / "settings.toml").write_text("")
    none = offer.replace("assert 'a2a_peer' in", "assert 'a2a_peer' not in")
    assert loaded_running(none, ("a2a", "httpx", "magi_code.a2a")) == []
