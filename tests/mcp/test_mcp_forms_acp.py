"""The real `magi-code acp` with the reference server `@modelcontextprotocol/server-everything`
and an editor (the ACP SDK's client) that offers forms: a server's question reaches the editor
as `elicitation/create` tied to its tool call, the answer comes back to the server checked, and
a running call's progress comes as `tool_call_update`s with its content."""

import asyncio
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, Client, spawn_agent_process, text_block
from acp.schema import (
    AcceptElicitationResponse,
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationFormSessionMode,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)
from test_mcp_mission_control import everything_def, write_settings

from acp_agent.test_acp import MAGI_CODE, records, script
from acp_agent.test_host_io import EditorClient, call
from magi_code.client import environment

FORMS = ClientCapabilities(elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()))


class FormClient(EditorClient):
    """An editor whose person fills each form with `content`."""

    def __init__(self, content: dict[str, Any]) -> None:
        super().__init__({})
        self.content = content
        self.forms: list[tuple[str, Any]] = []

    async def create_elicitation(self, message: str, mode: Any, **_: Any) -> Any:
        self.forms.append((message, mode))
        return AcceptElicitationResponse(action="accept", content=self.content)


def test_an_editor_answers_the_servers_form_and_sees_progress(
    everything: Path, tmp_path: Path
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    write_settings(home, {"ev": everything_def(everything)})
    client = FormClient({"name": "Ada", "integer": 7})
    rounds = (
        call("mcp__ev__trigger-elicitation-request"),
        call("mcp__ev__trigger-long-running-operation", duration=1, steps=2),
        {"text": "done"},
    )

    async def scenario() -> None:
        async with spawn_agent_process(
            cast(Client, client),
            MAGI_CODE,
            "acp",
            env=environment(home),
            cwd=workspace,
            transport_kwargs={"stderr": None},
            use_unstable_protocol=True,  # the Python SDK files elicitation/create there
        ) as (conn, _process):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=FORMS)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            await conn.set_session_mode(session_id=sid, mode_id="full")
            done = await conn.prompt(session_id=sid, prompt=[text_block(script(*rounds))])
            assert done.stop_reason == "end_turn"
        starts = [u for u in client.updates if isinstance(u, ToolCallStart)]
        asking, running = starts[0].tool_call_id, starts[1].tool_call_id
        ((message, mode),) = client.forms
        assert message == "Please provide inputs for the following fields:"
        assert isinstance(mode, ElicitationFormSessionMode)
        assert (mode.session_id, mode.tool_call_id) == (sid, asking)
        schema = mode.requested_schema
        assert schema.required == ["name"] and schema.properties is not None
        assert schema.properties["name"].title == "String"
        shown = [
            u.content[0].content.text
            for u in client.updates
            if isinstance(u, ToolCallProgress)
            and u.tool_call_id == running
            and u.status is None
            and u.content
            and isinstance(u.content[0].content, TextContentBlock)
        ]
        # The last report may land after the result, which supersedes it (SDK callback order).
        assert [text.split()[0] for text in shown] in (["1/2"], ["1/2", "2/2"])
        stored = [r for r in records(home, sid) if r["type"] == "tool" and "result" in r]
        assert "- Name: Ada" in stored[0]["result"]
        assert "- Favorite Integer: 7" in stored[0]["result"]

    asyncio.run(asyncio.wait_for(scenario(), timeout=90))
