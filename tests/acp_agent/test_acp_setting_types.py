"""A settings value of the wrong type over the real `magi-code acp` (issue 35, item 5): from an
untrusted project's file it is dropped with the one-line warning `(not valid)` on stderr and
the session prompts; from a trusted project's file or the global file `session/new` fails with
`configuration_invalid` in its data (it failed with -32603 and the exception's text), and
neither the error nor stderr holds an exception's text."""

import asyncio
import json
import re
from pathlib import Path
from typing import Any, cast

import pytest
from acp import PROTOCOL_VERSION, Client, RequestError, spawn_agent_process, text_block
from acp.schema import AgentMessageChunk

from magi_code.client import environment
from support.exec import MAGI_CODE

WRONG_TYPES = {
    "provider_table": ("[provider]\nx = 1\n", "provider"),
    "provider_list": ("provider = [1]\n", "provider"),
    "models_table": ("[providers.fixture]\nmodels = { x = 1 }\n", "providers.fixture.models"),
}
PYTHON_TEXT = re.compile(r"Traceback|\w+(Error|Exception)\b|unhashable|object has no attribute")


class Listener:
    def __init__(self) -> None:
        self.text = ""

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if isinstance(update, AgentMessageChunk):
            self.text += update.content.text

    async def request_permission(self, *_: Any, **__: Any) -> Any:
        raise AssertionError("nothing is asked here")


def settings_in(place: str, home: Path, workspace: Path, text: str) -> Path:
    home.mkdir(exist_ok=True)
    (workspace / ".magi-code").mkdir(parents=True, exist_ok=True)
    project = workspace / ".magi-code" / "settings.toml"
    listed = f"[permissions]\ntrusted_projects = [{json.dumps(str(workspace))}]\n"
    (home / "settings.toml").write_text(
        text if place == "global" else listed if place == "trusted" else ""
    )
    project.write_text("" if place == "global" else text)
    return project


async def session(workspace: Path, home: Path) -> tuple[str | RequestError, str, str]:
    """session/new then, if it opened, a prompt: (its id or its error, the reply, stderr)."""
    listener = Listener()
    async with spawn_agent_process(
        cast(Client, listener), MAGI_CODE, "acp", env=environment(home), cwd=workspace
    ) as (conn, process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        try:
            made = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        except RequestError as refused:
            opened: str | RequestError = refused
        else:
            opened = made.session_id
            await conn.prompt(session_id=opened, prompt=[text_block("say hello")])
    assert process.stderr is not None
    stderr = (await process.stderr.read()).decode()
    return opened, listener.text, stderr


def run(workspace: Path, home: Path) -> tuple[str | RequestError, str, str]:
    return asyncio.run(asyncio.wait_for(session(workspace, home), timeout=60))


@pytest.mark.parametrize(("text", "key"), WRONG_TYPES.values(), ids=list(WRONG_TYPES))
def test_an_untrusted_wrong_type_is_dropped_and_the_session_prompts(
    tmp_path: Path, text: str, key: str
) -> None:
    workspace, home = tmp_path / "workspace", tmp_path / "mc-home"
    file = settings_in("untrusted", home, workspace, text)
    opened, reply, stderr = run(workspace, home)
    assert isinstance(opened, str), opened
    assert reply == "Hello from the fixture model."
    assert stderr.split("\n")[:-1] == [f"magi-code acp: ignored {key} from {file} (not valid)"]


@pytest.mark.parametrize("place", ["trusted", "global"])
@pytest.mark.parametrize(("text", "key"), WRONG_TYPES.values(), ids=list(WRONG_TYPES))
def test_a_trusted_or_global_wrong_type_is_configuration_invalid(
    tmp_path: Path, place: str, text: str, key: str
) -> None:
    workspace, home = tmp_path / "workspace", tmp_path / "mc-home"
    settings_in(place, home, workspace, text)
    refused, _, stderr = run(workspace, home)
    assert isinstance(refused, RequestError)
    assert refused.data == {"code": "configuration_invalid"}
    assert PYTHON_TEXT.search(json.dumps([refused.code, str(refused), refused.data])) is None
    assert PYTHON_TEXT.search(stderr) is None, stderr
