"""The session grant: "allow for this session", one rule for every face. Sans-I/O.

A grant is the exact call it was given for: the tool, the kind of access, the command (for a
shell), the canonical paths and the host (for the network). It covers that call again and no
other path, command or host. It lives in memory for the session (never written anywhere), is
never given for a run outside the sandbox (that is asked each time), and `GrantedPolicy`
applies it only where the person's own rules asked: a `deny`, an untrusted project's or an
agent profile's narrowing and a protected path still decide. A face only renders the question
and reports the answer (`SessionGrants.grant`); Mission Control and ACP keep one
`SessionGrants` per session.
"""

from pathlib import Path

from magi_code.records import field, field_names, record
from magi_code.tools.approvals import Asked
from magi_code.tools.base import Access
from magi_code.tools.policy import Decision, Policy

Key = tuple[str, str, str | None, tuple[Path, ...], str | None]


def grant_key(tool: str, access: Access) -> Key:
    """This tool, this kind of access, this command, these paths, this host."""
    return (tool, access.kind, access.command, access.paths, access.host)


class SessionGrants:
    """What this person allowed for the session, exactly."""

    def __init__(self) -> None:
        self.exact: set[Key] = set()

    def grant(self, asked: Asked | None) -> None:
        """Remember the call an approval was for (not a run outside the sandbox)."""
        if asked is not None and not asked.outside_sandbox:
            self.exact.add(grant_key(asked.tool, asked.access))

    def covers(self, tool: str, access: Access) -> bool:
        return grant_key(tool, access) in self.exact


@record
class GrantedPolicy(Policy):
    """A policy with the session's grants: an `ask` the grants cover becomes an `allow`, but
    never past the narrowing layers and protected paths."""

    grants: SessionGrants = field(default_factory=SessionGrants)

    @classmethod
    def over(cls, policy: Policy, grants: SessionGrants) -> "GrantedPolicy":
        kept = {name: getattr(policy, name) for name in field_names(Policy)}
        return cls(**kept, grants=grants)

    def _decide_one(self, tool: str, access: Access, path: Path | None, ws: Path) -> Decision:
        decided = super()._decide_one(tool, access, path, ws)
        if decided != "ask" or not self._granted(tool, access, path, ws):
            return decided
        # Widened, but never past what the layers above the person's own rules demand: an
        # untrusted project's or a profile's narrowing, and protected paths.
        floor = Policy("allow", "allow", "allow", (), self.narrowing, self.protected, "allow")
        return floor._decide_one(tool, access, path, ws)

    def _granted(self, tool: str, access: Access, path: Path | None, ws: Path) -> bool:
        return self.grants.covers(tool, access)
