"""Folder trust, and what a project settings file may set: the one table, enforced here.

A workspace is trusted when its canonical path, or the canonical path of one of its ancestors,
is listed in `[permissions] trusted_projects` of the GLOBAL settings. Nothing a project file
says counts towards trust.

What `<cwd>/.magi-code/settings.toml` may set (README, "Security model", shows this table):

| key                                                         | untrusted | trusted |
|-------------------------------------------------------------|-----------|---------|
| provider (one the global settings or a preset define)       | yes       | yes (1) |
| model, thinking, agent                                      | yes       | yes     |
| providers.<known>.models / discover / context_window        | yes       | yes     |
| permissions.default_read / _write / _shell                  | narrow (2)| yes     |
| permissions.rules                                           | narrow (3)| yes     |
| permissions.code_mode.default_* / .rules (Code Mode policy) | narrow    | yes     |
| instructions, hooks, code_mode, skills, agents, mcp.servers | no        | yes     |
| providers.<new> (never with a credential key, see below)    | no        | yes     |
| any key not named in this table                             | no        | yes     |
| melchior.talk (instance < run < project)                    | narrow (4)| narrow  |
| sandbox.mode / network / writable_roots / deny_read         | narrow (5)| narrow  |
| approval_mode                                               | no        | no      |
| shell (env_keep: names kept in the tools' environment)      | no        | no      |
| web (search, allow_private: what web_fetch may reach)       | no        | no      |
| network (proxy, ca_bundle, client_cert, client_key)         | no        | no      |
| mcp.approved, permissions.trusted_projects,                 | no        | no      |
| sessions.retention_days                                     |           |         |
| a2a.tokens / tls_cert / tls_key / tasks_per_token           | no        | no      |
| a2a.agents.<new>.url (a remote agent, a2a/agents.py)        | no        | yes     |
| a2a.agents.*.token, a2a.agents.<global>.url                 | no        | no      |
| mcp.servers.*.headers / bearer_token_env (credentials)      | no        | no      |
| providers.*.api_key_env / api_key / headers / token /       | no        | no      |
| token_url / client_id (credential sources)                  |           |         |
| providers.<known>.base_url / wire_api                       | no        | no      |

<known> is a provider the global settings or a built-in preset define; <new> is any other.
(1) a trusted project may also select a provider it defines itself.
(2) kept only when at least as strict as the global value (ask or deny over allow, ...).
(3) `ask`/`deny` rules are kept as `permissions.project_rules`, which can only make a decision
    stricter (tools/policy.py); `allow` rules are dropped.
(4) kept only when at most as wide as the global value (default `instance`): melchior's wall
    is the user's setting, handed to `melchior serve`/`tool` as MAGI_MELCHIOR_TALK.
(5) `mode` kept only when at least as narrow as the global one (read-only < workspace-write <
    full-access), `network` only when false, `writable_roots` only the global list's own
    entries; `deny_read` adds to the global list.
Project locations read only in a trusted workspace: PROJECT_LOCATIONS.

A key its file may not set is dropped and named in the result (`Dropped`), so a face can warn;
dropping never fails startup. Untrusted input never stops startup either: in an untrusted
folder a value that startup would refuse (a rule of a bad shape or decision, a value of the
wrong type for its key (config/schema.py), a bad `[sandbox]` value, ...) is dropped the same
way, its reason `INVALID` (settings.load_layers drops a project file that does not parse
whole, naming the position). A trusted project keeps such a value, and startup refuses it as
it refuses the global file's (but a bad `[sandbox]` or `[melchior]` value, dropped as (4) and
(5) say, trusted or not).
Dictionaries in, dictionaries out: no file is read here but by `project_definitions`, which
says so (paths are canonicalised with realpath). For colleagues: `is_trusted` (and
`settings.trusted_for`, which reads the global file) answer for any folder; `Admitted.trusted`
for the admitted workspace.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from magi_code.config import schema
from magi_code.records import record

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import Any

    Drops = tuple[list[str], set[int]]  # the keys dropped, and where the INVALID ones are

ALWAYS, NARROW, TRUSTED, NEVER = "always", "narrow", "trusted", "never"
TOP_LEVEL = {
    "provider": ALWAYS,
    "model": ALWAYS,
    "thinking": ALWAYS,
    "agent": ALWAYS,
    "instructions": TRUSTED,  # extra Markdown paths, absolute ones included, told to the model
    "hooks": TRUSTED,  # commands run on runner events (runner/hooks.py)
    "code_mode": TRUSTED,  # turns on the `code` tool (tools/code_mode.py)
    "skills": TRUSTED,
    "agents": TRUSTED,
    "approval_mode": NEVER,  # the global `auto` (or `ask`); faces' flags choose per launch
    "shell": NEVER,  # env_keep: names the tools' environment keeps (runner/environment.py)
    "web": NEVER,  # search, allow_private (tools/web_fetch.py): the user's own choice
    "network": NEVER,  # the proxy and certificates of every request (providers/network.py)
    "turn": NEVER,  # max_rounds: the cap on a turn's model requests is the user's
    "ui": NEVER,  # notify: Mission Control's bell and notifications
}
PERMISSIONS = {
    "default_read": NARROW,
    "default_write": NARROW,
    "default_shell": NARROW,
    "rules": NARROW,
    "project_rules": NARROW,
    "trusted_projects": NEVER,
    "code_mode": NARROW,  # the Code Mode policy: the same keys, narrowed the same way
}
MCP = {"approved": NEVER, "servers": TRUSTED}
# What an MCP server sends as credentials: only the user's own files name them, so a project
# can neither put a secret in a header nor point one at the user's environment.
MCP_SERVER_CREDENTIAL_KEYS = frozenset({"headers", "bearer_token_env"})
SESSIONS = {"retention_days": NEVER}
# `magi-code a2a serve`'s callers' tokens, certificate pair and bound: the user's alone
A2A_SERVE = {"tokens": NEVER, "tls_cert": NEVER, "tls_key": NEVER, "tasks_per_token": NEVER}
# The remote agents (a2a/agents.py): a trusted project may name one, never give it a token, nor
# move an agent the global settings define (its token would follow the url).
A2A = {**A2A_SERVE, "agents": TRUSTED}
CREDENTIAL_KEYS = frozenset(
    {"api_key_env", "api_key", "headers", "token", "token_url", "client_id"}
)
KNOWN_PROVIDER = {"models": ALWAYS, "discover": ALWAYS, "context_window": ALWAYS}
KNOWN_PROVIDER_FIXED = frozenset({"base_url", "wire_api"})  # where the user sends credentials
DEFAULT_DECISIONS = {"default_read": "allow", "default_write": "ask", "default_shell": "ask"}
STRICTNESS = ("allow", "ask", "deny")
INVALID = "not valid"  # the reason of a value dropped because startup would refuse it
UNKNOWN = "not a setting"  # the reason of a key config/schema.py does not know (nothing reads it)
# Project locations (under <cwd>/.magi-code/) that only a trusted workspace reads.
PROJECT_LOCATIONS = ("settings.toml", "agents", "skills", "hooks", "mcp.json")


@record
class Dropped:
    """One key a project file set and may not: its dotted name, the file's path, whether
    trusting the folder would let it through, and a reason other than trust (`INVALID`, or
    what is wrong with a file dropped whole: then `key` is empty). Or a key of any settings
    file that is no setting at all (`UNKNOWN`), with the closest known key (`guess`). Two
    are equal when their key and file are (so it is unhashable)."""

    key: str
    file: str
    needs_trust: bool = True
    reason: str | None = None
    guess: str | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dropped) and (self.key, self.file) == (other.key, other.file)

    def __repr__(self) -> str:
        return f"Dropped({self.key!r}, {self.file!r})"

    def warning(self) -> str:
        why = "this folder is not trusted" if self.needs_trust else "only global settings may"
        key = _printable(self.key)  # the file's own text
        what = f"{key} from {self.file}" if key else self.file
        if self.reason == UNKNOWN:
            guess = f": did you mean `{_printable(self.guess)}`?" if self.guess else ""
            return f"ignored {what} ({UNKNOWN}{guess})"
        return f"ignored {what} ({self.reason or why})"


def _printable(name: str) -> str:
    """A name from a settings file, its unprintable characters as `?`, bounded."""
    from magi_code.limits import SETTINGS_SHOWN_CHARS

    shown = "".join(c if c.isprintable() else "?" for c in name)
    return shown if len(shown) <= SETTINGS_SHOWN_CHARS else shown[: SETTINGS_SHOWN_CHARS - 1] + "…"


def trusted_paths(global_settings: Mapping[str, Any]) -> list[str]:
    """The canonical paths of `[permissions] trusted_projects`; absolute entries only."""
    table = global_settings.get("permissions")
    listed = table.get("trusted_projects", []) if isinstance(table, Mapping) else []
    if not isinstance(listed, list):
        return []
    canonical = []
    for entry in listed:
        if isinstance(entry, str) and entry:
            path = os.path.expanduser(entry)
            if os.path.isabs(path):
                canonical.append(os.path.realpath(path))
    return canonical


def is_trusted(cwd: str, global_settings: Mapping[str, Any]) -> bool:
    """Whether the canonical `cwd` or one of its ancestors is listed in the GLOBAL settings."""
    here = os.path.realpath(cwd)
    for root in trusted_paths(global_settings):
        if here == root or here.startswith(root.rstrip("/") + "/"):
            return True
    return False


def project_definitions(cwd: str, mc_home: str) -> list[str]:
    """The trust-relevant project files and folders present in `cwd` (read here); none where
    `<cwd>/.magi-code` is MC_HOME itself (cwd = ~): those are the user's own."""
    base = os.path.join(cwd, ".magi-code")
    if os.path.realpath(base) == os.path.realpath(mc_home):
        return []
    found = [os.path.join(base, name) for name in PROJECT_LOCATIONS]
    return [path for path in found if os.path.lexists(path)]


def admit_project(
    project: Mapping[str, Any], base: Mapping[str, Any], trusted: bool, file: str
) -> tuple[dict[str, Any], list[Dropped]]:
    """What of `project` applies over `base` (defaults + presets + global settings), and the
    keys dropped. `base` is only read."""
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    invalid: set[int] = set()  # the indices in `dropped` of values startup would refuse
    for key, value in project.items():
        if key == "permissions" and isinstance(value, Mapping):
            _permissions(value, base.get("permissions"), trusted, kept, (dropped, invalid))
        elif key == "providers" and isinstance(value, Mapping):
            _providers(value, base.get("providers"), trusted, kept, (dropped, invalid))
        elif key == "melchior" and isinstance(value, Mapping):
            _melchior(value, base.get("melchior"), kept, (dropped, invalid))
        elif key == "sandbox" and isinstance(value, Mapping):
            _sandbox(value, base.get("sandbox"), kept, (dropped, invalid))
        elif key in ("mcp", "sessions", "a2a") and isinstance(value, Mapping):
            rules = {"mcp": MCP, "sessions": SESSIONS, "a2a": A2A}[key]
            _table(key, value, rules, trusted, kept, dropped)
            if key == "mcp" and isinstance(kept.get("mcp", {}).get("servers"), Mapping):
                kept["mcp"]["servers"] = _mcp_servers(kept["mcp"]["servers"], dropped)
            if key == "a2a" and isinstance(kept.get("a2a", {}).get("agents"), Mapping):
                known = _a2a_agents(base)
                kept["a2a"]["agents"] = _remote_agents(kept["a2a"]["agents"], known, dropped)
        elif _table_expected(key, trusted):
            _invalid((dropped, invalid), key)
        elif _allowed(TOP_LEVEL.get(key, TRUSTED), trusted):
            kept[key] = value
        else:
            dropped.append(key)
    if not trusted:
        _wrong_types(kept, (dropped, invalid))
    selected = kept.get("provider")
    if isinstance(selected, str) and selected and selected not in _provider_ids(base, kept):
        del kept["provider"]  # (a provider of another type stays, for validation to report)
        dropped.append("provider")
    if trusted:
        never = set(dropped)
    else:  # what trusting the folder would still drop
        never = {d.key for d in admit_project(project, base, True, file)[1]}
    return kept, [
        Dropped(key, file, False, INVALID) if i in invalid else Dropped(key, file, key not in never)
        for i, key in enumerate(dropped)
    ]


def _invalid(drops: Drops, key: str) -> None:
    """Drop `key` as not valid (`INVALID`): startup would refuse its value."""
    dropped, invalid = drops
    invalid.add(len(dropped))
    dropped.append(key)


def _table_expected(key: str, trusted: bool) -> bool:
    """Whether a value that is no table is dropped as not valid: where a project may set part
    of the table, `[melchior]` and `[sandbox]` (trusted or not) and `[permissions]` and
    `[providers]` (untrusted; a trusted project's goes on, for validation to refuse)."""
    return key in ("melchior", "sandbox") or (key in ("permissions", "providers") and not trusted)


def _wrong_types(kept: dict[str, Any], drops: Drops) -> None:
    """Drop as not valid each value of the wrong type (config/schema.py) in what was kept: a
    list with an item of the wrong type goes whole."""
    while (found := schema.fault(kept)) is not None:
        path = found[0]
        cut = next((i for i, part in enumerate(path) if isinstance(part, int)), len(path))
        keys = [part for part in path[:cut] if isinstance(part, str)]
        node: Any = kept
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]
        _invalid(drops, ".".join(keys))


def _allowed(rule: str, trusted: bool) -> bool:
    return rule == ALWAYS or (rule in (TRUSTED, NARROW) and trusted)


def _table(
    name: str,
    table: Mapping[str, Any],
    rules: Mapping[str, str],
    trusted: bool,
    kept: dict[str, Any],
    dropped: list[str],
) -> None:
    out = {}
    for key, value in table.items():
        if _allowed(rules.get(key, TRUSTED), trusted):
            out[key] = value
        else:
            dropped.append(f"{name}.{key}")
    if out or not table:
        kept[name] = out


def _mcp_servers(servers: Mapping[str, Any], dropped: list[str]) -> dict[str, Any]:
    """A trusted project's server tables without their credential sources."""
    out: dict[str, Any] = {}
    for name, conf in servers.items():
        if isinstance(conf, Mapping):
            for key in sorted(MCP_SERVER_CREDENTIAL_KEYS & set(conf)):
                dropped.append(f"mcp.servers.{name}.{key}")
            conf = {k: v for k, v in conf.items() if k not in MCP_SERVER_CREDENTIAL_KEYS}
        out[name] = conf
    return out


def _a2a_agents(base: Mapping[str, Any]) -> set[str]:
    """The names of the remote agents the global settings define."""
    table = base.get("a2a")
    agents = table.get("agents") if isinstance(table, Mapping) else None
    return set(agents) if isinstance(agents, Mapping) else set()


def _remote_agents(
    agents: Mapping[str, Any], known: set[str], dropped: list[str]
) -> dict[str, Any]:
    """A trusted project's remote agents without a token, nor a url for a global one."""
    out: dict[str, Any] = {}
    for name, conf in agents.items():
        if isinstance(conf, Mapping):
            fixed = {"token", "url"} if name in known else {"token"}
            for key in sorted(fixed & set(conf)):
                dropped.append(f"a2a.agents.{name}.{key}")
            conf = {k: v for k, v in conf.items() if k not in fixed}
        out[name] = conf
    return out


def _permissions(
    table: Mapping[str, Any], base: object, trusted: bool, kept: dict[str, Any], drops: Drops
) -> None:
    kept["permissions"] = _permission_table(table, base, trusted, drops, "permissions")


def _permission_table(
    table: Mapping[str, Any], base: object, trusted: bool, drops: Drops, name: str
) -> dict[str, Any]:
    """`[permissions]` (or its `code_mode` table, the same shape) as a project may set it.
    `drops`: the keys dropped, and which of them as not valid (untrusted only)."""
    dropped = drops[0]
    base_table = base if isinstance(base, Mapping) else {}
    out: dict[str, Any] = {}
    for key, value in table.items():
        rule = PERMISSIONS.get(key, TRUSTED)
        nested = key == "code_mode" and name == "permissions"
        if nested and isinstance(value, Mapping):
            inner = base_table.get(key)
            out[key] = _permission_table(value, inner, trusted, drops, f"{name}.{key}")
        elif rule == NEVER or (rule == TRUSTED and not trusted):
            dropped.append(f"{name}.{key}")
        elif trusted:
            out[key] = value
        elif key == "code_mode":  # not a table, or a table in the Code Mode table
            _invalid(drops, f"{name}.{key}")
        elif key in DEFAULT_DECISIONS:
            if value not in STRICTNESS:
                _invalid(drops, f"{name}.{key}")
            elif _narrows(value, base_table.get(key, DEFAULT_DECISIONS[key])):
                out[key] = value
            else:
                dropped.append(f"{name}.{key}")
        else:  # rules or project_rules: the valid ask/deny ones only narrow, and stay
            narrowing = _narrowing_rules(value)
            if narrowing is None:
                _invalid(drops, f"{name}.{key}")
                continue
            valid = [r for r in narrowing if _valid_rule(r)]
            out.setdefault("project_rules", []).extend(valid)
            if len(valid) != len(narrowing):
                _invalid(drops, f"{name}.{key}")
            if len(narrowing) != len(value):
                dropped.append(f"{name}.{key}")
    rules = out.get("project_rules")  # (a trusted project's may be of any type: validated later)
    if isinstance(rules, list) and isinstance(base_table.get("project_rules"), list):
        out["project_rules"] = [*base_table["project_rules"], *rules]
    return out


TALKS = ("instance", "run", "project")  # melchior's walls, narrowest first


def _melchior(table: Mapping[str, Any], base: object, kept: dict[str, Any], drops: Drops) -> None:
    """A project may narrow melchior's `talk`, trusted or not, and set nothing else there; a
    `talk` that is none of TALKS is dropped as not valid."""
    dropped = drops[0]
    base_talk = base.get("talk") if isinstance(base, Mapping) else None
    ceiling = TALKS.index(base_talk) if base_talk in TALKS else 0
    out = {}
    for key, value in table.items():
        if key == "talk" and value not in TALKS:
            _invalid(drops, "melchior.talk")
        elif key == "talk" and TALKS.index(value) <= ceiling:
            out[key] = value
        else:
            dropped.append(f"melchior.{key}")
    kept["melchior"] = out


def _sandbox(table: Mapping[str, Any], base: object, kept: dict[str, Any], drops: Drops) -> None:
    """A project may narrow the sandbox, trusted or not, and widen nothing; a value that is
    not valid is dropped as such (`INVALID`), trusted or not."""
    from magi_code.tools.sandbox.settings import DEFAULT_MODE
    from magi_code.tools.sandbox.settings import MODES as SANDBOX_MODES

    dropped = drops[0]
    base_table = base if isinstance(base, Mapping) else {}
    base_mode = base_table.get("mode", DEFAULT_MODE)
    ceiling = SANDBOX_MODES.index(base_mode) if base_mode in SANDBOX_MODES else 1
    base_roots = base_table.get("writable_roots", [])
    base_denied = base_table.get("deny_read", [])
    out: dict[str, Any] = {}
    for key, value in table.items():
        bad = _bad_sandbox_value(key, value, SANDBOX_MODES)
        if bad is not None:
            _invalid(drops, f"sandbox.{key}")
            if not bad:
                continue
            value = bad  # a path list's good paths go on
        narrower_mode = value in SANDBOX_MODES and SANDBOX_MODES.index(value) <= ceiling
        if (key == "mode" and narrower_mode) or (key == "network" and value is False):
            out[key] = value
        elif key == "writable_roots" and isinstance(value, list) and isinstance(base_roots, list):
            out[key] = [root for root in value if root in base_roots]
            if len(out[key]) != len(value):
                dropped.append("sandbox.writable_roots")
        elif key == "deny_read" and isinstance(value, list) and isinstance(base_denied, list):
            out[key] = [*base_denied, *value]
        else:
            dropped.append(f"sandbox.{key}")
    kept["sandbox"] = out


def _bad_sandbox_value(key: str, value: object, modes: tuple[str, ...]) -> list[str] | None:
    """None for a valid value of a known key (tools/sandbox/settings.py `checked`); else what
    of it is valid: the good paths of a path list, or [] for nothing."""
    if key == "mode":
        return None if value in modes else []
    if key == "network":
        return None if isinstance(value, bool) else []
    if key in ("writable_roots", "deny_read"):
        if not isinstance(value, list):
            return []
        paths = [path for path in value if isinstance(path, str) and path]
        return None if len(paths) == len(value) else paths
    return None  # an unknown key: dropped, as the table says


def _narrows(value: object, base: object) -> bool:
    """A valid project default that is at least as strict as the global one (any, over a bad
    global value: validation reports that one)."""
    if base not in STRICTNESS:
        return True
    return STRICTNESS.index(value) >= STRICTNESS.index(base)


def _narrowing_rules(rules: object) -> list[object] | None:
    """The rules of a list but the `allow` ones; None if it is not a list."""
    if not isinstance(rules, list):
        return None
    return [r for r in rules if not (isinstance(r, Mapping) and r.get("decision") == "allow")]


def _valid_rule(rule: object) -> bool:
    """Whether the permission policy (tools/policy.py) takes the rule: what startup checks."""
    from magi_code.tools.policy import Policy, PolicyError

    try:
        Policy.from_settings({"rules": [rule]})
    except PolicyError:
        return False
    return True


def _providers(
    table: Mapping[str, Any], base: object, trusted: bool, kept: dict[str, Any], drops: Drops
) -> None:
    dropped = drops[0]
    known = base if isinstance(base, Mapping) else {}
    out: dict[str, Any] = {}
    for provider_id, conf in table.items():
        if not isinstance(conf, Mapping):
            if trusted:
                out[provider_id] = conf  # a bad shape, for validation to report
            else:
                _invalid(drops, f"providers.{provider_id}")
            continue
        keep = {}
        for key, value in conf.items():
            if provider_id in known:
                fixed = key in CREDENTIAL_KEYS or key in KNOWN_PROVIDER_FIXED
                allowed = not fixed and _allowed(KNOWN_PROVIDER.get(key, TRUSTED), trusted)
            else:
                allowed = trusted and key not in CREDENTIAL_KEYS
            if allowed:
                keep[key] = value
            else:
                dropped.append(f"providers.{provider_id}.{key}")
        if keep or (trusted and provider_id not in known):
            out[provider_id] = keep
    kept["providers"] = out


def _provider_ids(base: Mapping[str, Any], kept: Mapping[str, Any]) -> set[str]:
    ids: set[str] = set()
    for layer in (base, kept):
        table = layer.get("providers")
        if isinstance(table, Mapping):
            ids |= set(table)
    return ids
