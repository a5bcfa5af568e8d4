"""The one safe TOML writer of the global settings: edits keep every other byte, are checked
by parsing, and refuse layouts they cannot edit safely."""

import os
import stat
import tomllib
from pathlib import Path

import pytest

from magi_code.config import settings_file
from magi_code.config.settings_file import SettingsFileError

USER = """# mine
model = "m"  # trailing comment

[mcp.servers.keep]
command = "keep"   # spacing kept
[mcp.servers.gone]
command = "x"
[mcp.servers.gone.env]
K = "v"

[permissions]
default_shell = "ask"
"""


def test_remove_table_drops_it_with_its_subtables_and_keeps_every_other_byte(
    tmp_path: Path,
) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(USER)
    assert settings_file.remove_table(str(path), ["mcp", "servers", "gone"]) is True
    assert path.read_text() == USER.replace('[mcp.servers.gone]\ncommand = "x"\n', "").replace(
        '[mcp.servers.gone.env]\nK = "v"\n', ""
    )
    assert settings_file.remove_table(str(path), ["mcp", "servers", "gone"]) is False
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_add_table_appends_and_refuses_an_existing_one(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(USER)
    values = {"url": "https://h/mcp", "headers": {"X-K": "env:K", "a b": "c"}, "enabled": True}
    settings_file.add_table(str(path), ["mcp", "servers", "new one"], values)
    text = path.read_text()
    assert text.startswith(USER)
    assert tomllib.loads(text)["mcp"]["servers"]["new one"] == values
    with pytest.raises(SettingsFileError):
        settings_file.add_table(str(path), ["mcp", "servers", "keep"], {"command": "y"})


@pytest.mark.parametrize(
    "layout",
    [
        'mcp = { servers = { gone = { command = "x" } } }\n',  # inline tables
        '[mcp]\nservers.gone.command = "x"\n',  # dotted keys
    ],
)
def test_layouts_that_cannot_be_edited_safely_are_refused_untouched(
    tmp_path: Path, layout: str
) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(layout)
    with pytest.raises(SettingsFileError):
        settings_file.remove_table(str(path), ["mcp", "servers", "gone"])
    assert path.read_text() == layout


def test_set_array_in_place_after_a_header_or_as_a_new_table(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('[mcp]\napproved = [ "a", # why\n "b" ]\nx = 1\n')
    settings_file.set_array(str(path), "mcp", "approved", ["a"])
    assert path.read_text() == '[mcp]\napproved = ["a"]\nx = 1\n'
    path.write_text("[mcp]\nx = 1\n")
    settings_file.set_array(str(path), "mcp", "approved", ["d"])
    assert path.read_text() == '[mcp]\napproved = ["d"]\nx = 1\n'
    path.write_text("x = 1")
    settings_file.set_array(str(path), "mcp", "approved", ["d"])
    assert path.read_text() == 'x = 1\n\n[mcp]\napproved = ["d"]\n'
