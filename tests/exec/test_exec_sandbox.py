"""`magi-code exec` with the OS sandbox, over the real console script and the fixture model:
`auto` runs what the sandbox contains without a question, a command the sandbox refused is
offered outside it (and only `full` takes the offer), and with no Landlock `auto` asks."""

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from magi_code.tools.sandbox.modes import containment, support
from support import escapes
from support.exec import exec_run, json_lines, named
from support.sessions import script

pytestmark = pytest.mark.skipif(
    support()[1] is not None, reason=f"no Landlock on this kernel: {support()[1]}"
)


def shell(command: str) -> dict[str, Any]:
    return {"tools": [{"name": "shell", "arguments": {"command": command}}]}


def run(args: list[str], cwd: Path, home: Path, **env: str) -> list[dict[str, Any]]:
    done = exec_run(["--json", *args], cwd, home, **env)
    assert done.returncode == 0, done.stderr
    return json_lines(done.stdout)


def test_auto_runs_a_sandboxed_command_and_a_workspace_edit_unasked(
    workspace: Path, home: Path
) -> None:
    edit = {"tools": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "new"}}]}
    lines = run(
        ["--approval-mode", "auto", script(shell("ls && touch made"), edit)], workspace, home
    )
    assert named(lines, "approval.requested") == []
    assert (workspace / "made").exists()
    assert (workspace / "a.txt").read_text() == "new"
    # The same calls under `ask` are asked about, and refused.
    (workspace / "made").unlink()
    asked = run([script(shell("touch made"))], workspace, home)
    assert len(named(asked, "approval.requested")) == 1
    assert not (workspace / "made").exists()


@pytest.fixture
def elsewhere() -> Iterator[Path]:
    """A folder outside the workspace and outside /tmp and /var/tmp (which workspace-write
    may write): in the user's home, as a real target would be."""
    folder = Path(tempfile.mkdtemp(prefix="magi-code-test-", dir=Path.home()))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_refused_write_is_offered_outside_the_sandbox_and_only_full_takes_it(
    workspace: Path, home: Path, elsewhere: Path
) -> None:
    outside = elsewhere / "outside.txt"
    command = script(shell(f"touch {outside}"))
    lines = run(["--approval-mode", "auto", command], workspace, home)
    (question,) = named(lines, "approval.requested")
    assert question["summary"].startswith("Run outside the sandbox?")
    assert any(d["code"] == "approval_denied" for d in named(lines, "diagnostic"))
    assert not outside.exists()
    full = run(["--approval-mode", "full", command], workspace, home)
    asked, question = named(full, "approval.requested")  # full answers both
    assert asked["summary"].startswith("run: touch")
    assert question["summary"].startswith("Run outside the sandbox?")
    assert outside.exists()


def test_read_only_mode_writes_nothing_in_the_workspace(workspace: Path, home: Path) -> None:
    lines = run(
        ["--sandbox", "read-only", "--approval-mode", "auto", script(shell("touch made"))],
        workspace,
        home,
    )
    assert named(lines, "approval.requested")[0]["summary"].startswith("Run outside")
    assert not (workspace / "made").exists()


def test_without_landlock_auto_asks_says_so_once_and_code_mode_refuses(
    workspace: Path, home: Path
) -> None:
    home.mkdir()
    (home / "settings.toml").write_text("code_mode = true\n")
    program = {"tools": [{"name": "code", "arguments": {"program": "print('ran')"}}]}
    lines = run(
        ["--approval-mode", "auto", script(shell("touch made"), program)],
        workspace,
        home,
        MC_NO_LANDLOCK="1",
    )
    notices = [d for d in named(lines, "diagnostic") if d["code"] == "sandbox_unavailable"]
    assert len(notices) == 1 and "No OS sandbox here" in notices[0]["summary"]
    assert len(named(lines, "approval.requested")) == 1  # the command asked, as in `ask`
    assert not (workspace / "made").exists()
    records = (home / "sessions").glob("*.jsonl")
    text = "".join(path.read_text() for path in records)
    assert "sandbox_unavailable" in text and "ran" not in text.split("sandbox_unavailable")[-1]


@pytest.fixture
def armed(workspace: Path) -> Iterator[dict[str, str]]:
    """The escapes of tests/support/escapes.py armed in the workspace; what they marked
    (filled in by the test), any still running killed afterwards."""
    escapes.arm(workspace)
    found: dict[str, str] = {}
    yield found
    for marked in found.values():
        escapes.end(marked)


def test_nothing_a_command_starts_outlives_exec(
    workspace: Path, home: Path, armed: dict[str, str]
) -> None:
    """The model's command leaves processes every way out of its group; when its call ends
    (and exec with it), none runs."""
    if containment() is not None:
        pytest.skip(f"this kernel gives no PID namespace here: {containment()}")
    lines = run(["--approval-mode", "auto", script(shell(escapes.ATTACK))], workspace, home)
    armed.update(escapes.marks(workspace))
    assert escapes.survivors(armed) == []
    [output] = named(lines, "tool.output")
    assert output["ok"] and output["output"].startswith("escaped\n"), output
    assert "sandbox_unavailable" not in {d["code"] for d in named(lines, "diagnostic")}


def test_without_a_pid_namespace_exec_says_so_once(
    workspace: Path, home: Path, armed: dict[str, str]
) -> None:
    """MC_NO_PID_NAMESPACE=1, as where the kernel refuses one: said once, in the first turn's
    diagnostic and with each command's status; the command runs, confined, uncontained."""
    command = script(shell(escapes.ATTACK), shell("echo again"))
    lines = run(["--approval-mode", "auto", command], workspace, home, MC_NO_PID_NAMESPACE="1")
    armed.update(escapes.marks(workspace))
    notices = [d for d in named(lines, "diagnostic") if d["code"] == "sandbox_unavailable"]
    assert len(notices) == 1
    assert "cannot contain a command's processes" in notices[0]["summary"]
    said = "processes not contained (MC_NO_PID_NAMESPACE=1 turns PID namespaces off)"
    assert all(said in output["output"] for output in named(lines, "tool.output"))
    assert "setsid" in escapes.survivors(armed)  # the old gap: the fixture ends them


def test_a_bad_sandbox_mode_is_a_usage_error(workspace: Path, home: Path) -> None:
    done = exec_run(["--sandbox", "open", "hi"], workspace, home)
    assert done.returncode == 2
    assert b"--sandbox takes read-only, workspace-write or full-access" in done.stderr


ESCAPE = """
import gc, os, sys
sys.modules['__main__']._REFUSED_EVENTS = frozenset()  # the old hook's switch: nothing now
class Sly(str):
    pass
os.path.realpath(Sly('x'))
[o for o in gc.get_objects() if type(o).__name__ == 'cell']
home = os.environ['HOME']
tried = {}
def attempt(name, action):
    try:
        action()
        tried[name] = 'done'
    except OSError as e:
        tried[name] = type(e).__name__
attempt('ssh_key', lambda: open(home + '/.ssh/id_ed25519').read())
attempt('credentials', lambda: open(os.environ['MC_HOME'] + '/credentials.json').read())
attempt('parent_environ', lambda: open(f'/proc/{os.getppid()}/environ', 'rb').read())
attempt('system', lambda: os.system('id') == 0 or (_ for _ in ()).throw(OSError()))
attempt('authorized_keys', lambda: open(home + '/.ssh/authorized_keys', 'a').write('key'))
attempt('fork', os.fork)
attempt('setsid_fork', lambda: (os.setsid(), os.fork()))
result = tried
"""


def test_the_code_mode_escapes_fail_end_to_end(workspace: Path, home: Path, tmp_path: Path) -> None:
    user = tmp_path / "user"
    (user / ".ssh").mkdir(parents=True)
    (user / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-BYTES")
    home.mkdir()
    (home / "settings.toml").write_text("code_mode = true\n")
    (home / "credentials.json").write_text('{"openai": "sk-STORED-SECRET"}')
    program = {"tools": [{"name": "code", "arguments": {"program": ESCAPE}}]}
    done = exec_run(["--json", script(program)], workspace, home, HOME=str(user))

    assert done.returncode == 0, done.stderr
    stored = "".join(p.read_text() for p in (home / "sessions").glob("*.jsonl"))
    (result,) = [
        json.loads(json.loads(line)["result"].split("[result]\n")[1].split("\n[stdout]")[0])
        for line in stored.splitlines()
        if '"name": "code"' in line.replace('":"', '": "') and '"state":"completed"' in line
    ] or [{}]
    assert result == {
        "ssh_key": "PermissionError",
        "credentials": "PermissionError",
        "parent_environ": "PermissionError",
        "system": "OSError",
        "authorized_keys": "PermissionError",
        "fork": "PermissionError",
        "setsid_fork": "PermissionError",
    }
    for secret in (b"PRIVATE-KEY-BYTES", b"sk-STORED-SECRET"):
        assert secret not in done.stdout and secret.decode() not in stored
    assert not (user / ".ssh" / "authorized_keys").exists()
