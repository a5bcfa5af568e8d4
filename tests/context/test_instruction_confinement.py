"""Instruction files are regular files inside their root.

An untrusted clone (a real `git init` repository) whose AGENTS.md files link out of it, to
/proc/self/environ, a private key under the user's home and MC_HOME's credential store, and
one whose AGENTS.md is a FIFO: the real `magi-code context` and `magi-code exec --json` skip
each of them with a notice naming the file, never show or store what they lead to, and never
hang; a link that stays inside the clone is read. Then the other roots over real files, in
process: MC_HOME for global files (or a path the global settings name), the repository for a
trusted project's `instructions`, profiles and skills.
"""

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from magi_code.client import environment
from magi_code.config import settings
from magi_code.context import loader
from magi_code.context.profiles import ProfileError
from support.exec import MAGI_CODE

from .files import profile, skill, trust

ENV_SECRET = "environ-secret-copper-meadow-9"  # only in the child's environment
KEY_SECRET = "ssh-secret-orchid-lantern-7"  # only in <fake home>/.ssh/id_ed25519
STORE_SECRET = "store-secret-walnut-harbor-3"  # only in MC_HOME/credentials.json
SECRETS = (ENV_SECRET, KEY_SECRET, STORE_SECRET)
OUTSIDE = "instructions left out: leads outside {root}"
IRREGULAR = "instructions left out: not a regular file"


class Clone:
    """A fake user home, an MC_HOME and an untrusted clone with `sub/deeper` (the cwd)."""

    def __init__(self, tmp_path: Path) -> None:
        base = tmp_path.resolve()
        self.user_home, self.mc_home, self.root = base / "home", base / "mc-home", base / "clone"
        (self.user_home / ".ssh").mkdir(parents=True)
        (self.user_home / ".ssh" / "id_ed25519").write_text(f"{KEY_SECRET}\n")
        self.mc_home.mkdir()
        (self.mc_home / "credentials.json").write_text(json.dumps({"note": STORE_SECRET}))
        subprocess.run(["git", "init", "-q", str(self.root)], check=True, timeout=30)
        self.cwd = self.root / "sub" / "deeper"
        self.cwd.mkdir(parents=True)

    def env(self) -> dict[str, str]:
        return environment(self.mc_home, HOME=str(self.user_home), MC_TEST_MARKER=ENV_SECRET)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [MAGI_CODE, *args],
            cwd=self.cwd,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,  # a FIFO read would block forever: fail, do not hang the suite
        )


def links_out(tmp_path: Path) -> tuple[Clone, dict[Path, str]]:
    """Each AGENTS.md from the root to the cwd links out of the clone: (clone, skipped)."""
    clone = Clone(tmp_path)
    os.symlink("/proc/self/environ", clone.root / "AGENTS.md")
    os.symlink(clone.user_home / ".ssh" / "id_ed25519", clone.root / "sub" / "AGENTS.md")
    os.symlink(clone.mc_home / "credentials.json", clone.cwd / "AGENTS.md")
    outside = OUTSIDE.format(root=clone.root)
    skipped = {clone.root / "AGENTS.md": outside, clone.root / "sub" / "AGENTS.md": outside}
    skipped[clone.cwd / "AGENTS.md"] = outside
    return clone, skipped


def fifo_and_inner_link(tmp_path: Path) -> tuple[Clone, dict[Path, str]]:
    """AGENTS.md -> docs/agents.md (kept), sub/AGENTS.md a FIFO, the cwd's a plain file."""
    clone = Clone(tmp_path)
    (clone.root / "docs").mkdir()
    (clone.root / "docs" / "agents.md").write_text("IN-CLONE DOCS RULES\n")
    os.symlink("docs/agents.md", clone.root / "AGENTS.md")
    os.mkfifo(clone.root / "sub" / "AGENTS.md")
    (clone.cwd / "AGENTS.md").write_text("DEEPER RULES\n")
    return clone, {clone.root / "sub" / "AGENTS.md": IRREGULAR}


def test_context_skips_agents_md_links_out_of_an_untrusted_clone(tmp_path: Path) -> None:
    clone, skipped = links_out(tmp_path)
    done = clone.run("context")
    assert done.returncode == 0, done.stderr
    for secret in SECRETS:
        assert secret not in done.stdout and secret not in done.stderr
    assert "(not trusted)" in done.stdout
    headers = [line for line in done.stdout.splitlines() if line.startswith("== ")]
    assert not [line for line in headers if "AGENTS.md" in line], headers
    notices = done.stdout.splitlines()
    for path, problem in skipped.items():
        assert f"- {path}: {problem}" in notices, done.stdout


def test_context_reads_an_in_clone_link_and_skips_a_fifo_without_hanging(
    tmp_path: Path,
) -> None:
    clone, skipped = fifo_and_inner_link(tmp_path)
    done = clone.run("context")
    assert done.returncode == 0, done.stderr
    headers = [line for line in done.stdout.splitlines() if line.startswith("== ")]
    assert [line.split(" (")[0] for line in headers if "AGENTS.md" in line] == [
        f"== workspace: {clone.root / 'AGENTS.md'}",
        f"== workspace: {clone.cwd / 'AGENTS.md'}",
    ]
    assert "IN-CLONE DOCS RULES" in done.stdout and "DEEPER RULES" in done.stdout
    for path, problem in skipped.items():
        assert f"- {path}: {problem}" in done.stdout.splitlines(), done.stdout


@pytest.mark.parametrize("layout", [links_out, fifo_and_inner_link])
def test_exec_json_in_the_clone_completes_and_stores_no_secret(
    tmp_path: Path, layout: Callable[[Path], tuple[Clone, dict[Path, str]]]
) -> None:
    clone, skipped = layout(tmp_path)
    done = clone.run("exec", "--json", "hi")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["event"] == "session"
    assert events[-1]["event"] == "run.finished"
    assert events[-1]["data"]["outcome"] == "completed"
    stored = (clone.mc_home / "sessions" / f"{events[0]['data']['session_id']}.jsonl").read_text()
    for secret in SECRETS:
        assert secret not in stored and secret not in done.stdout and secret not in done.stderr
    for path, problem in skipped.items():
        assert f"{path}: {problem}" in done.stderr, done.stderr


# In process, over real files: the other roots.


def load(home: Path, cwd: Path, *, agent: str | None = None) -> loader.Context:
    loaded = settings.load_layers(
        str(home / "settings.toml"), str(cwd / ".magi-code" / "settings.toml")
    )
    return loader.load(str(home), str(cwd), loaded, agent=agent)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """MC_HOME, a repository root and, beside both, a folder outside them."""
    base = tmp_path.resolve()
    home, root, outside = base / "mc-home", base / "repo", base / "outside"
    for folder in (home, root / ".git", outside):
        folder.mkdir(parents=True)
    (outside / "rules.md").write_text(f"OUTSIDE RULES {KEY_SECRET}\n")
    return home, root, outside


def test_global_agents_md_stays_in_mc_home_unless_the_global_settings_name_it(
    tree: tuple[Path, Path, Path],
) -> None:
    home, root, outside = tree
    os.symlink(outside / "rules.md", home / "AGENTS.md")
    context = load(home, root)
    assert KEY_SECRET not in context.instructions
    assert context.notices == [f"{home / 'AGENTS.md'}: " + OUTSIDE.format(root=home)]
    # the global settings name the same file (through a link or not): the user chose it
    os.symlink(outside / "rules.md", home / "linked.md")
    (home / "settings.toml").write_text('instructions = ["linked.md"]\n')
    context = load(home, root)
    assert [(s.kind, s.origin) for s in context.sources][1:] == [
        ("setting", str(home / "linked.md"))
    ]
    assert context.notices == [f"{home / 'AGENTS.md'}: " + OUTSIDE.format(root=home)]
    os.mkfifo(home / "pipe.md")
    (home / "settings.toml").write_text('instructions = ["pipe.md", "/proc/self/environ"]\n')
    context = load(home, root)
    assert context.notices[1:] == [
        f"{home / 'pipe.md'}: {IRREGULAR}",
        f"/proc/self/environ: {IRREGULAR}",
    ]


def test_trusted_project_instructions_stay_in_the_repository(
    tree: tuple[Path, Path, Path],
) -> None:
    home, root, outside = tree
    trust(home, root)
    (root / "notes.md").write_text("IN-REPO NOTES\n")
    (root / ".magi-code").mkdir()
    (root / ".magi-code" / "settings.toml").write_text(
        f'instructions = ["{outside / "rules.md"}", "../notes.md", "../../outside/rules.md"]\n'
    )
    context = load(home, root)
    assert "IN-REPO NOTES" in context.instructions and KEY_SECRET not in context.instructions
    outside_notice = OUTSIDE.format(root=root)
    assert context.notices == [
        f"{outside / 'rules.md'}: {outside_notice}",
        f"{root / '.magi-code' / '../../outside/rules.md'}: {outside_notice}",
    ]


def test_profiles_and_skills_are_regular_files_inside_their_root(
    tree: tuple[Path, Path, Path],
) -> None:
    home, root, outside = tree
    trust(home, root)
    secret_profile = profile(outside, "leak", "mode: subagent", KEY_SECRET)
    (root / ".magi-code" / "agents").mkdir(parents=True)
    os.symlink(secret_profile, root / ".magi-code" / "agents" / "leak.md")
    (home / "agents").mkdir()
    os.symlink(secret_profile, home / "agents" / "global-leak.md")
    os.mkfifo(home / "agents" / "pipe.md")
    secret_skill = skill(outside, "away", body=KEY_SECRET)
    (root / ".magi-code" / "skills").mkdir(parents=True)
    os.symlink(secret_skill, root / ".magi-code" / "skills" / "away")
    inner = skill(root / ".magi-code", "inner")
    (inner / "SKILL.md").unlink()
    os.symlink(secret_skill / "SKILL.md", inner / "SKILL.md")
    (home / "skills" / "fifo").mkdir(parents=True)
    os.mkfifo(home / "skills" / "fifo" / "SKILL.md")
    context = load(home, root)
    assert [p.name for p in context.subagents()] == ["explore", "general"]
    assert context.skills == []
    assert KEY_SECRET not in context.instructions
    project = root / ".magi-code"
    assert sorted(context.notices) == sorted(
        [
            f"{home / 'skills' / 'fifo' / 'SKILL.md'}: skill skipped: not a regular file",
            f"{project / 'skills' / 'away' / 'SKILL.md'}: skill skipped: leads outside {root}",
            f"{project / 'skills' / 'inner' / 'SKILL.md'}: skill skipped: leads outside {inner}",
            f"agent profile {home / 'agents' / 'global-leak.md'}: leads outside {home}",
            f"agent profile {home / 'agents' / 'pipe.md'}: not a regular file",
            f"agent profile {project / 'agents' / 'leak.md'}: leads outside {root}",
        ]
    )
    with pytest.raises(ProfileError, match="leads outside"):
        load(home, root, agent="leak")
