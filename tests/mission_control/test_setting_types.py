"""A settings value of the wrong type in Mission Control, on a real terminal (issue 35, item
5): from the global file or a trusted project's file startup stops with `configuration_invalid`
and the key at fault, in plain words, never a traceback or an exception's text."""

import json
import re
from pathlib import Path

import pytest

from mission_control.terminal import run_in_pty

PYTHON_TEXT = re.compile(rb"Traceback|\w+(Error|Exception)\b|unhashable|object has no attribute")


@pytest.mark.parametrize("place", ["global", "trusted"])
@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("[provider]\nx = 1\n", b"provider must be a non-empty string"),
        ("provider = [1]\n", b"provider must be a non-empty string"),
        ("[providers.fixture]\nmodels = { x = 1 }\n", b"providers.fixture.models must be a list"),
    ],
    ids=["provider_table", "provider_list", "models_table"],
)
def test_a_wrong_type_says_the_key_without_a_traceback(
    tmp_path: Path, place: str, text: str, phrase: bytes
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    home.mkdir()
    if place == "global":  # (a project file of an untrusted folder would ask about trust first)
        (home / "settings.toml").write_text(text)
    else:
        listed = f"[permissions]\ntrusted_projects = [{json.dumps(str(workspace))}]\n"
        (home / "settings.toml").write_text(listed)
        (workspace / ".magi-code").mkdir()
        (workspace / ".magi-code" / "settings.toml").write_text(text)
    code, out = run_in_pty([], workspace, home, {})
    assert code == 1
    assert b"startup failed: configuration_invalid (" + phrase in out
    assert PYTHON_TEXT.search(out) is None, out
