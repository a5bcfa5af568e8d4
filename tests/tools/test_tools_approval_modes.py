"""Approval modes answer by rule, and never wider than the settings: protected paths hold."""

from pathlib import Path

import pytest

from magi_code.tools.approval_modes import Mode, refusal
from magi_code.tools.approvals import Asked
from magi_code.tools.base import Access
from magi_code.tools.paths import Protected

WORKSPACE = Path("/work/project")
PROTECTED = Protected((Path("/home/me/.magi-code"),))


def asked(kind: str, *paths: str) -> Asked:
    return Asked("tool", Access(kind, tuple(Path(p) for p in paths)), "{}")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mode", "call", "allowed"),
    [
        ("ask", asked("write", "/work/project/a.py"), False),
        ("edits", asked("write", "/work/project/a.py"), True),
        ("edits", asked("write", "/work/project/a.py", "/tmp/b.py"), False),
        ("edits", asked("write", "/work/project/.git/config"), False),
        ("edits", asked("shell"), False),
        ("edits", asked("write"), False),  # a write that names no path is not an edit
        ("edits", None, False),
        ("full", asked("shell"), True),
        ("full", asked("write", "/tmp/b.py"), True),
        ("full", asked("write", "/home/me/.magi-code/settings.toml"), False),
        ("full", asked("write", "/work/project/.git/hooks/pre-commit"), False),
        ("full", None, False),
    ],
)
def test_modes(mode: Mode, call: Asked | None, allowed: bool) -> None:
    assert (refusal(mode, call, WORKSPACE, PROTECTED) is None) is allowed


def test_a_refusal_says_what_could_allow_it() -> None:
    edit = asked("write", "/work/project/a.py")
    assert (
        refusal("ask", edit, WORKSPACE, PROTECTED) == "--approval-mode edits or full may allow it"
    )
    shell = asked("shell")
    assert refusal("edits", shell, WORKSPACE, PROTECTED) == "--approval-mode full may allow it"
    git = asked("write", "/work/project/.git/config")
    assert "protected path" in str(refusal("edits", git, WORKSPACE, PROTECTED))
