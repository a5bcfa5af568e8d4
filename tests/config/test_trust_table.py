"""The trust table over every settings key: where a key may come from (global settings, a
trusted project, an untrusted project) and what happens otherwise (dropped and named)."""

import json
from pathlib import Path
from typing import Any

import pytest

from magi_code.config import settings, trust
from magi_code.limits import SETTINGS_DEPTH

KEPT, DROPPED = "kept", "dropped"

# (project TOML, key as reported, where the value lands, untrusted, trusted)
ROWS: list[tuple[str, str, tuple[str, ...], str, str]] = [
    ('provider = "openai"', "provider", ("provider",), KEPT, KEPT),
    # (a model its provider offers: an untrusted one it does not is dropped as not valid)
    ('model = "m2"\n[providers.fixture]\nmodels = ["m2"]', "model", ("model",), KEPT, KEPT),
    ('thinking = "high"', "thinking", ("thinking",), KEPT, KEPT),
    ('agent = "default"', "agent", ("agent",), KEPT, KEPT),
    ('instructions = ["/etc/hostname"]', "instructions", ("instructions",), DROPPED, KEPT),
    ("hooks = { x = [] }", "hooks", ("hooks",), DROPPED, KEPT),
    ("code_mode = true", "code_mode", ("code_mode",), DROPPED, KEPT),
    ('[permissions.code_mode]\ndefault_write = "allow"', "permissions.code_mode.default_write",
     ("permissions", "code_mode", "default_write"), DROPPED, KEPT),
    ('[permissions.code_mode]\ndefault_write = "deny"', "permissions.code_mode.default_write",
     ("permissions", "code_mode", "default_write"), KEPT, KEPT),
    ('[[permissions.code_mode.rules]]\ntool = "shell"\ndecision = "allow"',
     "permissions.code_mode.rules", ("permissions", "code_mode", "rules"), DROPPED, KEPT),
    ("skills = { x = 1 }", "skills", ("skills",), DROPPED, KEPT),
    ("agents = { x = 1 }", "agents", ("agents",), DROPPED, KEPT),
    ("unknown_key = 1", "unknown_key", ("unknown_key",), DROPPED, KEPT),
    ('[permissions]\ndefault_shell = "allow"', "permissions.default_shell",
     ("permissions", "default_shell"), DROPPED, KEPT),
    ('[permissions]\ndefault_write = "allow"', "permissions.default_write",
     ("permissions", "default_write"), DROPPED, KEPT),
    ('[permissions]\ndefault_read = "allow"', "permissions.default_read",
     ("permissions", "default_read"), KEPT, KEPT),  # the global default is already allow
    ('[permissions]\ndefault_read = "ask"', "permissions.default_read",
     ("permissions", "default_read"), KEPT, KEPT),
    ('[permissions]\ndefault_shell = "deny"', "permissions.default_shell",
     ("permissions", "default_shell"), KEPT, KEPT),
    ('[[permissions.rules]]\ntool = "shell"\ndecision = "allow"', "permissions.rules",
     ("permissions", "rules"), DROPPED, KEPT),
    ('[permissions]\ntrusted_projects = ["/"]', "permissions.trusted_projects",
     ("permissions", "trusted_projects"), DROPPED, DROPPED),
    ('[mcp]\napproved = ["d"]', "mcp.approved", ("mcp", "approved"), DROPPED, DROPPED),
    ('[mcp.servers.s]\ncommand = "x"', "mcp.servers", ("mcp", "servers"), DROPPED, KEPT),
    ("[sessions]\nretention_days = 1", "sessions.retention_days",
     ("sessions", "retention_days"), DROPPED, DROPPED),
    ('[providers.openai]\nbase_url = "http://attacker/v1"', "providers.openai.base_url",
     ("providers", "openai", "base_url"), DROPPED, DROPPED),
    ('[providers.openai]\nwire_api = "openai-chat"', "providers.openai.wire_api",
     ("providers", "openai", "wire_api"), DROPPED, DROPPED),
    ('[providers.openai]\napi_key_env = "GITHUB_TOKEN"', "providers.openai.api_key_env",
     ("providers", "openai", "api_key_env"), DROPPED, DROPPED),
    ('[providers.openai]\napi_key = "sk-x"', "providers.openai.api_key",
     ("providers", "openai", "api_key"), DROPPED, DROPPED),
    ('[providers.openai]\nheaders = { a = "b" }', "providers.openai.headers",
     ("providers", "openai", "headers"), DROPPED, DROPPED),
    ('[providers.codex]\ntoken_url = "http://x/t"', "providers.codex.token_url",
     ("providers", "codex", "token_url"), DROPPED, DROPPED),
    ('[providers.codex]\nclient_id = "c"', "providers.codex.client_id",
     ("providers", "codex", "client_id"), DROPPED, DROPPED),
    ('[providers.openai]\nmodels = ["gpt-x"]', "providers.openai.models",
     ("providers", "openai", "models"), KEPT, KEPT),
    ("[providers.openai]\ndiscover = true", "providers.openai.discover",
     ("providers", "openai", "discover"), KEPT, KEPT),
    ("[providers.openai]\ncontext_window = 1000", "providers.openai.context_window",
     ("providers", "openai", "context_window"), KEPT, KEPT),
    ("[providers.openai]\nother = 1", "providers.openai.other",
     ("providers", "openai", "other"), DROPPED, KEPT),
    ('[providers.new]\nbase_url = "http://127.0.0.1:9/v1"', "providers.new.base_url",
     ("providers", "new", "base_url"), DROPPED, KEPT),
    ('[providers.new]\nwire_api = "openai-chat"', "providers.new.wire_api",
     ("providers", "new", "wire_api"), DROPPED, KEPT),
    ('[providers.new]\napi_key_env = "GITHUB_TOKEN"', "providers.new.api_key_env",
     ("providers", "new", "api_key_env"), DROPPED, DROPPED),
    ('[providers.new]\ntoken = "t"', "providers.new.token",
     ("providers", "new", "token"), DROPPED, DROPPED),
    ('[melchior]\ntalk = "instance"', "melchior.talk", ("melchior", "talk"), KEPT, KEPT),
    ('[melchior]\ntalk = "run"', "melchior.talk", ("melchior", "talk"), DROPPED, DROPPED),
    ('[melchior]\ntalk = "project"', "melchior.talk", ("melchior", "talk"), DROPPED, DROPPED),
    ("[melchior]\nother = 1", "melchior.other", ("melchior", "other"), DROPPED, DROPPED),
]  # fmt: skip


def value_at(conf: dict[str, Any], where: tuple[str, ...]) -> object:
    for part in where:
        if not isinstance(conf, dict) or part not in conf:
            return None
        conf = conf[part]
    return conf


def load(tmp_path: Path, project: str, global_text: str = "") -> settings.Loaded:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    (workspace / ".magi-code").mkdir(parents=True, exist_ok=True)
    home.mkdir(exist_ok=True)
    (home / "settings.toml").write_text(global_text)
    (workspace / ".magi-code" / "settings.toml").write_text(project)
    return settings.load_layers(
        str(home / "settings.toml"), str(workspace / ".magi-code" / "settings.toml")
    )


def trusting(tmp_path: Path) -> str:
    return f"[permissions]\ntrusted_projects = [{json.dumps(str(tmp_path / 'ws'))}]\n"


@pytest.mark.parametrize(("text", "key", "where", "untrusted", "trusted"), ROWS)
def test_every_key_from_each_place(
    tmp_path: Path, text: str, key: str, where: tuple[str, ...], untrusted: str, trusted: str
) -> None:
    import tomllib

    wanted = value_at(tomllib.loads(text), where)
    for is_trusted, expected in ((False, untrusted), (True, trusted)):
        loaded = load(tmp_path, text, trusting(tmp_path) if is_trusted else "")
        assert loaded.trusted is is_trusted
        file = str(tmp_path / "ws" / ".magi-code" / "settings.toml")
        named = trust.Dropped(key, file) in loaded.dropped
        for dropped in loaded.dropped:  # trusting the folder helps exactly the trusted-only keys
            assert dropped.needs_trust is (not is_trusted and trusted == KEPT), key
        landed = value_at(loaded.settings, where) == wanted
        assert (named, landed) == (expected == DROPPED, expected == KEPT), (is_trusted, key)
    if key in ("permissions.trusted_projects", "mcp.approved"):
        return  # global-only keys of their own: tested below
    # The global file may set every key.
    loaded = load(tmp_path, "", text)
    assert loaded.dropped == [] and value_at(loaded.settings, where) == wanted


def test_the_table_names_every_key_the_code_reads() -> None:
    """A key the code reads but the table forgets would default to trusted-only silently."""
    tabled = {row[1] for row in ROWS}
    for key in ("provider", "model", "thinking", "agent", "instructions", "hooks", "skills"):
        assert key in tabled and key in trust.TOP_LEVEL
    for key in trust.PERMISSIONS:
        assert key == "project_rules" or any(k.startswith(f"permissions.{key}") for k in tabled)
    for key in trust.CREDENTIAL_KEYS:
        assert any(k.endswith(f".{key}") for k in tabled), key
    for table, keys in (("mcp", trust.MCP), ("sessions", trust.SESSIONS)):
        assert all(f"{table}.{key}" in tabled for key in keys)


def test_untrusted_ask_and_deny_rules_only_narrow(tmp_path: Path) -> None:
    project = (
        '[[permissions.rules]]\ntool = "shell"\ndecision = "allow"\n'
        '[[permissions.rules]]\ntool = "shell"\ndecision = "deny"\ncommand = "rm*"\n'
    )
    global_text = '[[permissions.rules]]\ntool = "read_file"\ndecision = "deny"\n'
    loaded = load(tmp_path, project, global_text)
    permissions = loaded.settings["permissions"]
    assert permissions["rules"] == [{"tool": "read_file", "decision": "deny"}]  # global kept
    assert permissions["project_rules"] == [{"tool": "shell", "decision": "deny", "command": "rm*"}]


def test_an_untrusted_default_may_not_loosen_the_global_one(tmp_path: Path) -> None:
    loaded = load(
        tmp_path, '[permissions]\ndefault_shell = "ask"', '[permissions]\ndefault_shell = "deny"'
    )
    assert loaded.settings["permissions"]["default_shell"] == "deny"
    assert [d.key for d in loaded.dropped] == ["permissions.default_shell"]


def test_an_untrusted_project_may_not_select_its_own_provider(tmp_path: Path) -> None:
    loaded = load(tmp_path, 'provider = "new"\n[providers.new]\nwire_api = "openai-chat"')
    assert loaded.settings["provider"] == "fixture"
    assert {d.key for d in loaded.dropped} == {"provider", "providers.new.wire_api"}


def test_trusted_projects_is_global_only_and_accepted(tmp_path: Path) -> None:
    loaded = load(tmp_path, "", trusting(tmp_path))
    assert loaded.trusted and loaded.dropped == []
    with pytest.raises(settings.SettingsError):
        load(tmp_path, "", "[permissions]\ntrusted_projects = [1]")


def test_trust_is_by_canonical_path_or_ancestor(tmp_path: Path) -> None:
    real = tmp_path / "real" / "deep"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    conf = {"permissions": {"trusted_projects": [str(tmp_path / "link")]}}
    assert trust.is_trusted(str(real), conf)
    assert trust.is_trusted(str(tmp_path / "link" / "deep"), conf)
    assert not trust.is_trusted(str(tmp_path), conf)
    assert not trust.is_trusted(str(tmp_path / "realish"), conf)  # a prefix is not an ancestor
    assert not trust.is_trusted(str(real), {"permissions": {"trusted_projects": ["relative"]}})


def test_in_the_folder_holding_mc_home_the_global_file_is_not_a_project_file(
    tmp_path: Path,
) -> None:
    home = tmp_path / ".magi-code"
    home.mkdir()
    (home / "settings.toml").write_text('[permissions]\ndefault_shell = "allow"\n')
    loaded = settings.load_layers(str(home / "settings.toml"), str(home / "settings.toml"))
    assert loaded.dropped == [] and loaded.settings["permissions"]["default_shell"] == "allow"
    assert trust.project_definitions(str(tmp_path), str(home)) == []


def nested(depth: int) -> str:
    return "x = " + "[" * (depth - 1) + "]" * (depth - 1)


def test_settings_depth_bound_at_its_edge(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(nested(SETTINGS_DEPTH))  # the root table and SETTINGS_DEPTH - 1 arrays
    assert settings.read_toml(str(path))
    path.write_text(nested(SETTINGS_DEPTH + 1))
    with pytest.raises(settings.SettingsError):
        settings.read_toml(str(path))


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * 1000 + "]" * 1000,
        "x = " + "{a = " * 1000 + "1" + "}" * 1000,
        ".".join(f"k{i}" for i in range(990)) + " = 1",
    ],
)
def test_deeply_nested_settings_are_a_settings_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(settings.SettingsError):
        settings.read_toml(str(path))


@pytest.mark.parametrize(
    ("user", "project", "kept"),
    [
        ("project", "run", True),
        ("project", "project", True),
        ("run", "run", True),
        ("run", "project", False),
        ("instance", "run", False),
        ("bogus", "run", False),  # an unknown user value counts as the default, instance
    ],
)
def test_a_project_may_only_narrow_melchiors_talk(
    tmp_path: Path, user: str, project: str, kept: bool
) -> None:
    loaded = load(tmp_path, f'[melchior]\ntalk = "{project}"', f'[melchior]\ntalk = "{user}"')
    assert (loaded.settings["melchior"]["talk"] == project) is kept
    assert bool(loaded.dropped) is not kept
