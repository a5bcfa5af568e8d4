"""The sandbox's plan without I/O: grants minus hidden places as Landlock rules over a fake tree;
the `[sandbox]` settings' validation; what a project file may say about the sandbox."""

from collections.abc import Iterable
from pathlib import Path

import pytest

from magi_code.config import settings, trust
from magi_code.runner.startup import StartupError, check_sandbox
from magi_code.tools.sandbox.modes import SandboxSettings
from magi_code.tools.sandbox.plan import (
    EVERYTHING,
    EXECUTE,
    READ,
    READ_DIR,
    READ_FILE,
    RUN,
    WRITE,
    WRITE_FILE,
    Rule,
    rules,
)
from magi_code.tools.sandbox.settings import MODE_ENV, MODES, SandboxError

P = Path
TREE: dict[Path, list[Path]] = {
    P("/"): [P("/etc"), P("/home"), P("/usr")],
    P("/etc"): [P("/etc/passwd"), P("/etc/secret")],
    P("/home"): [P("/home/u"), P("/home/v")],
    P("/home/u"): [P("/home/u/.ssh"), P("/home/u/.mc"), P("/home/u/.netrc"), P("/home/u/src")],
    P("/home/u/.ssh"): [P("/home/u/.ssh/id_ed25519")],
    P("/home/u/.mc"): [P("/home/u/.mc/credentials.json")],
    P("/home/u/src"): [P("/home/u/src/.git"), P("/home/u/src/main.py")],
    P("/home/u/src/.git"): [P("/home/u/src/.git/config")],
    P("/usr"): [P("/usr/bin"), P("/usr/lib")],
}


class Lister:
    """The fake tree's lister; it remembers which folders were listed."""

    def __init__(self) -> None:
        self.listed: list[Path] = []

    def __call__(self, folder: Path) -> Iterable[Path]:
        self.listed.append(folder)
        return TREE.get(folder, [])


def plan(grants: list[tuple[Path, int]], hidden: list[tuple[Path, int]]) -> set[Rule]:
    made = rules(grants, hidden, Lister())
    assert len(made) == len(set(made)), made  # no rule is made twice
    return set(made)


def under(rule: Rule, place: Path) -> bool:
    return rule.path == place or place in rule.path.parents


def test_a_grant_without_a_hidden_place_is_one_rule_and_lists_nothing() -> None:
    lister = Lister()
    assert rules([(P("/"), RUN)], [], lister) == (Rule(P("/"), RUN),)
    # A hidden place outside the grant leaves it whole too.
    hidden = [(P("/home/u/.ssh"), EVERYTHING)]
    assert rules([(P("/usr"), RUN)], hidden, lister) == (Rule(P("/usr"), RUN),)
    assert lister.listed == []


def test_a_hidden_place_splits_its_ancestors_and_is_itself_absent() -> None:
    lister = Lister()
    made = rules([(P("/"), RUN)], [(P("/home/u/.ssh"), EVERYTHING)], lister)
    assert set(made) == {
        Rule(P("/"), READ_DIR),  # names listable, nothing else granted on the folder itself
        Rule(P("/etc"), RUN),
        Rule(P("/home"), READ_DIR),
        Rule(P("/home/v"), RUN),
        Rule(P("/home/u"), READ_DIR),
        Rule(P("/home/u/.mc"), RUN),
        Rule(P("/home/u/.netrc"), RUN),
        Rule(P("/home/u/src"), RUN),
        Rule(P("/usr"), RUN),
    }
    assert not [r for r in made if under(r, P("/home/u/.ssh"))]
    # Only the folders on the way down to the hidden place were listed.
    assert lister.listed == [P("/"), P("/home"), P("/home/u")]


def test_a_place_hidden_from_writes_keeps_its_read_rights() -> None:
    workspace, git = P("/home/u/src"), P("/home/u/src/.git")
    made = plan([(workspace, RUN | WRITE)], [(git, WRITE)])
    assert made == {
        Rule(workspace, READ_DIR),
        Rule(git, RUN),
        Rule(P("/home/u/src/main.py"), RUN | WRITE),
    }
    # Hidden at the grant's own root: the rights left, on that root.
    assert plan([(git, RUN | WRITE)], [(git, WRITE)]) == {Rule(git, RUN)}


def test_a_place_hidden_from_everything_at_the_grant_root_leaves_no_rule() -> None:
    ssh = P("/home/u/.ssh")
    assert plan([(ssh, RUN | WRITE)], [(ssh, EVERYTHING)]) == set()


def test_several_hidden_places_nested_and_apart() -> None:
    hidden = [
        (P("/home/u/.ssh"), EVERYTHING),
        (P("/home/u/.mc"), EVERYTHING),
        (P("/home/u/.netrc"), EVERYTHING),  # a file
        (P("/etc/secret"), READ_FILE),
        (P("/home/u/src/.git"), WRITE),
        (P("/home/u"), WRITE),  # contains the others
    ]
    made = plan([(P("/"), RUN | WRITE)], hidden)
    assert made == {
        Rule(P("/"), READ_DIR),
        Rule(P("/etc"), READ_DIR),
        Rule(P("/etc/passwd"), RUN | WRITE),
        Rule(P("/etc/secret"), (RUN | WRITE) & ~READ_FILE),
        Rule(P("/home"), READ_DIR),
        Rule(P("/home/v"), RUN | WRITE),
        Rule(P("/home/u"), READ_DIR),  # no longer writable, and split for its secrets
        Rule(P("/home/u/src"), RUN),  # read, not written, below /home/u
        Rule(P("/usr"), RUN | WRITE),
    }
    for secret in (P("/home/u/.ssh"), P("/home/u/.mc"), P("/home/u/.netrc")):
        assert not [r for r in made if under(r, secret)]


@pytest.mark.parametrize(
    ("grant", "hidden"),
    [
        ((P("/home/u/src"), RUN), (P("/home/u/src/.git"), WRITE)),  # read-only grant
        ((P("/home/u"), EXECUTE), (P("/home/u/.ssh"), READ)),
        ((P("/dev/null"), READ_FILE | WRITE_FILE), (P("/home/u/.ssh"), EVERYTHING)),  # apart
    ],
)
def test_rights_not_overlapping_the_hidden_rights_leave_the_grant_whole(
    grant: tuple[Path, int], hidden: tuple[Path, int]
) -> None:
    lister = Lister()
    assert rules([grant], [hidden], lister) == (Rule(*grant),)
    assert lister.listed == []


def test_several_grants_are_planned_each_on_its_own() -> None:
    grants = [(P("/"), RUN), (P("/home/u/src"), RUN | WRITE), (P("/dev/null"), WRITE_FILE)]
    hidden = [(P("/home/u/.ssh"), EVERYTHING), (P("/home/u/src/.git"), WRITE)]
    made = plan(grants, hidden)
    assert Rule(P("/home/u/src"), READ_DIR) in made  # the writable grant, split for .git
    assert Rule(P("/home/u/src/.git"), RUN) in made
    assert Rule(P("/home/u/src/main.py"), RUN | WRITE) in made
    assert Rule(P("/home/u/src"), RUN) in made  # from the split of "/", for .ssh
    assert Rule(P("/dev/null"), WRITE_FILE) in made
    assert not [r for r in made if under(r, P("/home/u/.ssh"))]


# --- the [sandbox] settings ----------------------------------------------------------------


def test_settings_default_and_valid_tables() -> None:
    assert SandboxSettings.from_settings(None) == SandboxSettings()
    assert SandboxSettings.from_settings({}) == SandboxSettings("workspace-write", False, (), ())
    made = SandboxSettings.from_settings(
        {"mode": "read-only", "network": True, "writable_roots": ["/usr/../opt"]}
    )
    assert made == SandboxSettings("read-only", True, (P("/opt").resolve(),), ())


def test_settings_paths_expand_the_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    made = SandboxSettings.from_settings({"deny_read": ["~/private"]})
    assert made.deny_read == ((tmp_path / "private").resolve(),)


@pytest.mark.parametrize(
    "table",
    [
        {"mode": "everything"},
        {"mode": "Full-Access"},
        {"mode": 1},
        {"network": "false"},
        {"network": 0},
        {"writable_roots": "/opt"},
        {"writable_roots": [1]},
        {"writable_roots": [""]},
        {"deny_read": "~/.aws"},
        {"deny_read": [None]},
        {"approval_mode": "auto"},  # not a sandbox key
        "workspace-write",
        ["mode"],
    ],
)
def test_bad_settings_raise_sandbox_error(table: object) -> None:
    with pytest.raises(SandboxError) as raised:
        SandboxSettings.from_settings(table)
    assert raised.value.code == "configuration_invalid"


def test_the_mode_override_wins_and_is_validated() -> None:
    table = {"mode": "read-only", "network": False}
    assert SandboxSettings.from_settings(table, "full-access").mode == "full-access"
    assert SandboxSettings.from_settings({"mode": "full-access"}, "read-only").mode == "read-only"
    assert SandboxSettings.from_settings(None, "read-only").mode == "read-only"
    with pytest.raises(SandboxError):
        SandboxSettings.from_settings(table, "none")


# --- what a project file may say ----------------------------------------------------------

FILE = "/w/.magi-code/settings.toml"


@pytest.mark.parametrize("trusted", [False, True])
@pytest.mark.parametrize("base_mode", [*MODES, None])
@pytest.mark.parametrize("project_mode", MODES)
def test_a_project_mode_may_only_narrow(
    trusted: bool, base_mode: str | None, project_mode: str
) -> None:
    base = {"sandbox": {"mode": base_mode}} if base_mode else {}
    kept, dropped = trust.admit_project({"sandbox": {"mode": project_mode}}, base, trusted, FILE)
    ceiling = MODES.index(base_mode or "workspace-write")  # absent: the default
    if MODES.index(project_mode) <= ceiling:
        assert kept == {"sandbox": {"mode": project_mode}}
        assert dropped == []
    else:
        assert kept == {"sandbox": {}}
        assert dropped == [trust.Dropped("sandbox.mode", FILE)]
        assert not dropped[0].needs_trust  # trusting the folder would not let it through


@pytest.mark.parametrize("trusted", [False, True])
def test_a_project_narrows_network_roots_and_adds_denied_places(trusted: bool) -> None:
    base = {"sandbox": {"network": True, "writable_roots": ["/a", "/b"], "deny_read": ["/x"]}}
    project = {"sandbox": {"network": False, "writable_roots": ["/b"], "deny_read": ["/y", "~/z"]}}
    kept, dropped = trust.admit_project(project, base, trusted, FILE)
    assert kept == {
        "sandbox": {"network": False, "writable_roots": ["/b"], "deny_read": ["/x", "/y", "~/z"]}
    }
    assert dropped == []


@pytest.mark.parametrize("trusted", [False, True])
def test_a_project_widens_nothing_in_the_sandbox(trusted: bool) -> None:
    base = {"sandbox": {"mode": "read-only", "writable_roots": ["/a"]}}
    project = {
        "sandbox": {
            "mode": "full-access",
            "network": True,
            "writable_roots": ["/a", "/home/u"],
            "deny_read": "not a list",
            "allow_read": ["/home/u/.ssh"],
        },
        "approval_mode": "auto",
    }
    kept, dropped = trust.admit_project(project, base, trusted, FILE)
    assert kept == {"sandbox": {"writable_roots": ["/a"]}}
    names = [d.key for d in dropped]
    assert sorted(names) == sorted(
        [
            "sandbox.mode",
            "sandbox.network",
            "sandbox.writable_roots",
            "sandbox.deny_read",
            "sandbox.allow_read",
            "approval_mode",
        ]
    )
    assert not any(d.needs_trust for d in dropped)
    assert "only global settings may" in dropped[-1].warning()


@pytest.mark.parametrize("value", ["true", 1, None, "false"])
def test_only_a_boolean_false_network_is_kept(value: object) -> None:
    kept, dropped = trust.admit_project({"sandbox": {"network": value}}, {}, True, FILE)
    assert kept == {"sandbox": {}}
    assert [d.key for d in dropped] == ["sandbox.network"]


def test_writable_roots_need_a_global_list() -> None:
    kept, dropped = trust.admit_project({"sandbox": {"writable_roots": ["/a"]}}, {}, True, FILE)
    assert kept == {"sandbox": {"writable_roots": []}}
    assert [d.key for d in dropped] == ["sandbox.writable_roots"]


def test_the_merged_settings_keep_the_global_sandbox_where_a_project_would_widen(
    tmp_path: Path,
) -> None:
    """Through the settings files: the global table, narrowed by an untrusted project's."""
    (tmp_path / "mc").mkdir()
    (tmp_path / "w" / ".magi-code").mkdir(parents=True)
    global_file = tmp_path / "mc" / "settings.toml"
    global_file.write_text(
        '[sandbox]\nmode = "workspace-write"\nwritable_roots = ["/a"]\ndeny_read = ["/x"]\n'
    )
    project_file = tmp_path / "w" / ".magi-code" / "settings.toml"
    project_file.write_text(
        '[sandbox]\nmode = "full-access"\nnetwork = true\nwritable_roots = ["/a", "/"]\n'
        'deny_read = ["/y"]\n'
    )
    loaded = settings.load_layers(str(global_file), str(project_file))
    assert not loaded.trusted
    assert loaded.settings["sandbox"] == {
        "mode": "workspace-write",
        "writable_roots": ["/a"],
        "deny_read": ["/x", "/y"],
    }
    made = SandboxSettings.from_settings(loaded.settings["sandbox"])
    assert made == SandboxSettings("workspace-write", False, (P("/a"),), (P("/x"), P("/y")))


def test_a_grant_inside_a_hidden_place_loses_the_hidden_rights() -> None:
    secret, inside_it = Path("/h/secret"), Path("/h/secret/project")
    planned = rules([(inside_it, READ_FILE | WRITE_FILE)], [(secret, READ_FILE)], lambda folder: [])
    assert planned == (Rule(inside_it, WRITE_FILE),)
    assert rules([(inside_it, READ_FILE)], [(secret, READ_FILE)], lambda folder: []) == ()


@pytest.mark.parametrize(
    ("conf", "env"),
    [({}, {MODE_ENV: "open"}), ({"sandbox": {"mode": "open"}}, {}), ({"approval_mode": "yes"}, {})],
)
def test_startup_refuses_a_bad_sandbox_setting(
    conf: dict[str, object], env: dict[str, str]
) -> None:
    with pytest.raises(StartupError) as refused:
        check_sandbox(conf, env)
    assert refused.value.code == "configuration_invalid"


def test_startup_takes_the_good_ones() -> None:
    check_sandbox(
        {"sandbox": {"mode": "read-only"}, "approval_mode": "auto"}, {MODE_ENV: "full-access"}
    )
    check_sandbox({}, {})


def test_a_private_temp_folder_left_behind_is_swept(tmp_path: Path) -> None:
    import os
    import tempfile

    from magi_code.tools.sandbox.modes import TEMP_PREFIX, Sandbox, SandboxSettings

    no_such_pid = 2**22 + 1  # above the largest pid_max Linux allows: no process has it
    left = Path(tempfile.gettempdir(), f"{TEMP_PREFIX}{no_such_pid}-leftover")
    live = Path(tempfile.gettempdir(), f"{TEMP_PREFIX}{os.getpid()}-kept")
    left.mkdir(exist_ok=True)
    live.mkdir(exist_ok=True)
    try:
        made = Sandbox(SandboxSettings(), tmp_path, str(tmp_path / "mc"), None).temp()
        assert made.name.startswith(f"{TEMP_PREFIX}{os.getpid()}-")
        assert not left.exists() and live.exists()
    finally:
        live.rmdir()
