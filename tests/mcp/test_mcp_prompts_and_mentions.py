"""MCP prompt commands' arguments and `@SERVER:URI` mentions, pure (mcp/prompts.py,
mcp/mentions.py), their bounds at the edge; a server's state after its process died
(mcp/states.py); prompts listed and got, and an image resource attached as an image, from a
real server (prompts_server.py); and a mention through the real `magi-code exec` against the
reference server (conftest.py): the resource reaches the session's prompt, an unknown server
runs nothing."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

import mcp_types
import pytest
from test_mcp_everything import settings, stdio

from magi_code.mcp.definitions import canonical_digest, parse_server
from magi_code.mcp.errors import NotSent
from magi_code.mcp.limits import ATTACHED_BYTES, MENTIONS, PROMPTS_PER_SERVER, RESTARTS
from magi_code.mcp.manager import Connection, McpManager
from magi_code.mcp.mentions import Mention, attach, mentioned
from magi_code.mcp.prompts import (
    ASSISTANT_MARK,
    PromptCommand,
    arguments,
    expand,
    messages_text,
    prompt_commands,
)
from magi_code.mcp.states import state_of
from magi_code.tools.limits import PROMPT_IMAGES
from support.exec import exec_run as run_exec

DOCUMENT = "demo://resource/static/document/architecture.md"
PROMPTS_SERVER = str(Path(__file__).with_name("prompts_server.py"))


def command(*declared: tuple[str, bool]) -> PromptCommand:
    listed = [mcp_types.PromptArgument(name=name, required=required) for name, required in declared]
    return PromptCommand("ev", mcp_types.Prompt(name="team", arguments=listed))


TEAM = command(("department", True), ("name", True), ("note", False))


def refusal(text: str) -> str:
    with pytest.raises(NotSent) as refused:
        arguments(TEAM, text)
    return refused.value.why


def test_arguments_by_position_by_name_and_quoted() -> None:
    assert arguments(TEAM, "Sales Eve") == {"department": "Sales", "name": "Eve"}
    assert arguments(TEAM, 'name="Eve Ray" Sales x=1') == {
        "name": "Eve Ray",
        "department": "Sales",
        "note": "x=1",  # not an argument's name: a word like any other
    }
    assert TEAM.usage() == "/mcp__ev__team department name [note]"


def test_a_missing_argument_a_word_too_many_or_an_open_quote_is_refused_with_the_usage() -> None:
    usage = "Usage: /mcp__ev__team department name [note] (or NAME=VALUE)"
    assert refusal("") == f"/mcp__ev__team needs department, name. {usage}"
    assert refusal("note=hi Sales") == f"/mcp__ev__team needs name. {usage}"
    assert refusal("a b c d") == f"/mcp__ev__team: 'd' is one argument too many. {usage}"
    assert refusal('Sales "Eve') == f"/mcp__ev__team: a quote is not closed. {usage}"


def test_a_prompts_messages_are_one_prompt_cut_at_the_bound() -> None:
    def result(*messages: tuple[Literal["user", "assistant"], str]) -> mcp_types.GetPromptResult:
        said = [
            mcp_types.PromptMessage(role=role, content=mcp_types.TextContent(type="text", text=t))
            for role, t in messages
        ]
        return mcp_types.GetPromptResult(messages=said)

    text, images = messages_text(result(("user", "a"), ("assistant", "b")))
    assert (text, images) == (f"a\n\n{ASSISTANT_MARK}\nb", ())
    edge = "x" * ATTACHED_BYTES
    assert messages_text(result(("user", edge)))[0] == edge
    cut, _ = messages_text(result(("user", edge + "x")))
    assert cut.startswith("x" * 1000) and cut.endswith(
        f" of {ATTACHED_BYTES + 1:,} bytes not shown]"
    )
    assert "[prompt cut: " in cut and len(cut.encode()) <= ATTACHED_BYTES


def test_mentions_name_a_server_and_a_uri_with_a_scheme() -> None:
    prompt = (
        f"see @ev:{DOCUMENT}, then (@ev:demo://a/b) and @ev:{DOCUMENT} again; not @src/app.py, "
        "me@ev:demo://x, @localhost:8080 or @ev:nothing"
    )
    assert mentioned(prompt) == [Mention("ev", DOCUMENT)]  # "(" starts no word of its own
    assert mentioned("@ev:demo://a/b) @other:file:///tmp/x.") == [
        Mention("ev", "demo://a/b"),
        Mention("other", "file:///tmp/x"),
    ]


def test_mentions_are_bounded_in_number_before_any_server_is_asked() -> None:
    words = [f"@nope:demo://r/{n}" for n in range(MENTIONS + 1)]
    assert attach(None, "plain prompt") == ("plain prompt", ())
    with pytest.raises(NotSent) as at_the_bound:
        attach(None, " ".join(words[:MENTIONS]))
    assert "no MCP server nope is connected (connected: none;" in at_the_bound.value.why
    with pytest.raises(NotSent) as over:
        attach(None, " ".join(words))
    assert (
        over.value.why == f"The prompt mentions {MENTIONS + 1} MCP resources; at most {MENTIONS}."
    )


class Ended:
    pid = 1
    returncode = -9


def test_a_stdio_server_that_died_is_restarting_until_its_restarts_are_used_up() -> None:
    connection = Connection(parse_server("ev", {"command": "node", "enabled": True}))
    assert state_of("ev", connection).state == "connecting"
    connection.ready.set()
    connection.session = object()  # type: ignore[assignment]
    assert state_of("ev", connection).state == "connected"
    connection.process = Ended()
    connection.restarts = RESTARTS - 1
    restarting = state_of("ev", connection)
    assert (restarting.state, restarting.why) == (
        "restarting",
        f"it stopped; its next call starts it again (1 of {RESTARTS} restarts left)",
    )
    connection.restarts = RESTARTS
    used_up = state_of("ev", connection)
    assert (used_up.state, used_up.why) == (
        "failed",
        f"it stopped, and its {RESTARTS} restarts are used up",
    )


def prompts_manager(count: int) -> McpManager:
    """The prompts server with `count` prompts, connected."""
    definition = {"command": sys.executable, "args": [PROMPTS_SERVER, str(count)], "enabled": True}
    digest = canonical_digest("img", definition)
    return McpManager.start({"img": definition}, approved=[digest], env=dict(os.environ))


@pytest.mark.parametrize("count", [PROMPTS_PER_SERVER, PROMPTS_PER_SERVER + 1])
def test_a_servers_prompts_are_commands_up_to_the_bound(count: int) -> None:
    manager = prompts_manager(count)
    try:
        found = prompt_commands(manager.prompts())
        said = expand(manager, found["mcp__img__p7"], "")
    finally:
        manager.close()
    assert list(found) == [f"mcp__img__p{n}" for n in range(PROMPTS_PER_SERVER)]
    assert said == ("prompt 7", ())


def test_a_mentioned_image_is_attached_as_one_within_the_prompts_room() -> None:
    manager = prompts_manager(1)
    try:
        text, images = attach(manager, "see @img:img://dot", PROMPT_IMAGES - 1)
        full, none = attach(manager, "see @img:img://dot", PROMPT_IMAGES)
    finally:
        manager.close()
    attached = "[resource: uri=img://dot; type=image/png]\n[image: PNG, 1×1 px, 70 bytes]"
    assert text == f"see @img:img://dot\n\n{attached}"
    assert [image.media_type for image in images] == ["image/png"]
    assert none == () and full.endswith(
        f"[1 image(s) not attached: a prompt carries at most {PROMPT_IMAGES}]"
    )


def exec_run(tmp_path: Path, everything: Path, prompt: str) -> subprocess.CompletedProcess[str]:
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    (home / "settings.toml").write_text(settings(stdio(everything)))
    return run_exec(["--json", prompt], workspace, home, text=True)


def test_exec_attaches_a_mentioned_resource_and_runs_nothing_for_an_unknown_server(
    tmp_path: Path, everything: Path
) -> None:
    refused = exec_run(tmp_path, everything, "read @nope:demo://x please")
    assert refused.returncode == 2, refused.stderr
    assert "@nope:demo://x: no MCP server nope is connected (connected: ev;" in refused.stderr
    assert "Nothing was run." in refused.stderr and refused.stdout == ""
    assert not list((tmp_path / "home" / "sessions").glob("*.jsonl"))
    done = exec_run(tmp_path, everything, f"read @ev:{DOCUMENT}")
    assert done.returncode == 0, done.stderr
    stored = next((tmp_path / "home" / "sessions").glob("*.jsonl")).read_text()
    assert f"read @ev:{DOCUMENT}\\n\\n[resource: uri={DOCUMENT}; type=text/markdown]" in stored
    assert "# Everything Server" in stored
