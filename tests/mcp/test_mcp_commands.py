"""`magi-code mcp ...` on a temporary MC_HOME: add/approve/list/remove, help, errors, and a
project file that tries to approve."""

import subprocess
import sys
from pathlib import Path

import pytest

from magi_code.client import environment
from magi_code.mcp.definitions import canonical_digest

USER_FILE = """# my settings, kept byte for byte
model = "fixture-model"   # a comment after a value

[permissions]
default_shell = "ask"
"""


def mcp(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "magi_code.cli", "mcp", *args],
        capture_output=True,
        text=True,
        cwd=cwd or home.parent,
        env=environment(home),
        timeout=60,
        check=False,
    )


def table(done: subprocess.CompletedProcess[str]) -> list[list[str]]:
    return [line.split() for line in done.stdout.splitlines()]


def test_add_approve_list_remove_round_trip(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.toml").write_text(USER_FILE)
    added = mcp(home, "add", "files", "--", "python3", "-m", "srv", "--root", "/tmp")
    assert added.returncode == 0, added.stderr
    web = mcp(home, "add", "web", "--url", "https://mcp.example.com/mcp", "--header", "X-K=env:K")
    assert web.returncode == 0, web.stderr
    assert table(mcp(home, "list")) == [
        ["NAME", "TRANSPORT", "ENABLED", "APPROVED"],
        ["files", "stdio", "yes", "no"],
        ["web", "http", "yes", "no"],
    ]
    approved = mcp(home, "approve", "files")
    definition = {"command": "python3", "args": ["-m", "srv", "--root", "/tmp"]}
    digest = canonical_digest("files", definition)
    assert approved.returncode == 0 and digest in approved.stderr
    assert '"command": "python3"' in approved.stderr  # what is approved is shown
    assert table(mcp(home, "list"))[1] == ["files", "stdio", "yes", "yes"]
    assert mcp(home, "digest", "files").stdout.strip() == digest
    text = (home / "settings.toml").read_text()
    assert text.startswith(USER_FILE) and f'approved = ["{digest}"]' in text

    assert mcp(home, "remove", "files").returncode == 0
    assert mcp(home, "remove", "web").returncode == 0
    after = (home / "settings.toml").read_text()
    assert after.startswith(USER_FILE) and "files" not in after and digest not in after
    listed = mcp(home, "list")
    assert listed.returncode == 0 and listed.stdout == ""


def test_a_project_file_cannot_approve(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / ".magi-code"
    home.mkdir()
    project.mkdir()
    definition = {"command": "python3", "args": ["-m", "srv"]}
    digest = canonical_digest("files", definition)
    (home / "settings.toml").write_text(
        f'[permissions]\ntrusted_projects = ["{tmp_path}"]\n\n'
        '[mcp.servers.files]\ncommand = "python3"\nargs = ["-m", "srv"]\nenabled = true\n'
    )
    project_text = f'[mcp]\napproved = ["{digest}"]\n'
    (project / "settings.toml").write_text(project_text)
    listed = mcp(home, "list")
    assert table(listed)[1] == ["files", "stdio", "yes", "no"]
    assert "ignored mcp.approved" in listed.stderr and "only global settings may" in listed.stderr
    assert mcp(home, "approve", "files").returncode == 0  # the user's command writes globally
    assert (project / "settings.toml").read_text() == project_text
    assert digest in (home / "settings.toml").read_text()
    assert table(mcp(home, "list"))[1] == ["files", "stdio", "yes", "yes"]


@pytest.mark.parametrize(
    "verb", [[], ["list"], ["add"], ["remove"], ["approve"], ["digest"], ["login"], ["logout"]]
)
def test_every_command_has_help(tmp_path: Path, verb: list[str]) -> None:
    for flag in ("-h", "--help"):
        done = mcp(tmp_path / "home", *verb, flag)
        assert done.returncode == 0 and "usage:" in done.stdout
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(
    ("args", "status", "says"),
    [
        (["frobnicate"], 2, "unknown command `frobnicate`"),
        (["add", "x"], 2, "either -- COMMAND"),
        (["add", "x", "--url", "http://example.com/mcp"], 2, "not a valid server"),
        (["add", "x", "--url", "https://h/", "--header", "novalue"], 2, "KEY=VALUE"),
        (["remove", "nope"], 1, "not defined in the global settings"),
        (["approve", "nope"], 2, "no MCP server of that name"),
        (["login", "nope"], 2, "no MCP server of that name"),
        (["list", "--", "x"], 2, "only `add`"),
    ],
)
def test_errors_are_one_clear_line_without_traceback(
    tmp_path: Path, args: list[str], status: int, says: str
) -> None:
    done = mcp(tmp_path / "home", *args)
    assert done.returncode == status and says in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_add_refuses_a_name_already_defined_and_login_needs_http_and_approval(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    assert mcp(home, "add", "x", "--", "true").returncode == 0
    again = mcp(home, "add", "x", "--", "true")
    assert again.returncode == 1 and "already defined" in again.stderr
    assert "not an HTTP server" in mcp(home, "login", "x").stderr
    assert mcp(home, "add", "w", "--url", "https://h.example/mcp").returncode == 0
    assert "not approved" in mcp(home, "login", "w").stderr
    static = ["--url", "https://h.example/mcp", "--bearer-token-env", "W_TOKEN"]
    assert mcp(home, "add", "static", *static).returncode == 0
    assert mcp(home, "approve", "static").returncode == 0
    unset = mcp(home, "login", "static")
    assert unset.returncode == 1 and "environment variable" in unset.stderr
    done = subprocess.run(
        [sys.executable, "-m", "magi_code.cli", "mcp", "login", "static"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environment(home, W_TOKEN="secret-token-value"),
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and "static Authorization" in done.stderr
    assert "secret-token-value" not in done.stderr + done.stdout


def test_header_values_are_never_printed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    secret = "sk-live-0123456789abcdef"
    added = mcp(home, "add", "w", "--url", "https://h.example/mcp", "--header", f"X-K={secret}")
    shown = mcp(home, "approve", "w")
    listed = mcp(home, "list")
    for done in (added, shown, listed):
        assert secret not in done.stdout + done.stderr
    assert '"X-K": null' in shown.stderr  # the header NAME is approved, never its value
