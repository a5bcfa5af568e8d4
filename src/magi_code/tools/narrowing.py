"""What an agent profile and the admitted skills add to the global permission policy. Pure.

- A profile's `permissions` rules can only narrow: each path's decision is the strictest of
  the global policy's and of the profile's first matching rule (profile rules are `ask` or
  `deny`, so they never allow what the global policy does not).
- Skill folders may sit outside the workspace. Reading them (read_file inside an admitted
  skill's folder, and the skill tool itself) is allowed without asking, by rules placed
  AFTER the user's own: any explicit user rule still decides first, and nothing is added when
  `default_read` is not `allow`.
"""

from collections.abc import Iterable, Mapping

from magi_code.records import replace
from magi_code.tools.globs import GlobError, compile_glob
from magi_code.tools.policy import Policy, Rule

_GLOB_SPECIALS = {"*": "[*]", "?": "[?]", "[": "[[]", "{": "[{]"}


def narrowed(policy: Policy, profile_rules: Iterable[Mapping[str, str]]) -> Policy:
    """`policy` with a profile's rules (already validated at startup) on top."""
    rules = Policy.from_settings({"rules": list(profile_rules)}).rules
    return replace(policy, narrowing=(*policy.narrowing, rules)) if rules else policy


def with_skill_reads(policy: Policy, skill_dirs: Iterable[str], tool: str) -> Policy:
    """`policy` with reads of the skill folders (and the skill tool `tool`) allowed after the
    user's rules."""
    if policy.default_read != "allow":
        return policy
    added = [Rule(tool, "allow")]
    for directory in skill_dirs:
        literal = "".join(_GLOB_SPECIALS.get(c, c) for c in directory)
        try:
            added.append(Rule("read_file", "allow", None, compile_glob(f"{literal}/**")))
        except GlobError:
            continue  # such a folder stays readable by asking
    return replace(policy, rules=(*policy.rules, *added))
