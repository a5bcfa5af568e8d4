"""The delegated ceiling: a child decides at most what its parent would, and a session keeps
the ceiling it was given."""

import json
from pathlib import Path

import pytest

from magi_code.runner import delegation
from magi_code.runner.delegation import Delegation, combine, hand_down, parse, stored, under
from magi_code.tools.base import Access
from magi_code.tools.policy import Policy

WS = Path("/ws")
SHELL = Access("shell", (), "echo hi")
WRITE_IN = Access("write", (WS / "x.txt",))


def child_of(permissions: object, rules: list[dict[str, str]], trusted: bool = True) -> Delegation:
    return hand_down(
        None,
        session_id="parent",
        agent_id="alpha-rho",
        permissions=permissions,
        profile_rules=rules,
        trusted=trusted,
    )


def test_a_ceiling_makes_a_decision_stricter_never_looser() -> None:
    loose = Policy.from_settings({"default_shell": "allow", "default_write": "allow"})
    strict_parent = child_of({"default_shell": "deny"}, [{"decision": "ask", "tool": "write_file"}])
    held = under(loose, strict_parent)
    assert loose.decide("shell", SHELL, WS) == "allow"
    assert held.decide("shell", SHELL, WS) == "deny"
    assert held.decide("write_file", WRITE_IN, WS) == "ask"
    # A looser parent does not loosen a strict child.
    strict = Policy.from_settings({"default_shell": "deny"})
    assert under(strict, child_of({"default_shell": "allow"}, [])).decide("shell", SHELL, WS) == (
        "deny"
    )


def test_ceilings_accumulate_down_the_tree_and_trust_is_anded() -> None:
    child = child_of({"default_shell": "deny"}, [], trusted=False)
    grandchild = hand_down(
        child,
        session_id="child",
        agent_id="beta-nu",
        permissions={"default_shell": "allow"},
        profile_rules=[],
        trusted=True,
    )
    assert (child.depth, grandchild.depth) == (1, 2)
    assert grandchild.trusted is False
    assert len(grandchild.ceilings) == 2
    assert under(Policy(default_shell="allow"), grandchild).decide("shell", SHELL, WS) == "deny"


def test_a_stored_delegation_is_kept_and_a_given_one_only_adds() -> None:
    kept = child_of({"default_shell": "deny"}, [])
    given = child_of({"default_write": "deny"}, [], trusted=True)
    records = [
        {"session_id": "s", "type": "session", "cwd": "/ws"},
        {"session_id": "s", **kept.record()},
        {"session_id": "s", "type": "user", "run_id": "r", "message_id": "m", "text": "hi"},
    ]
    assert stored(records) == kept
    both = combine(stored(records), given)
    assert both is not None
    held = under(Policy(default_shell="allow", default_write="allow"), both)
    assert held.decide("shell", SHELL, WS) == "deny"
    assert held.decide("write_file", WRITE_IN, WS) == "deny"
    assert combine(kept, None) == kept and combine(None, given) == given
    assert stored(records[:1]) is None


@pytest.mark.parametrize(
    "value",
    [
        None,
        {},
        {"parent_session": "p", "parent_agent": "a", "depth": 0, "ceilings": []},
        {"parent_session": "p", "parent_agent": "a", "depth": True, "ceilings": []},
        {"parent_session": "p", "parent_agent": "a", "depth": 1, "ceilings": "x"},
        {"parent_session": "p", "parent_agent": "a", "depth": 1, "ceilings": [{"rules": "x"}]},
        {
            "parent_session": "p",
            "parent_agent": "a",
            "depth": 1,
            "ceilings": [{"permissions": {"default_shell": "maybe"}}],
        },
    ],
)
def test_a_malformed_delegation_is_none(value: object) -> None:
    assert parse(value) is None


def test_the_invocation_identity_follows_the_delegation() -> None:
    given = child_of(None, [])
    env = {delegation.ENV: json.dumps(given.to_json())}
    assert delegation.invocation(env) == "subagent"
    assert delegation.invocation({}) == "local_agent"
    assert delegation.from_env(env) == given
    assert delegation.from_env({delegation.ENV: "{"}) is None
