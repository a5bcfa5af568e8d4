"""Recording trust in the user's global settings: minimal, checked, atomic edits, 0600."""

import os
import stat
import tomllib
from pathlib import Path

import pytest

from magi_code.config import trust_file


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def other_lines(text: str, before: str) -> list[str]:
    """The non-blank lines outside the trusted_projects array (and a table header added)."""
    out, in_array = [], False
    for line in text.split("\n"):
        if "trusted_projects" in line:
            in_array = not line.rstrip().endswith("]")
        elif in_array:
            in_array = line.strip() != "]"
        elif line.strip() and not (line == "[permissions]" and line not in before):
            out.append(line)
    return out


@pytest.mark.parametrize(
    "before",
    [
        "",
        '# my settings\nprovider = "openai"  # keep me\n\n'
        '[providers.x]\nwire_api = "openai-chat"\n',
        '[permissions]\ndefault_shell = "ask" # why\n\n[[permissions.rules]]\ntool = "shell"\n'
        'decision = "deny"\n',
        '[permissions]\ntrusted_projects = [\n  "/a", # a ] comment\n  "/b]\\"",\n]\nx = 1\n',
        'permissions.default_shell = "ask"\n[other]\ny = 1\n',
        '[[permissions.rules]]\ntool = "shell"\ndecision = "allow"\n',
    ],
)
def test_trust_then_untrust_changes_only_the_list(tmp_path: Path, before: str) -> None:
    folder = tmp_path / 'project with "quotes" and é'
    folder.mkdir()
    settings = tmp_path / "home" / "settings.toml"
    settings.parent.mkdir()
    settings.write_text(before)
    old = tomllib.loads(before)
    listed = old.get("permissions", {}).get("trusted_projects", [])

    assert trust_file.trust(str(settings), str(folder)) is True
    after = settings.read_text()
    assert other_lines(after, before) == other_lines(before, before)  # every other byte kept
    new = tomllib.loads(after)
    assert new["permissions"].pop("trusted_projects") == [*listed, str(folder)]
    old.get("permissions", {}).pop("trusted_projects", None)
    assert new.get("permissions", {}) == old.get("permissions", {})
    assert {k: v for k, v in new.items() if k != "permissions"} == {
        k: v for k, v in old.items() if k != "permissions"
    }
    assert mode(settings) == 0o600
    assert [p.name for p in settings.parent.iterdir()] == ["settings.toml"]  # no temp left
    assert trust_file.trust(str(settings), str(folder)) is False  # once is enough
    assert trust_file.untrust(str(settings), str(folder)) is True
    assert (
        tomllib.loads(settings.read_text()).get("permissions", {}).get("trusted_projects", [])
        == listed
    )


def test_absent_file_and_folder_are_created_private(tmp_path: Path) -> None:
    settings = tmp_path / "new-home" / "settings.toml"
    assert trust_file.trust(str(settings), str(tmp_path))
    assert settings.read_text() == f'[permissions]\ntrusted_projects = ["{tmp_path}"]\n'
    assert mode(settings) == 0o600 and mode(settings.parent) == 0o700


def test_a_symlinked_settings_file_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.toml"
    real.parent.mkdir()
    real.write_text('model = "m"\n')
    link = tmp_path / "settings.toml"
    link.symlink_to(real)
    trust_file.trust(str(link), str(tmp_path))
    assert link.is_symlink()
    assert tomllib.loads(real.read_text())["model"] == "m"


def test_a_file_it_cannot_edit_safely_is_left_alone(tmp_path: Path) -> None:
    settings = tmp_path / "settings.toml"
    for text in ('permissions = { default_shell = "ask" }\n', "not toml = = \n"):
        settings.write_text(text)
        with pytest.raises(trust_file.TrustFileError):
            trust_file.trust(str(settings), str(tmp_path))
        assert settings.read_text() == text


def test_symlinked_and_dotted_paths_are_stored_canonical(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    settings = tmp_path / "settings.toml"
    trust_file.trust(str(settings), str(tmp_path / "link" / ".." / "link"))
    listed = tomllib.loads(settings.read_text())["permissions"]["trusted_projects"]
    assert listed == [os.path.realpath(tmp_path / "real")]
    assert trust_file.untrust(str(settings), str(tmp_path / "link"))


def test_an_ancestor_still_trusts_after_untrust(tmp_path: Path) -> None:
    settings = tmp_path / "settings.toml"
    child = tmp_path / "child"
    child.mkdir()
    trust_file.trust(str(settings), str(tmp_path))
    assert trust_file.untrust(str(settings), str(child)) is False
    assert trust_file.trusted_through(str(settings), str(child)) == str(tmp_path)


def test_control_characters_are_escaped(tmp_path: Path) -> None:
    folder = tmp_path / "a\tb\x7fc\\d"
    folder.mkdir()
    settings = tmp_path / "settings.toml"
    trust_file.trust(str(settings), str(folder))
    assert tomllib.loads(settings.read_text())["permissions"]["trusted_projects"] == [str(folder)]
