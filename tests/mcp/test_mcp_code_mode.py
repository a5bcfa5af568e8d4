"""MCP tools from a Code Mode program: the real echo server, called through the bridge, decided
by the Code Mode rules (which allow it here) while a direct call still asks."""

import json
from collections.abc import Callable
from pathlib import Path

import anyio
from mcp_harness import Definition

from magi_code.mcp.definitions import canonical_digest
from magi_code.runner.events import MessageDelta, RunEvent
from magi_code.runner.journal import SessionJournal
from magi_code.runner.setup import turn_setup
from magi_code.runner.startup import admit
from magi_code.runner.turn import TurnControl, run_turn
from magi_code.sessions import Selection, SessionStore
from magi_code.tools.approvals import ApprovalBroker

PROGRAM = "result = tools['mcp__echo__echo'](text='through the bridge')"


class Quiet:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def delta(self, event: MessageDelta) -> None:
        pass

    async def critical(self, event: RunEvent) -> None:
        pass

    async def announce(self, approval_id: str, summary: str, expires_in_ms: int) -> None:
        self.asked.append(summary)  # never answered: denied when the run ends


def test_a_program_calls_an_mcp_tool_through_the_bridge(
    tmp_path: Path, server_def: Callable[..., Definition]
) -> None:
    definition = server_def("ok")
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.toml").write_text(
        f'code_mode = true\n[mcp]\napproved = ["{canonical_digest("echo", definition)}"]\n'
        f'[mcp.servers.echo]\ncommand = "{definition["command"]}"\n'
        f"args = {json.dumps(definition['args'])}\nenabled = true\n"
        '[[permissions.code_mode.rules]]\ntool = "mcp__echo__echo"\ndecision = "allow"\n'
    )
    admitted = admit(str(tmp_path), {"MC_HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert admitted.mcp is not None
    store = SessionStore(Path(admitted.paths.home))
    attachment = store.create(admitted.cwd, Selection("fixture", "fixture-model", None))
    emit = Quiet()
    rounds = [{"tools": [{"name": "code", "arguments": {"program": PROGRAM}}]}, {"text": "ok"}]

    async def turn() -> None:
        broker = ApprovalBroker(emit.announce, expiry_ms=200)
        setup = turn_setup(admitted, (None, None, None), attachment.session_id, "r", broker)
        journal = SessionJournal(attachment)
        await run_turn(setup, journal, emit, TurnControl(), "fixture:" + json.dumps(rounds))

    try:
        anyio.run(turn)
        path = store.path_of(attachment.session_id)
        records = [json.loads(line) for line in path.read_bytes().split(b"\n") if line]
        [code] = [r for r in records if r["type"] == "tool" and r["state"] != "started"]
        assert '[result]\n"through the bridge"' in code["result"]
        assert emit.asked == []  # the Code Mode rule allowed it; a direct call would ask
        bridged = [r["name"] for r in records if r["type"] == "activity"]
        assert bridged == ["code:mcp__echo__echo", "code:mcp__echo__echo"]
    finally:
        admitted.mcp.close()
