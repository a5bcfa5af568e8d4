"""The one context policy over real files: instruction order and bounds, skill discovery,
collisions, disabled filtering, trust, and primary-profile selection."""

import os
from pathlib import Path

import pytest

from magi_code.config import settings
from magi_code.context import loader
from magi_code.context.profiles import ProfileError
from magi_code.limits import (
    INSTRUCTION_FILE_BYTES,
    INSTRUCTIONS_TOTAL_BYTES,
    PROFILE_NAME_CHARS,
    SKILLS_LISTED,
)

from .files import profile, skill


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """MC_HOME, a repository root (holding .git) and a cwd two levels below it."""
    home, root = tmp_path / "home", tmp_path / "repo"
    cwd = root / "pkg" / "sub"
    cwd.mkdir(parents=True)
    (root / ".git").mkdir()
    home.mkdir()
    return home, root, cwd


def load(
    home: Path, cwd: Path, *, agent: str | None = None, trusted: bool = False
) -> loader.Context:
    if trusted:
        (home / "settings.toml").open("a").write(
            f"\n[permissions]\ntrusted_projects = [{str(cwd)!r}]\n"
        )
    loaded = settings.load_layers(
        str(home / "settings.toml"), str(cwd / ".magi-code" / "settings.toml")
    )
    assert loaded.trusted == trusted
    return loader.load(str(home), str(cwd), loaded, agent=agent)


def kinds(context: loader.Context) -> list[tuple[str, str]]:
    return [(kind, origin) for kind, origin, _ in loader.ordered_sources(context)]


def test_instruction_order_from_profile_to_extra_paths(tree: tuple[Path, Path, Path]) -> None:
    home, root, cwd = tree
    (home / "AGENTS.md").write_text("GLOBAL")
    (root / "AGENTS.md").write_text("ROOT")
    (root / "pkg" / "AGENTS.md").write_text("PKG")
    (cwd / "AGENTS.md").write_text("CWD")
    (root.parent / "AGENTS.md").write_text("ABOVE THE ROOT: never read")
    (home / "style.md").write_text("STYLE")
    (home / "settings.toml").write_text('instructions = ["style.md", "gone.md"]\n')
    context = load(home, cwd)
    assert kinds(context) == [
        ("profile", "built-in"),
        ("global", str(home / "AGENTS.md")),
        ("workspace", str(root / "AGENTS.md")),
        ("workspace", str(root / "pkg" / "AGENTS.md")),
        ("workspace", str(cwd / "AGENTS.md")),
        ("setting", str(home / "style.md")),
    ]
    told = context.instructions
    assert told.index("GLOBAL") < told.index("ROOT") < told.index("PKG") < told.index("CWD")
    assert "ABOVE THE ROOT" not in told
    assert context.notices == [f"{home / 'gone.md'}: instructions file not found"]


def test_without_git_the_cwd_is_the_root(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    home.mkdir()
    (tmp_path / "a" / "AGENTS.md").write_text("PARENT")
    (cwd / "AGENTS.md").write_text("HERE")
    assert [o for _, o in kinds(load(home, cwd))][1:] == [str(cwd / "AGENTS.md")]


def test_project_instructions_are_relative_to_the_project_settings(
    tree: tuple[Path, Path, Path],
) -> None:
    home, _, cwd = tree
    (cwd / ".magi-code").mkdir()
    (cwd / ".magi-code" / "settings.toml").write_text('instructions = ["../NOTES.md"]\n')
    (cwd / "NOTES.md").write_text("NOTES")
    told = ("setting", str(cwd / ".magi-code" / "../NOTES.md"))
    assert told not in kinds(load(home, cwd))  # `instructions` is a trusted-only project key
    assert kinds(load(home, cwd, trusted=True))[-1] == told


def test_per_file_bound_at_its_edge(tree: tuple[Path, Path, Path]) -> None:
    home, _, cwd = tree
    (home / "AGENTS.md").write_text("g" * INSTRUCTION_FILE_BYTES)
    context = load(home, cwd)
    assert context.sources[1].text == "g" * INSTRUCTION_FILE_BYTES and not context.notices
    (home / "AGENTS.md").write_text("g" * (INSTRUCTION_FILE_BYTES + 1))
    context = load(home, cwd)
    assert context.sources[1].text == "g" * INSTRUCTION_FILE_BYTES
    assert context.notices == [
        f"{home / 'AGENTS.md'}: larger than {INSTRUCTION_FILE_BYTES} bytes; cut to its first "
        f"{INSTRUCTION_FILE_BYTES}"
    ]


def test_total_bound_names_each_file_cut_or_left_out(tree: tuple[Path, Path, Path]) -> None:
    home, _, cwd = tree
    profile_bytes = len(load(home, cwd).instructions.encode())
    full = INSTRUCTIONS_TOTAL_BYTES // INSTRUCTION_FILE_BYTES  # files that fill the total
    names = [f"x{i}.md" for i in range(full + 1)]
    for name in names:
        (home / name).write_text("y" * INSTRUCTION_FILE_BYTES)
    (home / "settings.toml").write_text(f"instructions = {names!r}\n".replace("'", '"'))
    context = load(home, cwd)
    assert sum(len(s.text.encode()) for s in context.sources) == INSTRUCTIONS_TOTAL_BYTES
    assert context.notices == [
        f"{home / names[-2]}: instructions exceed {INSTRUCTIONS_TOTAL_BYTES} bytes in total; "
        f"cut to its first {INSTRUCTION_FILE_BYTES - profile_bytes} bytes",
        f"{home / names[-1]}: instructions exceed {INSTRUCTIONS_TOTAL_BYTES} bytes in total; "
        "this file is left out",
    ]


def test_unreadable_and_non_utf8_files_are_notices(tree: tuple[Path, Path, Path]) -> None:
    home, _, cwd = tree
    (home / "AGENTS.md").write_bytes(b"\xff\xfe")
    (cwd / "AGENTS.md").mkdir()
    context = load(home, cwd)
    assert context.notices == [
        f"{home / 'AGENTS.md'}: instructions file is not UTF-8; left out",
        f"{cwd / 'AGENTS.md'}: instructions path is a directory",
    ]


def test_skills_collisions_disabled_invalid_and_trust(tree: tuple[Path, Path, Path]) -> None:
    home, root, cwd = tree
    project = root / ".magi-code"
    global_pdf = skill(home, "pdf", "Global PDF")
    skill(home, "lint", "Lints")
    skill(home, "off", "Disabled one")
    project_pdf = skill(project, "pdf", "Project PDF")
    skill(home, "wrong", folder="other")
    (home / "skills" / "empty").mkdir()
    bad = home / "skills" / "bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: bad\n---\n")
    (home / "settings.toml").write_text('[skills]\ndisabled = ["off"]\n')

    untrusted = load(home, cwd)
    assert [(s.name, s.description) for s in untrusted.skills] == [
        ("lint", "Lints"),
        ("pdf", "Global PDF"),
    ]
    assert untrusted.notices == [
        f"{bad / 'SKILL.md'}: skill skipped: description is missing",
        f"{home / 'skills' / 'empty' / 'SKILL.md'}: skill skipped: no SKILL.md",
        f"{home / 'skills' / 'other' / 'SKILL.md'}: skill skipped: name does not match the "
        "folder name",
    ]
    trusted = load(home, cwd, trusted=True)
    assert [(s.name, s.scope) for s in trusted.skills] == [("lint", "global"), ("pdf", "project")]
    assert trusted.notices[-1] == (
        f"skill pdf: {project_pdf / 'SKILL.md'} shadows {global_pdf / 'SKILL.md'}"
    )
    listing = trusted.sources[-1]
    assert listing.kind == "skills"
    assert "- pdf: Project PDF" in listing.text and "Global PDF" not in listing.text
    assert "BODY OF" not in trusted.instructions


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("a" * 64, True),
        ("a" * 65, False),
        ("-a", False),
        ("a-", False),
        ("a--b", False),
        ("A", False),
        ("a1-b2", True),
    ],
)
def test_skill_names(tmp_path: Path, name: str, valid: bool) -> None:
    home = tmp_path / "home"
    skill(home, name)
    context = load(home, tmp_path)
    assert [s.name for s in context.skills] == ([name] if valid else [])


def test_description_bound(tmp_path: Path) -> None:
    home = tmp_path / "home"
    skill(home, "edge", "d" * 1024)
    skill(home, "over", "d" * 1025)
    context = load(home, tmp_path)
    assert [s.name for s in context.skills] == ["edge"]
    assert context.notices[0].endswith("description longer than 1024 characters")


def test_listing_is_bounded_and_says_what_it_left_out(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for i in range(SKILLS_LISTED + 1):
        skill(home, f"s{i:04d}")
    context = load(home, tmp_path)
    assert len(context.skills) == SKILLS_LISTED + 1
    assert context.sources[-1].text.count("\n- ") == SKILLS_LISTED
    assert context.notices == [
        f"1 skills not listed to the model (more than {SKILLS_LISTED} or 65536 bytes): "
        f"s{SKILLS_LISTED:04d}"
    ]


def test_profile_selection_and_its_body_first(tree: tuple[Path, Path, Path]) -> None:
    home, root, cwd = tree
    path = profile(home, "reviewer", "description: Reviews\nmode: primary\nmodel: big")
    (home / "settings.toml").write_text('agent = "reviewer"\n')
    context = load(home, cwd)
    assert context.profile.name == "reviewer" and context.profile.model == "big"
    assert kinds(context)[0] == ("profile", str(path))
    assert context.instructions.startswith("PROFILE REVIEWER")
    assert load(home, cwd, agent="default").profile.name == "default"  # --agent wins
    # untrusted: a project profile of that name is not even looked at
    profile(root / ".magi-code", "reviewer", "mode: primary", "PROJECT REVIEWER")
    assert load(home, cwd).instructions.startswith("PROFILE REVIEWER")
    trusted = load(home, cwd, trusted=True)
    assert trusted.instructions.startswith("PROJECT REVIEWER")
    assert trusted.notices == [
        f"agent reviewer: {root / '.magi-code' / 'agents' / 'reviewer.md'} shadows {path}"
    ]


@pytest.mark.parametrize(
    ("front", "settings_text", "message"),
    [
        (None, "", "agent profile 'x' not found"),
        ("mode: primary\ndisabled: true", "", "agent profile 'x' is disabled"),
        ("mode: primary", '[agents]\ndisabled = ["x"]', "agent profile 'x' is disabled"),
        ("mode: subagent", "", "agent profile 'x' is a subagent only"),
        ("mode: boss", "", "mode must be primary, subagent or all"),
        ("colour: red", "", "unknown field colour"),
        ("description: [open", "", "line 2: unterminated list"),
        ("permissions: [allow shell]", "", "it may only narrow"),
        ("provider: nowhere", "", "provider not configured"),
    ],
)
def test_invalid_primary_is_profile_error(
    tmp_path: Path, front: str | None, settings_text: str, message: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    if front is not None:
        profile(home, "x", front)
    (home / "settings.toml").write_text(settings_text + "\n")
    with pytest.raises(ProfileError) as caught:
        load(home, tmp_path, agent="x")
    assert message in str(caught.value)


def test_subagents_listed_without_disabled_or_primary_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    profile(home, "helper", "mode: subagent\ndescription: Helps")
    profile(home, "both", "mode: all")
    profile(home, "lead", "mode: primary")
    profile(home, "sleepy", "mode: subagent\ndisabled: true")
    profile(home, "broken", "mode: nope")
    (home / "settings.toml").write_text('[agents]\ndisabled = ["general"]\n')
    context = load(home, tmp_path)
    assert [p.name for p in context.subagents()] == ["both", "explore", "helper"]
    assert context.notices == [
        f"agent profile {home / 'agents' / 'broken.md'}: mode must be primary, subagent or all"
    ]
    explore = next(p for p in context.subagents() if p.name == "explore")
    assert explore.tools == ("read_file", "list_dir", "glob", "grep")


def test_bad_disabled_shapes_are_configuration_errors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for text in ('[skills]\ndisabled = "pdf"', "[agents]\ndisabled = [1]", "skills = 3"):
        (home / "settings.toml").write_text(text + "\n")
        # the settings' own type check (config/schema.py) refuses them first
        with pytest.raises((settings.SettingsError, loader.ContextSettingsError)) as refused:
            load(home, tmp_path)
        assert refused.value.code == "configuration_invalid"


def test_same_file_is_told_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "AGENTS.md").write_text("ONCE")
    os.symlink(home / "AGENTS.md", tmp_path / "AGENTS.md")
    assert load(home, tmp_path).instructions.count("ONCE") == 1


def test_profile_body_cut_is_a_notice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = profile(home, "long", "mode: primary", "p" * (INSTRUCTION_FILE_BYTES + 1))
    context = load(home, tmp_path, agent="long")
    assert context.sources[0].text == "p" * INSTRUCTION_FILE_BYTES
    assert context.notices == [
        f"{path}: profile body larger than {INSTRUCTION_FILE_BYTES} bytes; cut to its first "
        f"{INSTRUCTION_FILE_BYTES}"
    ]


def test_a_linked_skill_folder_keeps_its_name_and_reads_where_it_lands(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "src"
    target = skill(elsewhere, "pdf")
    (home / "skills").mkdir(parents=True)
    (home / "skills" / "pdf").symlink_to(target)
    (home / "skills" / "renamed").symlink_to(target)
    context = load(home, tmp_path)
    assert [(s.name, s.directory) for s in context.skills] == [("pdf", str(target.resolve()))]
    assert context.notices == [
        f"{home / 'skills' / 'renamed' / 'SKILL.md'}: skill skipped: name does not match the "
        "folder name"
    ]


def test_profile_name_bound(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for name in ("p" * PROFILE_NAME_CHARS, "p" * (PROFILE_NAME_CHARS + 1)):
        profile(home, name, "mode: primary")
    assert load(home, tmp_path, agent="p" * PROFILE_NAME_CHARS).profile.origin.endswith(".md")
    with pytest.raises(ProfileError):
        load(home, tmp_path, agent="p" * (PROFILE_NAME_CHARS + 1))
