"""Protected paths: writes to MC_HOME (settings, credential and session stores), the user's
credential files and `.git` internals always ask, whatever a rule says, through symlinks and
`..` too; the credential store is never read. Real files and links, the tools' own resolution."""

import tomllib
from pathlib import Path

import pytest

from magi_code.tools.base import ToolContext
from magi_code.tools.files import EditArgs, EditFile, ReadArgs, ReadFile, WriteArgs, WriteFile
from magi_code.tools.paths import Protected
from magi_code.tools.policy import Decision, Policy

ALLOW_ALL = """
[permissions]
default_read = "allow"
default_write = "allow"
[[permissions.rules]]
tool = "*"
decision = "allow"
"""


@pytest.fixture
def homes(tmp_path: Path) -> tuple[Path, Path]:
    user = tmp_path / "home"
    mc_home = user / ".magi-code"
    (mc_home / "sessions").mkdir(parents=True)
    (mc_home / "credentials.json").write_text("{}")
    (user / ".ssh").mkdir()
    return user, mc_home


def allow_all(user: Path, mc_home: Path) -> Policy:
    table = tomllib.loads(ALLOW_ALL)["permissions"]
    return Policy.from_settings(table, Protected.for_homes(str(mc_home), str(user)))


def decide_write(policy: Policy, ctx: ToolContext, raw: str, edit: bool = False) -> Decision:
    if edit:
        tool = EditFile()
        access = tool.access(EditArgs(raw, "a", "b", False), ctx)
        return policy.decide(tool.name, access, ctx.workspace)
    writer = WriteFile()
    return policy.decide(writer.name, writer.access(WriteArgs(raw, "x"), ctx), ctx.workspace)


def decide_read(policy: Policy, ctx: ToolContext, raw: str) -> Decision:
    tool = ReadFile()
    return policy.decide(tool.name, tool.access(ReadArgs(raw, 1, 10), ctx), ctx.workspace)


def test_writes_to_protected_places_ask_under_an_allow_everything_policy(
    ws: Path, ctx: ToolContext, homes: tuple[Path, Path]
) -> None:
    user, mc_home = homes
    policy = allow_all(user, mc_home)
    assert decide_write(policy, ctx, "src/app.py") == "allow"  # the policy does allow
    (ws / "link-home").symlink_to(mc_home)
    (ws / "link-creds").symlink_to(mc_home / "credentials.json")
    (ws / ".git").mkdir()
    for raw in [
        str(mc_home / "settings.toml"),
        str(mc_home / "credentials.json"),
        str(mc_home / "sessions" / "abc.jsonl"),
        str(user / ".ssh" / "authorized_keys"),
        "link-home/settings.toml",  # through a symlink
        "link-creds",
        f"../{Path(*mc_home.relative_to(ws.parent).parts)}/sessions/new.jsonl",  # through ..
        "src/../.git/hooks/pre-commit",
        ".git/config",
        "vendor/lib/.git/HEAD",  # a nested repository's internals too
    ]:
        assert decide_write(policy, ctx, raw) == "ask", raw
        assert decide_write(policy, ctx, raw, edit=True) == "ask", raw


def test_a_deny_rule_still_denies_protected_writes(
    ws: Path, ctx: ToolContext, homes: tuple[Path, Path]
) -> None:
    user, mc_home = homes
    table = {"rules": [{"tool": "*", "decision": "deny"}]}
    policy = Policy.from_settings(table, Protected.for_homes(str(mc_home), str(user)))
    assert decide_write(policy, ctx, str(mc_home / "settings.toml")) == "deny"


def test_the_credential_store_is_never_read(
    ws: Path, ctx: ToolContext, homes: tuple[Path, Path]
) -> None:
    user, mc_home = homes
    policy = allow_all(user, mc_home)
    (ws / "innocent.json").symlink_to(mc_home / "credentials.json")
    assert decide_read(policy, ctx, str(mc_home / "credentials.json")) == "deny"
    assert decide_read(policy, ctx, "innocent.json") == "deny"
    assert decide_read(policy, ctx, str(mc_home / "sessions" / ".." / "credentials.json")) == "deny"
    assert decide_read(policy, ctx, str(mc_home / "settings.toml")) == "allow"


def test_project_rules_only_narrow() -> None:
    ws = Path("/work/project")
    base = {
        "default_shell": "allow",
        "rules": [{"tool": "shell", "command": "rm*", "decision": "deny"}],
        "project_rules": [
            {"tool": "shell", "command": "rm*", "decision": "ask"},  # cannot loosen the deny
            {"tool": "shell", "command": "curl*", "decision": "ask"},  # narrows the allow
        ],
    }
    from magi_code.tools.base import Access

    policy = Policy.from_settings(base)
    assert policy.decide("shell", Access("shell", (), "rm -rf x"), ws) == "deny"
    assert policy.decide("shell", Access("shell", (), "curl x"), ws) == "ask"
    assert policy.decide("shell", Access("shell", (), "ls"), ws) == "allow"
