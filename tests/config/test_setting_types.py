"""A settings value of the wrong type, anywhere, is `configuration_invalid`; never another
exception (issue 35, item 5). The walk is over config/schema.py's table of every known key:
a valid sample that holds each of them, then each of its values (tables and list items too)
replaced by values of every TOML type - strings, numbers, booleans, dates, lists, tables nested
three deep - in the global file, in a trusted project's file and in an untrusted project's.

- global file, trusted project: startup refuses with `configuration_invalid` (StartupError),
  unless trust drops that key from a trusted project anyway (a credential source, `[sandbox]`
  and `[melchior]`, which a project only narrows);
- untrusted project: startup goes on, and the value is dropped: `(not valid)` when the key is
  one an untrusted project may set;
- a value of the right type may still be refused (what it means is checked by its module), but
  only as a StartupError; whatever starts builds its first turn without an exception.

The environment variables that feed settings (MAGI_SANDBOX_MODE, MAGI_CODE_DELEGATION,
MAGI_MELCHIOR_TALK) and the `--agent` flag are walked the same way. In process: `admit` is
what every face calls (tests/exec, tests/conformance and tests/acp_agent drive the faces).
"""

import copy
import datetime
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from magi_code.config import schema, settings, trust
from magi_code.config.settings_file import toml_key
from magi_code.runner import agents, environment, peers, setup
from magi_code.runner.startup import Admitted, StartupError, admit
from magi_code.sessions.retention import retention_days
from magi_code.tools.approvals import ApprovalBroker

Path_ = tuple[str | int, ...]

# Every known key, with a value startup takes (the fixture provider stays selected; the MCP
# servers are defined but off, so nothing is spawned).
SAMPLE: dict[str, Any] = {
    "provider": "fixture",
    "model": "fixture-model",
    "thinking": "medium",
    "agent": "default",
    "instructions": [],
    "approval_mode": "ask",
    "code_mode": False,
    "providers": {
        "fixture": {
            "models": ["fixture-model"],
            "discover": False,
            "context_window": 1000,
            "images": False,
        },
        "openai": {
            "wire_api": "openai-responses",
            "base_url": "https://api.openai.com/v1",
            "api_key_env": "OPENAI_API_KEY",
            "models": ["gpt-5"],
        },
        "codex": {"token_url": "https://auth.openai.com/oauth/token", "client_id": "app_x"},
    },
    "mcp": {
        "approved": [],
        "servers": {
            "files": {
                "command": "python",
                "args": ["-m", "files"],
                "env": {"A": "b"},
                "cwd": "/tmp",
                "enabled": False,
            },
            "tracker": {
                "url": "https://mcp.example.com/mcp",
                "headers": {"X-Team": "t"},
                "bearer_token_env": "TRACKER_TOKEN",
                "enabled": False,
            },
        },
    },
    "permissions": {
        "trusted_projects": [],
        "default_read": "allow",
        "default_write": "ask",
        "default_shell": "ask",
        "rules": [
            {"tool": "*", "decision": "ask", "command": "git *", "path": "src/**", "domain": "a.b"}
        ],
        "project_rules": [
            {"tool": "*", "decision": "deny", "command": "rm *", "path": "/", "domain": "a.b"}
        ],
        "code_mode": {
            "default_read": "allow",
            "default_write": "deny",
            "default_shell": "deny",
            "rules": [
                {"tool": "*", "decision": "ask", "command": "ls", "path": "a", "domain": "a.b"}
            ],
            "project_rules": [
                {"tool": "*", "decision": "deny", "command": "rm", "path": "b", "domain": "a.b"}
            ],
        },
    },
    "hooks": {
        "pre_tool_use": [{"command": ["true"], "matcher": "shell", "timeout_ms": 1000}],
        "stop": [{"command": "true", "cwd": "/tmp"}],
    },
    "skills": {"disabled": ["none"]},
    "agents": {"disabled": ["none"]},
    "sessions": {"retention_days": 30},
    "sandbox": {"mode": "workspace-write", "network": False, "writable_roots": [], "deny_read": []},
    "melchior": {"talk": "instance"},
    "shell": {"env_keep": ["MY_TOOL_*"]},
    "subagents": {"max_concurrent": 2, "max_depth": 1},
    "turn": {"max_rounds": 50},
    "ui": {"notify": True},
    "web": {"search": False, "allow_private": False},
    "network": {
        "proxy": "http://proxy.example:3128",
        "ca_bundle": os.devnull,  # startup asks only that the files exist
        "client_cert": os.devnull,
        "client_key": os.devnull,
    },
    "a2a": {
        "tokens": ["env:A2A_CALLER_TOKEN"],
        "tls_cert": os.devnull,
        "tls_key": os.devnull,
        "tasks_per_token": 4,
        "agents": {"peer": {"url": "https://peer.example:8042", "token": "env:PEER_TOKEN"}},
    },
}
NESTED = {"x": {"y": {"z": [{"w": 1}]}}}
VALUES: list[object] = [
    "s",
    "",
    0,
    7,
    -1,
    True,
    1.5,
    datetime.date(2020, 1, 2),
    [],
    [1],
    ["s"],
    [{"a": 1}],
    {},
    {"x": 1},
    NESTED,
]
# A project narrows these, trusted or not: a bad value is dropped (config/trust.py, (4), (5)).
NARROWED_WHEN_TRUSTED = ("sandbox", "melchior")


# ---- the schema, walked ---------------------------------------------------------------------


def schema_paths(shape: object, path: Path_ = ()) -> Iterator[Path_]:
    """Every key path the schema names; a named entry is `*`, a list item 0."""
    if isinstance(shape, dict):
        for key, inner in shape.items():
            yield (*path, key)
            yield from schema_paths(inner, (*path, key))
    elif isinstance(shape, schema.Each):
        yield from schema_paths(shape.shape, (*path, "*"))
    elif isinstance(shape, schema.ListOf):
        yield from schema_paths(shape.shape, (*path, 0))


def value_paths(value: object, path: Path_ = ()) -> Iterator[Path_]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield (*path, key)
            yield from value_paths(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield (*path, index)
            yield from value_paths(inner, (*path, index))


def wrong_type(shape: object, value: object) -> bool:
    """The test's own oracle of what each kind takes (not schema.fault)."""
    if isinstance(shape, str):
        strings = isinstance(value, list) and all(isinstance(v, str) for v in value)
        number = value if isinstance(value, int) and not isinstance(value, bool) else None
        takes = {
            schema.STRING: isinstance(value, str),
            schema.NAME: isinstance(value, str) and value != "",
            schema.SWITCH: isinstance(value, bool),
            schema.WHOLE: number is not None,
            schema.COUNT: number is not None and number >= 0,
            schema.POSITIVE: number is not None and number > 0,
            schema.STRINGS: strings,
            schema.COMMAND: strings or isinstance(value, str),
        }
        return not takes[shape]
    if isinstance(shape, schema.ListOf):
        return not isinstance(value, list) or any(wrong_type(shape.shape, v) for v in value)
    if not isinstance(value, dict):
        return True
    if isinstance(shape, schema.Each):
        return any(wrong_type(shape.shape, v) for v in value.values())
    assert isinstance(shape, dict)
    return any(wrong_type(shape[k], v) for k, v in value.items() if k in shape)


def sample_holds(path: Path_, node: object = SAMPLE) -> bool:
    """Whether the sample has the path (`*`: in one of the named entries)."""
    if not path:
        return True
    part, rest = path[0], path[1:]
    if isinstance(node, dict) and part == "*":
        return any(sample_holds(rest, entry) for entry in node.values())
    if isinstance(node, dict) and part in node:
        return sample_holds(rest, node[part])
    if isinstance(node, list) and part == 0:
        return any(sample_holds(rest, item) for item in node)
    return False


def test_the_sample_holds_every_key_of_the_schema() -> None:
    missing = [path for path in schema_paths(schema.SETTINGS) if not sample_holds(path)]
    assert missing == []
    assert schema.fault(SAMPLE) is None


def test_the_schema_names_every_key_the_code_knows() -> None:
    """The keys other modules read or refuse by name are all typed here."""
    from magi_code.providers import registry
    from magi_code.runner import hooks
    from magi_code.tools import policy
    from magi_code.tools.sandbox import settings as sandbox

    known: dict[str, Any] = schema.SETTINGS
    assert set(settings.DEFAULTS) | set(trust.TOP_LEVEL) <= set(known)
    assert set(trust.PERMISSIONS) == set(policy._TOP_KEYS) == set(known["permissions"])
    assert set(policy._CODE_MODE_KEYS) == set(known["permissions"]["code_mode"])
    assert set(policy._RULE_KEYS) == set(schema.RULE)
    assert set(trust.MCP) == set(known["mcp"])
    assert set(trust.SESSIONS) == set(known["sessions"])
    assert set(known["sandbox"]) == sandbox._KEYS
    assert set(schema.HOOK) == hooks._KEYS
    assert set(schema.MCP_SERVER) >= trust.MCP_SERVER_CREDENTIAL_KEYS
    provider_keys = set(trust.KNOWN_PROVIDER) | trust.KNOWN_PROVIDER_FIXED
    assert provider_keys | set(registry._CREDENTIAL_SOURCE) <= set(schema.PROVIDER)


# ---- startup over every wrong value ---------------------------------------------------------


def toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{toml_key(k)} = {toml(v)}" for k, v in value.items()) + "}"


def document(table: dict[str, Any]) -> str:
    return "".join(f"{toml_key(key)} = {toml(value)}\n" for key, value in table.items())


def replaced(path: Path_, value: object) -> dict[str, Any]:
    changed = copy.deepcopy(SAMPLE)
    node: Any = changed
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return changed


class Place:
    """An MC_HOME and a workspace; `start` writes both files and admits."""

    def __init__(self, root: Path) -> None:
        self.home, self.workspace = root / "home", root / "ws"
        (self.workspace / ".magi-code").mkdir(parents=True)
        self.home.mkdir()
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(root),
            "MC_HOME": str(self.home),
        }

    def start(
        self, global_table: dict[str, Any], project: dict[str, Any], trusted: bool, **env: str
    ) -> Admitted:
        if trusted:
            global_table = copy.deepcopy(global_table)
            permissions = global_table.setdefault("permissions", {})
            if not isinstance(permissions, dict):
                permissions = global_table["permissions"] = {}
            permissions["trusted_projects"] = [str(self.workspace)]
        (self.home / "settings.toml").write_text(document(global_table))
        (self.workspace / ".magi-code" / "settings.toml").write_text(document(project))
        admitted = admit(str(self.workspace), {**self.env, **env})
        try:
            first_turn(admitted)
        finally:
            if admitted.mcp is not None:
                admitted.mcp.close(1)
        return admitted


def first_turn(admitted: Admitted) -> None:
    """What a face builds from the snapshot after startup: none of it may raise."""

    async def announce(*_: object) -> None:
        return None

    setup.turn_setup(admitted, (None, None, None), "s", "r", ApprovalBroker(announce))
    retention_days(admitted.settings)
    agents.bound(admitted.settings, "max_depth", 3)
    peers.talk_setting(admitted.settings)
    environment.env_keep(admitted.settings)


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Place:
    return Place(tmp_path_factory.mktemp("types"))


def names(path: Path_) -> list[str]:
    """The keys of a path up to its first list position."""
    cut = next((i for i, part in enumerate(path) if isinstance(part, int)), len(path))
    return [part for part in path[:cut] if isinstance(part, str)]


def holds(dropped: trust.Dropped, path: Path_) -> bool:
    """Whether the drop is of the value at `path` or of a table holding it."""
    keys, at = dropped.key.split("."), names(path)
    return at[: len(keys)] == keys


def covers(dropped: trust.Dropped, path: Path_) -> bool:
    """Whether the drop is of the value at `path`, of a table holding it or of a key in it."""
    keys, at = dropped.key.split("."), names(path)
    return holds(dropped, path) or keys[: len(at)] == at


def dropped_anyway(drops: tuple[trust.Dropped, ...], path: Path_) -> bool:
    """Whether trust drops all of the sample's own value at `path`."""
    node: Any = SAMPLE
    for part in path:
        node = node[part]
    leaves = [(*path, *inner) for inner in value_paths(node)] or [path]
    return all(any(holds(d, leaf) for d in drops) for leaf in leaves)


def outcome(
    place: Place, global_table: dict[str, Any], project: dict[str, Any], trusted: bool
) -> Admitted | str:
    """The admitted snapshot, or the StartupError's code; any other exception fails the test."""
    try:
        return place.start(global_table, project, trusted)
    except StartupError as refused:
        return refused.code


CASES = [(path, value) for path in value_paths(SAMPLE) for value in VALUES]
SECTIONS = sorted({str(path[0]) for path, _ in CASES})  # one test each: they run in parallel


@pytest.mark.slow("admits every setting with each wrong value, in three places")
@pytest.mark.parametrize("section", SECTIONS)
def test_every_wrong_value_in_each_file_is_refused_or_dropped(place: Place, section: str) -> None:
    base = {
        trusted: place.start(SAMPLE, SAMPLE, trusted).dropped for trusted in (False, True)
    }  # what trust drops from the valid sample itself
    problems: list[str] = []
    for path, value in [(path, value) for path, value in CASES if path[0] == section]:
        changed = replaced(path, value)
        wrong = wrong_type(schema.SETTINGS, changed)
        where = f"{schema.shown(path)} = {value!r}"
        # the global file, under an untrusted project that sets every key validly
        got = outcome(place, changed, SAMPLE, trusted=False)
        if wrong and got != "configuration_invalid":
            problems.append(f"global {where}: {got}")
        # a project file, trusted or not, over the valid sample
        for trusted in (True, False):
            got = outcome(place, SAMPLE, changed, trusted)
            file = "trusted" if trusted else "untrusted"
            if not wrong:
                continue
            anyway = dropped_anyway(base[trusted], path)
            if trusted and not anyway and path[0] not in NARROWED_WHEN_TRUSTED:
                if got != "configuration_invalid":
                    problems.append(f"{file} {where}: {got}")
                continue
            if trusted and anyway and got == "configuration_invalid":
                continue  # a key trust would drop, refused as its own file's error
            if isinstance(got, str):
                problems.append(f"{file} {where}: refused with {got}")
                continue
            drops = [d for d in got.dropped if covers(d, path)]
            if not drops:
                problems.append(f"{file} {where}: kept")
            elif not anyway and all(d.reason != trust.INVALID for d in drops):
                problems.append(f"{file} {where}: dropped, but not as not valid")
    assert problems == [], "\n".join(problems)


# ---- the environment and the flags that feed settings ----------------------------------------

DELEGATION = {
    "parent_session": "s",
    "parent_agent": "a",
    "depth": 1,
    "trusted": False,
    "ceilings": [{"permissions": {"default_shell": "deny"}, "rules": []}],
    "profile": "general",
}
JSON_VALUES = [v for v in VALUES if not isinstance(v, datetime.date)] + [None]


def delegations() -> Iterator[str]:
    """MAGI_CODE_DELEGATION: every JSON type whole, and in each field of a good one."""
    yield json.dumps(DELEGATION)
    yield from ("", "{", "not json", "[" * 100_000, '{"a":' * 100_000)
    for value in JSON_VALUES:
        yield json.dumps(value)
        for key in DELEGATION:
            yield json.dumps({**DELEGATION, key: value})
        for key in ("permissions", "rules"):
            yield json.dumps({**DELEGATION, "ceilings": [{key: value}]})


ENVIRONMENT = [
    *(("MAGI_CODE_DELEGATION", raw) for raw in delegations()),
    *(
        (name, raw)
        for name in ("MAGI_SANDBOX_MODE", "MAGI_MELCHIOR_TALK")
        for raw in ("read-only", "workspace-write", "full-access", "project", "", "s", "1", "[]")
    ),
]


def test_every_environment_value_starts_or_is_refused(place: Place) -> None:
    started = set()
    for name, raw in ENVIRONMENT:
        try:
            place.start(SAMPLE, {}, False, **{name: raw})
        except StartupError as refused:
            assert refused.code in ("configuration_invalid", "profile_invalid"), (name, raw)
        else:
            started.add(name)
    assert started == {"MAGI_CODE_DELEGATION", "MAGI_SANDBOX_MODE", "MAGI_MELCHIOR_TALK"}


@pytest.mark.parametrize(
    "agent", ["", "default", "general", "nobody", "../agents/x", "a\x1b[2J", "x" * 10_000]
)
def test_every_agent_flag_starts_or_is_refused(place: Place, agent: str) -> None:
    (place.home / "settings.toml").write_text(document(SAMPLE))
    try:
        admit(str(place.workspace), place.env, agent=agent)
    except StartupError as refused:
        assert refused.code == "profile_invalid"
        assert str(refused.detail).isprintable()  # a name is said only once checked
