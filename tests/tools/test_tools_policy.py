"""The permission policy: safe defaults, first matching rule wins, bad shapes rejected."""

import fnmatch
import time
import tomllib
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from magi_code.tools.base import Access
from magi_code.tools.globs import GlobError, compile_glob
from magi_code.tools.policy import Decision, Policy, PolicyError

WS = Path("/work/project")
OUT = Path("/etc/passwd")


def read(*paths: Path) -> Access:
    return Access("read", paths)


def write(*paths: Path) -> Access:
    return Access("write", paths)


def shell(command: str) -> Access:
    return Access("shell", (), command)


def policy(text: str) -> Policy:
    return Policy.from_settings(tomllib.loads(text).get("permissions"))


# ---- defaults ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "access", "expected"),
    [
        ("read_file", read(WS / "src/app.py"), "allow"),
        ("list_dir", read(WS), "allow"),
        ("read_file", read(OUT), "ask"),
        ("read_file", read(Path("/work/project-other/x")), "ask"),  # a prefix is not inside
        ("write_file", write(WS / "a.txt"), "ask"),
        ("write_file", write(OUT), "ask"),
        ("shell", shell("ls"), "ask"),
    ],
)
def test_defaults(tool: str, access: Access, expected: Decision) -> None:
    assert Policy().decide(tool, access, WS) == expected
    assert Policy.from_settings(None).decide(tool, access, WS) == expected
    assert Policy.from_settings({}).decide(tool, access, WS) == expected


def test_configured_defaults_never_loosen_outside_the_workspace() -> None:
    loose = Policy.from_settings({"default_read": "allow", "default_write": "allow"})
    assert loose.decide("write_file", write(WS / "a"), WS) == "allow"
    assert loose.decide("write_file", write(OUT), WS) == "ask"
    strict = Policy.from_settings({"default_read": "deny"})
    assert strict.decide("read_file", read(WS / "a"), WS) == "deny"
    assert strict.decide("read_file", read(OUT), WS) == "deny"


# ---- rules ---------------------------------------------------------------------------------------

RULES = """
[permissions]
default_read = "allow"
[[permissions.rules]]
tool = "shell"
decision = "allow"
command = "git status*"
[[permissions.rules]]
tool = "shell"
decision = "deny"
command = "git *"
[[permissions.rules]]
tool = "write_file"
decision = "deny"
path = "secrets/**"
[[permissions.rules]]
tool = "*"
decision = "deny"
path = "**/.env"
[[permissions.rules]]
tool = "write_file"
decision = "allow"
path = "src/**"
[[permissions.rules]]
tool = "read_file"
decision = "allow"
path = "/etc/hostname"
"""


@pytest.mark.parametrize(
    ("tool", "access", "expected"),
    [
        ("shell", shell("git status"), "allow"),
        ("shell", shell("git status --short"), "allow"),
        ("shell", shell("git push"), "deny"),  # the second rule
        ("shell", shell("ls"), "ask"),  # no rule: default
        ("write_file", write(WS / "secrets/key.pem"), "deny"),
        ("write_file", write(WS / "secrets"), "deny"),  # the directory itself
        ("write_file", write(WS / "secrets/a/b/c"), "deny"),
        ("edit_file", write(WS / "secrets/key.pem"), "ask"),  # rule names write_file only
        ("read_file", read(WS / ".env"), "deny"),
        ("read_file", read(WS / "pkg/deep/.env"), "deny"),
        ("write_file", write(WS / "src/.env"), "deny"),  # .env rule comes before src/**
        ("write_file", write(WS / "src/app.py"), "allow"),
        ("write_file", write(WS / "srcs/app.py"), "ask"),
        ("read_file", read(Path("/etc/hostname")), "allow"),  # absolute glob
        ("read_file", read(Path("/etc/hosts")), "ask"),
        ("read_file", read(WS / "etc/hostname"), "allow"),  # inside: the default
    ],
)
def test_rules_matrix(tool: str, access: Access, expected: Decision) -> None:
    assert policy(RULES).decide(tool, access, WS) == expected


def test_first_match_wins_even_over_a_later_deny() -> None:
    allow_first = Policy.from_settings(
        {
            "rules": [
                {"tool": "shell", "decision": "allow", "command": "make test"},
                {"tool": "shell", "decision": "deny", "command": "make *"},
            ]
        }
    )
    assert allow_first.decide("shell", shell("make test"), WS) == "allow"
    assert allow_first.decide("shell", shell("make clean"), WS) == "deny"
    deny_first = Policy.from_settings(
        {
            "rules": [
                {"tool": "*", "decision": "deny", "path": "**"},
                {"tool": "read_file", "decision": "allow", "path": "**"},
            ]
        }
    )
    assert deny_first.decide("read_file", read(WS / "a"), WS) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "git status; rm -rf ~",
        "git status && curl x",
        "git status | sh",
        "git status `rm x`",
        "git status $(rm x)",
        "git status > /etc/passwd",
        "git status\nrm -rf ~",
    ],
)
def test_wildcard_allow_never_covers_shell_operators(command: str) -> None:
    rules = policy(RULES)
    assert rules.decide("shell", shell(command), WS) == "deny"  # falls to `git *` deny
    only_allow = Policy.from_settings(
        {"rules": [{"tool": "shell", "decision": "allow", "command": "git status*"}]}
    )
    assert only_allow.decide("shell", shell(command), WS) == "ask"


def test_exact_command_pattern_may_allow_operators() -> None:
    exact = Policy.from_settings(
        {"rules": [{"tool": "shell", "decision": "allow", "command": "make test 2>&1"}]}
    )
    assert exact.decide("shell", shell("make test 2>&1"), WS) == "allow"
    assert exact.decide("shell", shell("make test 2>&1; id"), WS) == "ask"


def test_several_paths_take_the_strictest() -> None:
    rules = policy(RULES)
    both = write(WS / "src/app.py", WS / "secrets/x")
    assert rules.decide("write_file", both, WS) == "deny"
    assert rules.decide("write_file", write(WS / "src/a", WS / "b"), WS) == "ask"


def test_path_rules_never_match_pathless_access() -> None:
    anything = Policy.from_settings({"rules": [{"tool": "*", "decision": "allow", "path": "**"}]})
    assert anything.decide("shell", shell("ls"), WS) == "ask"
    assert anything.decide("read_file", read(OUT), WS) == "ask"  # relative glob: inside only


# ---- shapes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "table",
    [
        "not a table",
        ["rules"],
        {"unknown": 1},
        {"default_read": "maybe"},
        {"default_write": True},
        {"rules": "allow"},
        {"rules": {"tool": "shell"}},
        {"rules": ["shell"]},
        {"rules": [{"tool": "shell"}]},  # no decision
        {"rules": [{"tool": "shell", "decision": "yes"}]},
        {"rules": [{"tool": "", "decision": "allow"}]},
        {"rules": [{"tool": 3, "decision": "allow"}]},
        {"rules": [{"tool": "shell", "decision": "allow", "command": ""}]},
        {"rules": [{"tool": "shell", "decision": "allow", "command": ["ls"]}]},
        {"rules": [{"tool": "read_file", "decision": "allow", "path": "../**"}]},
        {"rules": [{"tool": "read_file", "decision": "allow", "path": ""}]},
        {"rules": [{"tool": "read_file", "decision": "allow", "path": 1}]},
        {"rules": [{"tool": "read_file", "decision": "allow", "typo": "x"}]},
    ],
)
def test_bad_shapes_are_rejected(table: object) -> None:
    with pytest.raises(PolicyError) as err:
        Policy.from_settings(table)
    assert err.value.code == "configuration_invalid"
    assert str(err.value) == ""  # carries no settings text


def test_rule_without_tool_applies_to_every_tool() -> None:
    p = Policy.from_settings({"rules": [{"decision": "deny", "path": "vendor/**"}]})
    assert p.decide("grep", read(WS / "vendor/x"), WS) == "deny"


# ---- globs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/test_a.py", True),
        ("src/**/test_*.py", "lib/src/test_a.py", False),
        ("a?c", "abc", True),
        ("a?c", "a/c", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "c.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("[!a]", "/", False),
        ("*", ".env", True),
        ("docs/**", "docs", True),
        ("docs/**", "docsx", False),
        ("**", "any/thing", True),
        ("/etc/*", "/etc/hosts", True),
        ("a[b", "a[b", True),
        ("a+b(c)", "a+b(c)", True),
    ],
)
def test_glob_semantics(pattern: str, path: str, matches: bool) -> None:
    assert compile_glob(pattern).matches(path) is matches


@pytest.mark.parametrize("pattern", ["", "../x", "a/../../b", "a\x00b"])
def test_glob_rejects(pattern: str) -> None:
    with pytest.raises(GlobError):
        compile_glob(pattern)


@given(
    st.text(alphabet="ab.*?[]!-", min_size=1, max_size=8),
    st.text(alphabet="ab.[]!-", max_size=8),
)
def test_one_segment_globs_agree_with_fnmatch(pattern: str, name: str) -> None:
    assume(pattern not in (".", ".."))  # path segments, not names
    assert compile_glob(pattern).matches(name) == fnmatch.fnmatchcase(name, pattern)


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        ("**/a/" * 30 + "b", "a/" * 2000 + "c"),
        ("*a" * 60 + "*b", "a" * 255),
        ("/**/**/**/**/x", "/" + "d/" * 2000 + "y"),
    ],
)
def test_adversarial_globs_stay_fast(pattern: str, path: str) -> None:
    glob = compile_glob(pattern)
    started = time.perf_counter()
    assert glob.matches(path) is False
    assert time.perf_counter() - started < 1.0
