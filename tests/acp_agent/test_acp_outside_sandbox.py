"""The session grant ("always allow" in ACP) never covers running a command again outside
the sandbox: that question is asked each time, whatever was allowed for the command itself."""

from pathlib import Path

import pytest
from acp import text_block

from magi_code.tools.approvals import Asked
from magi_code.tools.base import Access
from magi_code.tools.grants import SessionGrants
from magi_code.tools.sandbox.modes import support
from support.acp import agent, run
from support.sessions import script


def test_running_outside_the_sandbox_is_never_remembered() -> None:
    access = Access("shell", (), "make install")
    grants = SessionGrants()
    grants.grant(Asked("shell", access, "{}", outside_sandbox=True))
    assert not grants.covers("shell", access)
    grants.grant(Asked("shell", access, "{}"))
    assert grants.covers("shell", access)


@pytest.mark.skipif(support()[1] is not None, reason=f"no Landlock here: {support()[1]}")
def test_an_editor_is_asked_to_run_a_refused_command_outside_and_always_allow_is_not_kept(
    workspace: Path, home: Path
) -> None:
    home.mkdir()
    (home / "settings.toml").write_text('approval_mode = "auto"\n')
    command = {"name": "shell", "arguments": {"command": "echo x >> /etc/made-in-an-acp-test"}}

    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            prompt = [text_block(script({"tools": [command]}))]
            client.answers = ["allow_always"]  # taken once, never remembered
            await conn.prompt(session_id=session.session_id, prompt=prompt)
            client.answers = ["reject_once"]  # so asked again, and refused
            await conn.prompt(session_id=session.session_id, prompt=prompt)
            titles = [call.title or "" for call in client.asked]
            assert len(titles) == 2
            assert all(t.startswith("Run outside the sandbox?") for t in titles)

    try:
        run(scenario)
    finally:
        Path("/etc/made-in-an-acp-test").unlink(missing_ok=True)
