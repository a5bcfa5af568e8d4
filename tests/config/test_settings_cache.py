"""A settings file's parse is kept in MC_HOME/cache once the file has settled, and used while
the file is the same file with the same bytes (path, inode, size, modification and change
times); anything else is parsed again. The cache only ever saves a parse, never changes one."""

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from magi_code import cache
from magi_code.config import settings
from magi_code.limits import SETTINGS_SETTLED_NS
from magi_code.runner import startup


class Parses:
    """Counts the real TOML parses."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = settings._parse

        def counted(handle: Any) -> dict[str, Any]:
            self.count += 1
            return real(handle)

        monkeypatch.setattr(settings, "_parse", counted)


def changed_at(path: Path) -> int:
    info = path.stat()
    return max(info.st_mtime_ns, info.st_ctime_ns)


def clock(monkeypatch: pytest.MonkeyPatch, now: int) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: now)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home" / "cache").mkdir(parents=True)
    return tmp_path / "home"


def test_a_settled_parse_is_kept_private_and_used_instead_of_parsing(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file, kept = home / "settings.toml", cache.named(str(home), "s.json")
    file.write_text('provider = "openai"\n[providers.x]\nmodels = ["a", "b"]\nn = 1.5\n')
    parses = Parses(monkeypatch)
    clock(monkeypatch, changed_at(file) + SETTINGS_SETTLED_NS)
    first = settings.read_toml(str(file), kept)
    assert first == {"provider": "openai", "providers": {"x": {"models": ["a", "b"], "n": 1.5}}}
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    assert settings.read_toml(str(file), kept) == first
    assert parses.count == 1


def test_a_parse_is_kept_only_once_the_file_has_settled(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file, kept = home / "settings.toml", cache.named(str(home), "s.json")
    file.write_text("a = 1\n")
    parses = Parses(monkeypatch)
    clock(monkeypatch, changed_at(file) + SETTINGS_SETTLED_NS - 1)
    assert settings.read_toml(str(file), kept) == {"a": 1}
    assert not os.path.exists(kept)
    clock(monkeypatch, changed_at(file) + SETTINGS_SETTLED_NS)
    assert settings.read_toml(str(file), kept) == {"a": 1}
    assert os.path.exists(kept)
    assert settings.read_toml(str(file), kept) == {"a": 1}
    assert parses.count == 2


def test_a_changed_file_is_parsed_again(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file, kept = home / "settings.toml", cache.named(str(home), "s.json")
    file.write_text("a = 1\n")
    parses = Parses(monkeypatch)
    clock(monkeypatch, changed_at(file) + 3600 * 10**9)  # every version below has settled
    assert settings.read_toml(str(file), kept) == {"a": 1}
    # The same size, rewritten in place at another time.
    file.write_text("a = 2\n")
    os.utime(file, ns=(0, file.stat().st_mtime_ns + 1))
    assert settings.read_toml(str(file), kept) == {"a": 2}
    # Replaced by another file (a new inode), as editors save.
    other = home / "other.toml"
    other.write_text("a = 3\n")
    os.replace(other, file)
    assert settings.read_toml(str(file), kept) == {"a": 3}
    # Another file at another path never takes this one's parse.
    assert settings.read_toml(str(file), kept) == {"a": 3}
    elsewhere = home / "elsewhere.toml"
    elsewhere.write_text("a = 4\n")
    assert settings.read_toml(str(elsewhere), kept) == {"a": 4}
    assert parses.count == 4


def test_an_unreadable_cache_or_a_value_json_cannot_hold_is_parsed(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file, kept = home / "settings.toml", cache.named(str(home), "s.json")
    file.write_text("when = 2026-12-01\n")
    parses = Parses(monkeypatch)
    clock(monkeypatch, changed_at(file) + SETTINGS_SETTLED_NS)
    parsed = settings.read_toml(str(file), kept)
    assert str(parsed["when"]) == "2026-12-01"
    assert not os.path.exists(kept), "a date is not cached"
    file.write_text("a = 1\n")
    clock(monkeypatch, changed_at(file) + SETTINGS_SETTLED_NS)
    assert settings.read_toml(str(file), kept) == {"a": 1}
    Path(kept).write_text('{"key": [1, 2')
    assert settings.read_toml(str(file), kept) == {"a": 1}
    assert parses.count == 3


def test_a_broken_file_is_refused_whatever_the_cache_holds(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file, kept = home / "settings.toml", cache.named(str(home), "s.json")
    file.write_text("a = [\n")
    clock(monkeypatch, changed_at(file) + SETTINGS_SETTLED_NS)
    for _ in range(2):
        with pytest.raises(settings.SettingsError):
            settings.read_toml(str(file), kept)
    assert not os.path.exists(kept)


def test_startup_keeps_the_global_and_project_parses_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    (workspace / ".magi-code").mkdir(parents=True)
    home.mkdir()
    (home / "settings.toml").write_text('model = "fixture-model"\n')
    (workspace / ".magi-code" / "settings.toml").write_text('thinking = "low"\n')
    monkeypatch.setattr(settings, "_settled", lambda key: True)
    env = {"MC_HOME": str(home), "PATH": os.environ.get("PATH", "")}
    first = startup.admit(str(workspace), env)
    parses = Parses(monkeypatch)
    again = startup.admit(str(workspace), env)
    assert again.settings == first.settings and parses.count == 0
    kept = {
        name: json.loads((home / "cache" / name).read_text())["value"]
        for name in (settings.GLOBAL_PARSE, settings.PROJECT_PARSE)
    }
    assert kept == {
        settings.GLOBAL_PARSE: {"model": "fixture-model"},
        settings.PROJECT_PARSE: {"thinking": "low"},
    }
