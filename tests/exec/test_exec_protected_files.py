"""The credential store and the session files are unreadable by every tool, by path and by
file (a hard link is no door), and a write through a hard link to a protected file is
refused: over the real `magi-code exec`, the fixture model calling the tools."""

import json
import os
from pathlib import Path
from typing import Any

from support.exec import exec_run
from support.sessions import call, script

STORED = "sk-STORED-KEY-0123456789abcdef"


def run(cwd: Path, home: Path, mode: str, *rounds: dict[str, Any], **env: str) -> str:
    """The run's stdout and every stored session line, as one text to search."""
    done = exec_run(["--json", "--approval-mode", mode, script(*rounds)], cwd, home, **env)

    assert done.returncode == 0, done.stderr
    stored = "".join(p.read_text() for p in (home / "sessions").glob("*.jsonl"))
    return done.stdout.decode() + stored


def test_the_store_and_the_sessions_are_read_by_no_tool(workspace: Path, home: Path) -> None:
    home.mkdir()
    (home / "credentials.json").write_text(json.dumps({"openai": {"api_key": STORED}}))
    first = run(workspace, home, "full", call("read_file", path="missing.txt"))
    (session,) = (home / "sessions").glob("*.jsonl")
    os.link(home / "credentials.json", workspace / "innocent.json")
    rounds = [
        call("grep", pattern="api_key", path=str(home)),
        call("grep", pattern="api_key", path="."),
        call("read_file", path="innocent.json"),
        call("read_file", path=str(home / "credentials.json")),
        call("read_file", path=str(session)),
        call("list_dir", path=str(home / "sessions")),
        {"text": "done"},
    ]
    for mode in ("ask", "full"):
        seen = run(workspace, home, mode, *rounds)
        assert STORED not in seen
        assert "protected_file" in seen  # the hard link, refused as the file itself
    assert "missing.txt" in first


def test_a_write_through_a_hard_link_to_a_protected_file_is_refused(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    user = tmp_path / "user"
    (user / ".ssh").mkdir(parents=True)
    keys = user / ".ssh" / "authorized_keys"
    keys.write_text("ssh-ed25519 AAAA mine\n")
    os.link(keys, workspace / "notes.md")
    for name, arguments in (
        ("write_file", {"path": "notes.md", "content": "ssh-ed25519 AAAA attacker\n"}),
        ("edit_file", {"path": "notes.md", "old": "mine", "new": "attacker"}),
    ):
        seen = run(workspace, home, "edits", call(name, **arguments), HOME=str(user))
        assert "protected_file" in seen
    assert keys.read_text() == "ssh-ed25519 AAAA mine\n"
