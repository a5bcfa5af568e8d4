"""Profile rules only narrow; skill folders are readable without asking, after user rules."""

from pathlib import Path

from magi_code.tools.base import Access
from magi_code.tools.narrowing import narrowed, with_skill_reads
from magi_code.tools.policy import Policy

WS = Path("/work/ws")
SKILL = "/home/u/.magi-code/skills/pdf"


def read(path: str) -> Access:
    return Access("read", (Path(path),))


def test_profile_rules_never_widen() -> None:
    broad = Policy.from_settings({"rules": [{"tool": "shell", "decision": "allow"}]})
    policy = narrowed(
        broad,
        [
            {"decision": "ask", "tool": "shell"},
            {"decision": "deny", "tool": "read_file", "path": "secret/**"},
        ],
    )
    assert policy.decide("shell", Access("shell", command="ls"), WS) == "ask"
    assert policy.decide("read_file", read("/work/ws/secret/a"), WS) == "deny"
    assert policy.decide("read_file", read("/work/ws/open.txt"), WS) == "allow"
    denied = Policy.from_settings({"rules": [{"tool": "shell", "decision": "deny"}]})
    assert (
        narrowed(denied, [{"decision": "ask", "tool": "shell"}]).decide(
            "shell", Access("shell", command="ls"), WS
        )
        == "deny"
    )
    assert narrowed(broad, []) is broad


def test_skill_folders_are_readable_without_asking_but_user_rules_decide_first() -> None:
    policy = with_skill_reads(Policy(), [SKILL], "skill")
    assert policy.decide("read_file", read(f"{SKILL}/scripts/fill.py"), WS) == "allow"
    assert policy.decide("read_file", read(SKILL + "-other/x"), WS) == "ask"
    assert policy.decide("write_file", Access("write", (Path(f"{SKILL}/x"),)), WS) == "ask"
    assert policy.decide("skill", Access("read", ()), WS) == "allow"
    user = Policy.from_settings({"rules": [{"tool": "*", "decision": "deny", "path": "/home/**"}]})
    assert (
        with_skill_reads(user, [SKILL], "skill").decide("read_file", read(f"{SKILL}/a"), WS)
        == "deny"
    )
    strict = Policy.from_settings({"default_read": "ask"})
    assert with_skill_reads(strict, [SKILL], "skill") is strict


def test_glob_characters_in_a_skill_folder_are_literal() -> None:
    odd = "/home/u/sk[i]lls*/pdf?"
    policy = with_skill_reads(Policy(), [odd], "skill")
    assert policy.decide("read_file", read(f"{odd}/a"), WS) == "allow"
    assert policy.decide("read_file", read("/home/u/ski/pdfX/a"), WS) == "ask"
