"""The real `magi-code acp`: a model's refusal ends the prompt with stopReason `refusal` while
a refused request (HTTP 4xx, the same `refused` code) stays an error; the approval mode a
client chose survives `session/load` in a new agent process."""

from pathlib import Path

import pytest
from acp import RequestError, text_block

from support.acp import agent, run
from support.sessions import records, script


def test_a_model_refusal_is_the_refusal_stop_and_a_refused_request_an_error(
    workspace: Path, home: Path
) -> None:
    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            refusal = script({"text": "I will not do that.", "stop": "refused"})
            done = await conn.prompt(session_id=sid, prompt=[text_block(refusal)])
            assert done.stop_reason == "refusal"
            assert "I will not do that." in client.text()
            with pytest.raises(RequestError) as failed:
                await conn.prompt(session_id=sid, prompt=[text_block(script({"error": "refused"}))])
            assert failed.value.data == {"code": "execution_failed", "failure": "refused"}
            after = await conn.prompt(session_id=sid, prompt=[text_block(script({"text": "ok"}))])
            assert after.stop_reason == "end_turn"

    run(scenario)


def test_the_chosen_mode_survives_a_load_in_a_new_agent_process(
    workspace: Path, home: Path
) -> None:
    async def scenario() -> None:
        async with agent(workspace, home) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            assert session.modes is not None and session.modes.current_mode_id == "ask"
            await conn.set_session_mode(session_id=sid, mode_id="auto")
            await conn.set_config_option(config_id="mode", session_id=sid, value="edits")
        async with agent(workspace, home) as (conn, _):
            loaded = await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            assert loaded.modes is not None and loaded.modes.current_mode_id == "edits"
            assert loaded.config_options is not None
            mode = next(o for o in loaded.config_options if o.id == "mode")
            assert mode.current_value == "edits"
        modes = [r["approval_mode"] for r in records(home, sid) if "approval_mode" in r]
        assert modes == ["auto", "edits"]

    run(scenario)
