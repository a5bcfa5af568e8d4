"""A settings value of the wrong type over the real `serve --stdio` (issue 35, item 5): from an
untrusted project's file it is dropped (silently, as the local agent drops every project key)
and a turn runs; from a trusted project's file or the global file `initialize` answers the
spec's `configuration_invalid` (it answered `startup_failed`), with no exception text on the
wire and nothing on stderr."""

import json
import subprocess
from pathlib import Path

import pytest

from magi_code.client import LocalAgentClient, environment
from support.exec import MAGI_CODE

from .conftest import frame
from .turns import attach, run

WRONG_TYPES = {
    "provider_table": "[provider]\nx = 1\n",
    "provider_list": "provider = [1]\n",
    "models_table": "[providers.fixture]\nmodels = { x = 1 }\n",
}
PYTHON_TEXT = ("Traceback", "Error", "Exception", "unhashable", "attribute")


def settings_in(place: str, home: Path, workspace: Path, text: str) -> None:
    home.mkdir(exist_ok=True)
    (workspace / ".magi-code").mkdir(exist_ok=True)
    listed = f"[permissions]\ntrusted_projects = [{json.dumps(str(workspace))}]\n"
    (home / "settings.toml").write_text(
        text if place == "global" else listed if place == "trusted" else ""
    )
    (workspace / ".magi-code" / "settings.toml").write_text("" if place == "global" else text)


def initialize_once(workspace: Path, home: Path) -> tuple[dict[str, object], bytes]:
    """One `initialize` over real pipes: its answer, then (stdin closed) all of stderr."""
    command = [MAGI_CODE, "serve", "--stdio"]
    child = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=workspace,
        env=environment(home),
    )
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    try:
        child.stdin.write(frame("i", "initialize", {"required_capabilities": ["status"]}))
        child.stdin.flush()
        answer = json.loads(child.stdout.readline())
        child.stdin.close()
        stderr = child.stderr.read()
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        child.stderr.close()
    return answer, stderr


@pytest.mark.parametrize("text", WRONG_TYPES.values(), ids=list(WRONG_TYPES))
def test_an_untrusted_wrong_type_is_dropped_and_a_turn_runs(
    home: Path, workspace: Path, text: str
) -> None:
    settings_in("untrusted", home, workspace, text)
    with LocalAgentClient.spawn(cwd=workspace, env=environment(home)) as child:
        session_id = attach(child)
        assert child.request("status")["provider"] == "fixture"
        _, events = run(child, session_id, "say hello")
        assert events[-1].data["outcome"] == "completed"


@pytest.mark.parametrize("place", ["trusted", "global"])
@pytest.mark.parametrize("text", WRONG_TYPES.values(), ids=list(WRONG_TYPES))
def test_a_trusted_or_global_wrong_type_is_configuration_invalid(
    home: Path, workspace: Path, place: str, text: str
) -> None:
    settings_in(place, home, workspace, text)
    answer, stderr = initialize_once(workspace, home)
    error = answer.get("error")
    assert isinstance(error, dict), answer
    assert error["code"] == "configuration_invalid"
    said = json.dumps(answer)
    assert not any(word in said for word in PYTHON_TEXT), said
    assert stderr == b""
