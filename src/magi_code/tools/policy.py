"""The permission policy: settings in, allow/ask/deny out. Sans-I/O.

Built once from the `[permissions]` settings table (a bad shape raises PolicyError, which
startup reports as `configuration_invalid`). `decide` reads nothing from disk: the tool has
already resolved its paths to canonical form.

Rules:
- Rules are tried in order; the first whose tool, command pattern and path glob all match
  decides. A later rule never overrides an earlier one, whatever it says.
- A call touching several paths is decided per path; the strictest answer wins.
- No rule: reads inside the workspace get `default_read` (allow); writes get `default_write`
  (ask); shell gets `default_shell` (ask); network (web_fetch) gets `default_network` (ask).
  Outside the workspace a default is at least `ask`.
- A `domain` rule matches a network access to that host or any host under it (`example.com`
  matches `docs.example.com`, never `badexample.com`); it matches nothing else, as a `path`
  or `command` rule never matches a network access.
- A `command` pattern with wildcards never *allows* a command holding shell operators
  (`;`, `&`, `|`, backquote, `$(`, redirections, newlines): `git status*` must not allow
  `git status; rm -rf ~`. Such commands fall through to later rules and the default.
- Relative path globs are anchored at the workspace; absolute ones match canonical paths
  literally (so name the real directory, not a symlink to it).
- Narrowing layers, ask/deny only: `project_rules` (an untrusted project's rules,
  config/trust.py) and an agent profile's rules (tools/narrowing.py). Each layer's first
  matching rule is combined with the answer above, so it can only make it stricter.
- Protected paths (tools/paths.py): a write to one is at least `ask`, whatever a rule says;
  a read of a secret file is `deny`.
- `trusted_projects` belongs to config/trust.py; it is accepted here and means nothing.
- `code_mode` is a table of the same shape (no `code_mode` or `trusted_projects` inside): the
  Code Mode policy, `for_code_mode`, which decides the calls a `code` program makes through
  its bridge. It is independent of the direct rules: neither table's rules reach the other.
"""

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from magi_code.records import record
from magi_code.tools import ToolsError
from magi_code.tools.base import Access
from magi_code.tools.globs import Glob, GlobError, compile_glob
from magi_code.tools.paths import Protected, inside

Decision = Literal["allow", "ask", "deny"]
DECISIONS: tuple[Decision, ...] = ("allow", "ask", "deny")  # in order of strictness

NOTHING_PROTECTED = Protected()  # but `.git` folders, always
_OPERATORS = re.compile(r"[;&|`<>\n\r]|\$\(")
_WILDCARDS = re.compile(r"[*?\[]")
_TOP_KEYS = frozenset(
    {
        "default_read",
        "default_write",
        "default_shell",
        "rules",
        "project_rules",
        "trusted_projects",
        "code_mode",
    }
)
_CODE_MODE_KEYS = _TOP_KEYS - {"trusted_projects", "code_mode"}
_RULE_KEYS = frozenset({"tool", "decision", "command", "path", "domain"})
_NOT_IN_A_DOMAIN = re.compile(r"[\s/:@?#\[\]*]")


class PolicyError(ToolsError, ValueError):
    """The permissions settings have a bad shape. Carries no settings text."""

    code: Literal["configuration_invalid"] = "configuration_invalid"


@record
class Rule:
    tool: str  # a tool name or "*"
    decision: Decision
    command: str | None = None  # fnmatch pattern on the whole command
    path: Glob | None = None  # relative to the workspace, or absolute
    domain: str | None = None  # a host name, lower case: it and the hosts under it

    def matches(self, tool: str, access: Access, path: Path | None, workspace: Path) -> bool:
        if self.tool not in ("*", tool):
            return False
        if self.command is not None and not self._matches_command(access.command):
            return False
        if self.domain is not None and not _in_domain(access.host, self.domain):
            return False
        if self.path is not None:
            return path is not None and _path_matches(self.path, path, workspace)
        return True

    def _matches_command(self, command: str | None) -> bool:
        if command is None or self.command is None:
            return False
        wild_allow = self.decision == "allow" and _WILDCARDS.search(self.command)
        if wild_allow and _OPERATORS.search(command):
            return False
        return fnmatch.fnmatchcase(command, self.command)


@record
class Policy:
    default_read: Decision = "allow"
    default_write: Decision = "ask"
    default_shell: Decision = "ask"
    rules: tuple[Rule, ...] = ()
    # Layers of ask/deny rules (an untrusted project's, an agent profile's): in each layer the
    # first matching rule can only make a decision stricter, never looser.
    narrowing: tuple[tuple[Rule, ...], ...] = ()
    protected: Protected = NOTHING_PROTECTED
    default_network: Decision = "ask"  # no setting sets it: `allow` rules name the domains

    @classmethod
    def from_settings(cls, table: object, protected: Protected | None = None) -> "Policy":
        """Validate the `[permissions]` table (None or missing means all defaults)."""
        protected = protected or NOTHING_PROTECTED
        if table is None:
            return cls(protected=protected)
        if not isinstance(table, Mapping) or not set(table) <= _TOP_KEYS:
            raise PolicyError
        project_rules = tuple(_rule(r) for r in _rule_list(table.get("project_rules", [])))
        if any(rule.decision == "allow" for rule in project_rules):
            raise PolicyError
        if "code_mode" in table:
            cls.for_code_mode(table)  # its shape is checked with the rest
        return cls(
            default_read=_decision(table.get("default_read", "allow")),
            default_write=_decision(table.get("default_write", "ask")),
            default_shell=_decision(table.get("default_shell", "ask")),
            rules=tuple(_rule(r) for r in _rule_list(table.get("rules", []))),
            narrowing=(project_rules,) if project_rules else (),
            protected=protected,
        )

    @classmethod
    def for_code_mode(cls, table: object, protected: Protected | None = None) -> "Policy":
        """The Code Mode policy from the `[permissions]` table's `code_mode` table (absent:
        the defaults, as for direct calls)."""
        inner = table.get("code_mode") if isinstance(table, Mapping) else None
        if inner is None:
            return cls(protected=protected or NOTHING_PROTECTED)
        if not isinstance(inner, Mapping) or not set(inner) <= _CODE_MODE_KEYS:
            raise PolicyError
        return cls.from_settings(inner, protected)

    def decide(self, tool: str, access: Access, workspace: Path) -> Decision:
        paths: tuple[Path | None, ...] = access.paths or (None,)
        return strictest(self._decide_one(tool, access, p, workspace) for p in paths)

    def _decide_one(self, tool: str, access: Access, path: Path | None, ws: Path) -> Decision:
        decided = self._by_rules(tool, access, path, ws)
        for layer in self.narrowing:
            for rule in layer:
                if rule.matches(tool, access, path, ws):
                    decided = strictest((decided, rule.decision))
                    break
        if path is not None:
            decided = strictest((decided, self.protected.floor(access.kind, path)))
        return decided

    def _by_rules(self, tool: str, access: Access, path: Path | None, ws: Path) -> Decision:
        for rule in self.rules:
            if rule.matches(tool, access, path, ws):
                return rule.decision
        if access.kind == "shell":
            return self.default_shell
        if access.kind == "network":
            return self.default_network
        default = self.default_read if access.kind == "read" else self.default_write
        if path is not None and inside(path, ws):
            return default
        return strictest((default, "ask"))


def strictest(decisions: Iterable[Decision]) -> Decision:
    return max(decisions, key=DECISIONS.index)


def _in_domain(host: str | None, domain: str) -> bool:
    if host is None:
        return False
    host = host.lower().rstrip(".")
    return host == domain or host.endswith("." + domain)


def _path_matches(glob: Glob, path: Path, workspace: Path) -> bool:
    if glob.absolute:
        return glob.matches(path.as_posix())
    if not inside(path, workspace):
        return False
    rel = path.relative_to(workspace).as_posix()
    return glob.matches("" if rel == "." else rel)


def _rule_list(rules: object) -> Sequence[object]:
    if not isinstance(rules, Sequence) or isinstance(rules, str | bytes):
        raise PolicyError
    return rules


def _decision(value: object) -> Decision:
    if value not in DECISIONS:
        raise PolicyError
    return value


def _rule(raw: object) -> Rule:
    if not isinstance(raw, Mapping) or not set(raw) <= _RULE_KEYS or "decision" not in raw:
        raise PolicyError
    tool = raw.get("tool", "*")
    command = raw.get("command")
    path = raw.get("path")
    domain = raw.get("domain")
    if not isinstance(tool, str) or not tool:
        raise PolicyError
    if domain is not None:
        if not isinstance(domain, str) or not domain.strip(".") or _NOT_IN_A_DOMAIN.search(domain):
            raise PolicyError
        domain = domain.lower().strip(".")
    if command is not None and (not isinstance(command, str) or not command):
        raise PolicyError
    glob = None
    if path is not None:
        if not isinstance(path, str):
            raise PolicyError
        try:
            glob = compile_glob(path)
        except GlobError:
            raise PolicyError from None
    return Rule(tool, _decision(raw["decision"]), command, glob, domain)
