"""The delegated task-scope ceiling: what a subagent inherits from the session that started
it, and how a child's session keeps it. Pure but for reading the environment it is given.

Rules:
- A child inherits at most its parent's permissions and trust. The parent hands down its own
  effective permission table and profile rules (a *ceiling*), plus every ceiling it was itself
  given, in `MAGI_CODE_DELEGATION` (JSON). The child's decision for a call is the strictest of
  its own policy and every ceiling's: a ceiling can make a decision stricter, never looser.
- `trusted` is the AND of the chain: an untrusted parent never has a trusted child.
- The child stores its delegation in its session (a `session` record with `delegation`), so a
  reopened child keeps it even when the process that reopens it was given none. When both
  exist, the stored one is kept and the given one's ceilings are added on top.
- A process given a delegation is invoked as `subagent`; any other serve is `local_agent`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from magi_code.records import field_names, record
from magi_code.tools.base import Access
from magi_code.tools.narrowing import narrowed
from magi_code.tools.policy import Decision, Policy, PolicyError, strictest

ENV = "MAGI_CODE_DELEGATION"


@record
class Delegation:
    parent_session: str  # the parent's session id: the child's session links to it
    parent_agent: str  # the parent's melchior id
    depth: int  # 1 for a child of a top session
    trusted: bool
    ceilings: tuple[dict[str, Any], ...]  # {"permissions": table|None, "rules": [profile rules]}

    def to_json(self) -> dict[str, Any]:
        return {
            "parent_session": self.parent_session,
            "parent_agent": self.parent_agent,
            "depth": self.depth,
            "trusted": self.trusted,
            "ceilings": list(self.ceilings),
        }

    def record(self) -> dict[str, Any]:
        """The `session` record that stores it with the child's session."""
        return {"type": "session", "delegation": self.to_json()}


def parse(value: object) -> Delegation | None:
    """A delegation from its JSON form; None when absent or malformed."""
    if not isinstance(value, Mapping):
        return None
    parent, agent, depth = (
        value.get("parent_session"),
        value.get("parent_agent"),
        value.get("depth"),
    )
    ceilings = value.get("ceilings")
    if not (isinstance(parent, str) and isinstance(agent, str)):
        return None
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        return None
    if not isinstance(ceilings, list) or not all(_ceiling_ok(c) for c in ceilings):
        return None
    return Delegation(parent, agent, depth, value.get("trusted") is True, tuple(ceilings))


def _ceiling_ok(ceiling: object) -> bool:
    if not isinstance(ceiling, Mapping) or not isinstance(ceiling.get("rules", []), list):
        return False
    try:
        _ceiling_policy(ceiling)
    except PolicyError:
        return False
    return True


def from_env(env: Mapping[str, str]) -> Delegation | None:
    raw = env.get(ENV)
    if not raw:
        return None
    try:
        return parse(json.loads(raw))
    except ValueError:
        return None


def invocation(env: Mapping[str, str]) -> str:
    """The invocation identity of a `serve --stdio` process."""
    return "subagent" if env.get(ENV) else "local_agent"


def stored(records: Iterable[Mapping[str, Any]]) -> Delegation | None:
    """The delegation a session stores (its last `session` record naming one)."""
    found: Delegation | None = None
    for entry in records:
        if entry.get("type") == "session" and "delegation" in entry:
            found = parse(entry["delegation"]) or found
    return found


def combine(kept: Delegation | None, given: Delegation | None) -> Delegation | None:
    """The stored delegation with a given one's ceilings on top (never looser than either)."""
    if kept is None or given is None:
        return kept or given
    extra = tuple(c for c in given.ceilings if c not in kept.ceilings)
    return Delegation(
        kept.parent_session,
        kept.parent_agent,
        max(kept.depth, given.depth),
        kept.trusted and given.trusted,
        kept.ceilings + extra,
    )


def hand_down(
    mine: Delegation | None,
    *,
    session_id: str,
    agent_id: str,
    permissions: object,
    profile_rules: Iterable[Mapping[str, str]],
    trusted: bool,
) -> Delegation:
    """The delegation for a child of this session: this session's own ceiling added."""
    own = {"permissions": permissions, "rules": [dict(r) for r in profile_rules]}
    inherited = mine.ceilings if mine is not None else ()
    return Delegation(
        session_id,
        agent_id,
        (mine.depth if mine is not None else 0) + 1,
        trusted and (mine.trusted if mine is not None else True),
        (*inherited, own),
    )


def _ceiling_policy(ceiling: Mapping[str, Any]) -> Policy:
    return narrowed(Policy.from_settings(ceiling.get("permissions")), ceiling.get("rules", []))


@record
class Ceilinged(Policy):
    """A session's own policy under the ceilings it was delegated."""

    ceilings: tuple[Policy, ...] = ()

    def decide(self, tool: str, access: Access, workspace: Path) -> Decision:
        own = super().decide(tool, access, workspace)
        return strictest((own, *(c.decide(tool, access, workspace) for c in self.ceilings)))


def under(policy: Policy, delegation: Delegation | None) -> Policy:
    """`policy` held under `delegation`'s ceilings (unchanged without one)."""
    if delegation is None or not delegation.ceilings:
        return policy
    fields = {name: getattr(policy, name) for name in field_names(Policy)}
    ceilings = tuple(_ceiling_policy(c) for c in delegation.ceilings)
    return Ceilinged(**fields, ceilings=ceilings)
