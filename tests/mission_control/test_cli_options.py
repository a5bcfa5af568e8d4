"""Mission Control's command line: help on every command, --version, the launch options, and
what `--continue` and `resume ID` attach."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from magi_code.arguments import UsageError
from magi_code.cli import launch_options
from magi_code.client import environment
from magi_code.mission_control.console import prepare
from magi_code.mission_control.driver import Launch, LaunchError
from mission_control.helpers import make_driver
from mission_control.terminal import run_in_pty


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "magi_code.cli", *args],
        capture_output=True,
        text=True,
        env=environment(home),
        stdin=subprocess.DEVNULL,
        timeout=30,
    )


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["--help"], "usage: magi-code [OPTIONS] [PROMPT]"),
        (["-h"], "usage: magi-code [OPTIONS] [PROMPT]"),
        (["serve", "--help"], "usage: magi-code serve --stdio"),
        (["login", "--help"], "usage: magi-code login"),
        (["logout", "-h"], "usage: magi-code logout"),
        (["models", "--help"], "usage: magi-code models"),
        (["sessions", "--help"], "usage: magi-code sessions"),
        (["sessions", "list", "--help"], "usage: magi-code sessions list"),
        (["sessions", "prune", "-h"], "usage: magi-code sessions prune"),
        (["resume", "--help"], "usage: magi-code resume [ID] [OPTIONS]"),
        (["--continue", "-h"], "usage: magi-code [OPTIONS] [PROMPT]"),
    ],
)
def test_help_on_every_command_exits_0(tmp_path: Path, argv: list[str], usage: str) -> None:
    done = cli(tmp_path / "home", *argv)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(usage)
    assert not (tmp_path / "home").exists()


def test_version(tmp_path: Path) -> None:
    done = cli(tmp_path / "home", "--version")
    assert done.returncode == 0 and done.stdout.startswith("magi-code ")


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--stdio", "--help"],  # serve takes no other flag: an invalid launch
        ["--prompt", "--help"],  # --prompt's text may not look like an option
        ["--approval-mode", "wild"],
        ["--model"],
        ["resume", "x", "--continue"],
        ["--continue", "--continue"],
    ],
)
def test_bad_launches_exit_2(tmp_path: Path, argv: list[str]) -> None:
    done = cli(tmp_path / "home", *argv)
    assert done.returncode == 2 and done.stderr.startswith("magi-code")


def test_options_make_a_launch() -> None:
    assert launch_options([]) == Launch()
    assert launch_options(["--prompt", "hi", "--model=m", "--provider", "p"]) == Launch(
        prompt="hi", model="m", provider="p"
    )
    assert launch_options([], resume=True) == Launch(resume="")
    assert launch_options(["abc", "--approval-mode", "edits"], resume=True) == Launch(
        resume="abc", approval_mode="edits"
    )
    assert launch_options(["--continue"]) == Launch(continue_latest=True)
    assert launch_options(["--agent=a", "--prompt", "use --agent b"]) == Launch(
        agent="a", prompt="use --agent b"
    )  # the prompt's text is never an option
    with pytest.raises(UsageError, match="--prompt needs a value"):
        launch_options(["--prompt"])


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--frobnicate"], "magi-code: unknown option --frobnicate (see `magi-code --help`)"),
        (["--x\x1b[31m"], "magi-code: unknown option (see"),  # odd input is never echoed
        (["--model"], "magi-code: --model needs a value"),
        (["--model", "a", "--model", "b"], "magi-code: --model is given twice"),
        (["--approval-mode", "maybe"], "magi-code: --approval-mode takes ask, edits, full or auto"),
        (["resume", "--continue"], "magi-code resume: unknown option --continue"),
        (["--prompt", "hi"], "magi-code: Mission Control and --prompt need a terminal: for"),
    ],
)
def test_a_bad_launch_says_what_is_wrong(tmp_path: Path, argv: list[str], says: str) -> None:
    done = cli(tmp_path / "home", *argv)
    assert done.returncode == 2 and done.stderr.startswith(says)


def test_continue_attaches_the_latest_session_of_this_workspace(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = []
    for _ in range(2):
        driver = make_driver(tmp_path, workspace)
        driver.new_session()
        assert driver.attachment is not None
        driver.attachment.append(
            {"type": "user", "run_id": "r", "message_id": "m", "text": "x"}, fsync=False
        )
        ids.append(driver.attachment.session_id)
        driver.close()
        when = time.time_ns() - (3 - len(ids)) * 10**11  # the second is the newer
        os.utime(driver.store.path_of(ids[-1]), ns=(when, when))
    monkeypatch.chdir(workspace)
    env = {"MC_HOME": str(tmp_path / "home")}
    driver = prepare(Launch(continue_latest=True), env)
    try:
        assert driver.attachment is not None and driver.attachment.session_id == ids[1]
    finally:
        driver.close()
    driver = prepare(Launch(resume=ids[0]), env)
    try:
        assert driver.attachment is not None and driver.attachment.session_id == ids[0]
    finally:
        driver.close()
    with pytest.raises(LaunchError) as caught:
        prepare(Launch(resume="0" * 32), env)
    assert "session_missing" in caught.value.explain()
    assert "magi-code sessions list" in caught.value.explain()


def test_the_command_lines_model_wins_over_a_resumed_sessions_choice(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = (
        '[providers.fixture]\nwire_api = "fixture"\nmodels = ["fixture-model", "other-model"]\n'
    )
    driver = make_driver(tmp_path, workspace, settings)
    driver.new_session()
    driver.select(None, "other-model")
    assert driver.attachment is not None
    driver.attachment.append(
        {"type": "user", "run_id": "r", "message_id": "m", "text": "x"}, fsync=False
    )
    session_id = driver.attachment.session_id
    driver.close()
    monkeypatch.chdir(workspace)
    env = {"MC_HOME": str(tmp_path / "home")}
    for launch, model in (
        (Launch(resume=session_id), "other-model"),
        (Launch(resume=session_id, model="fixture-model"), "fixture-model"),
    ):
        driver = prepare(launch, env)
        try:
            assert driver.model == model
        finally:
            driver.close()


def test_an_unknown_model_is_a_startup_error_with_a_hint(tmp_path: Path) -> None:
    code, out = run_in_pty(["--model", "no-such-model"], tmp_path, tmp_path / "home", {})
    assert code == 1
    assert b"model_unknown" in out and b"magi-code models" in out
    assert b"Traceback" not in out
