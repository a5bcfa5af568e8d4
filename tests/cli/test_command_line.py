"""The command line over the real console script: each command's own help, one-line errors
that name the bad argument and point to `--help`, `-V`, the PROMPT-or-command rule, `login`'s
list of providers, `exec --provider` and `--image`, and `acp` refusing what is not a pipe."""

import os
import subprocess
import time
from pathlib import Path

import pytest

from magi_code.arguments import UsageError
from magi_code.cli import APPROVAL_MODES, COMMANDS, launch_options
from magi_code.client import environment
from magi_code.exec import parse
from magi_code.limits import FACE_PROMPT_BYTES
from magi_code.mission_control.driver import Launch
from magi_code.tools.approval_modes import MODES
from providers.test_imports import serve_imports_to_initialize
from support.exec import MAGI_CODE


def magi(
    home: Path, *args: str, stdin: object = subprocess.DEVNULL, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MAGI_CODE, *args],
        stdin=stdin,
        capture_output=True,
        text=True,
        env=environment(home),
        cwd=cwd,
        timeout=60,
    )


# ---- help ------------------------------------------------------------------------------------


HELP = [
    ([], "usage: magi-code [OPTIONS] [PROMPT]"),
    (["exec"], "usage: magi-code exec [OPTIONS] [PROMPT | -]"),
    (["resume"], "usage: magi-code resume [ID] [OPTIONS]"),
    (["login"], "usage: magi-code login [NAME] [OPTIONS]"),
    (["logout"], "usage: magi-code logout"),
    (["models"], "usage: magi-code models"),
    (["context"], "usage: magi-code context"),
    (["trust"], "usage: magi-code trust"),
    (["untrust"], "usage: magi-code untrust"),
    (["sessions"], "usage: magi-code sessions"),
    (["sessions", "list"], "usage: magi-code sessions list"),
    (["sessions", "prune"], "usage: magi-code sessions prune"),
    (["mcp"], "usage: magi-code mcp"),
    (["mcp", "add"], "usage: magi-code mcp add NAME"),
    (["sandbox"], "usage: magi-code sandbox"),
    (["acp"], "usage: magi-code acp"),
    (["a2a"], "usage: magi-code a2a serve [OPTIONS] [WORKSPACE]"),
    (["a2a", "serve"], "usage: magi-code a2a serve [OPTIONS] [WORKSPACE]"),
    (["serve"], "usage: magi-code serve --stdio"),
    (["help"], "usage: magi-code help"),
]


def test_every_command_is_in_the_help_table() -> None:
    assert {tuple(argv[:1]) for argv, _ in HELP} == {(), *((name,) for name in COMMANDS)}


@pytest.mark.parametrize(("argv", "usage"), HELP)
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_each_command_prints_its_own_help(
    tmp_path: Path, argv: list[str], usage: str, flag: str
) -> None:
    done = magi(tmp_path / "home", *argv, flag)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(usage + ("\n" if argv in ([], ["exec"]) else ""))
    assert not (tmp_path / "home").exists()


def test_exec_help_is_exec_s_own_not_the_top_level_usage(tmp_path: Path) -> None:
    """The issue: every exec error points to `exec --help`, which printed the top usage."""
    done = magi(tmp_path / "home", "exec", "--help")
    assert "--approval-mode MODE" in done.stdout and "--image PATH" in done.stdout
    assert "--provider NAME" in done.stdout and "exit codes:" in done.stdout
    assert "Mission Control" not in done.stdout


def test_help_command_is_the_command_s_help(tmp_path: Path) -> None:
    for command in ("exec", "serve", "mcp"):
        assert magi(tmp_path, "help", command).stdout == magi(tmp_path, command, "-h").stdout
    assert magi(tmp_path, "help").stdout == magi(tmp_path, "--help").stdout


@pytest.mark.parametrize("flag", ["-V", "-v", "--version"])
def test_version(tmp_path: Path, flag: str) -> None:
    done = magi(tmp_path / "home", flag)
    assert (done.returncode, done.stdout.startswith("magi-code 0."), done.stderr) == (0, True, "")


# ---- errors: one line, the argument named, a pointer to --help ----------------------------------


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--frobnicate"], "magi-code: unknown option --frobnicate (see `magi-code --help`)"),
        (["--modle", "m"], "magi-code: unknown option --modle: did you mean --model?"),
        (["--mod", "m"], "magi-code: unknown option --mod: did you mean --model?"),  # no abbrev
        (["--model", "a", "-m", "b"], "magi-code: --model is given twice"),
        (["--approval-mode", "wild"], "magi-code: --approval-mode takes ask, edits, full or auto"),
        (["--continue", "--continue"], "magi-code: --continue is given twice"),
        (["--prompt"], "magi-code: --prompt needs a value"),
        (["--model="], "magi-code: --model needs a value"),
        (["--version=1"], "magi-code: --version takes no value"),
        (
            ["fix", "the", "bug"],
            'magi-code: give the PROMPT as one argument, quoted: magi-code "fix',
        ),
        (["--x\x1b[31m"], "magi-code: unknown option (see `magi-code --help`)"),  # never echoed
        (["exec", "--jsn", "hi"], "magi-code exec: unknown option --jsn: did you mean --json?"),
        (["exec", "one", "two"], "magi-code exec: give exactly one PROMPT, quoted (see"),
        (["exec", "--session", "a", "--continue", "hi"], "magi-code exec: --continue and"),
        (["exec", "--image"], "magi-code exec: --image needs a value"),
        (["resume", "a", "b"], "magi-code resume: give one session ID"),
        (["login", "openai", "sk-secret"], "magi-code login: give one provider NAME"),
        (["login", "--callback-port", "x"], "magi-code login: --callback-port takes a whole"),
        (["logout"], "magi-code logout: missing NAME (see `magi-code logout --help`)"),
        (["sessions"], "magi-code sessions: missing COMMAND (see `magi-code sessions --help`)"),
        (["sessions", "lst"], "magi-code sessions: unknown command `lst`: did you mean `list`?"),
        (["sessions", "prune", "--older-than", "1.5"], "magi-code sessions prune: --older-than"),
        (["mcp", "lsit"], "magi-code mcp: unknown command `lsit`: did you mean `list`?"),
        (["mcp", "add"], "magi-code mcp add: missing NAME (see `magi-code mcp add --help`)"),
        (["sandbox", "--net", "--", "true"], "magi-code sandbox: unknown option --net: did you"),
        (["help", "exce"], "magi-code: unknown command: did you mean `exec`?"),
    ],
)
def test_a_bad_command_line_is_one_line_naming_it(
    tmp_path: Path, argv: list[str], line: str
) -> None:
    done = magi(tmp_path / "home", *argv)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(line) and done.stderr.count("\n") == 1, done.stderr
    assert "usage:" not in done.stderr and "Traceback" not in done.stderr
    assert "sk-secret" not in done.stderr and "\x1b" not in done.stderr
    assert done.stderr.rstrip().endswith("--help`)") or "did you mean" in done.stderr
    assert not (tmp_path / "home").exists()


# ---- a PROMPT or a command ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "command"),
    [("exce", "exec"), ("lgoin", "login"), ("sesions", "sessions"), ("modles", "models")],
)
def test_a_misspelled_command_is_named_not_sent(tmp_path: Path, word: str, command: str) -> None:
    done = magi(tmp_path / "home", word)
    assert done.returncode == 2
    assert done.stderr == (
        f"magi-code: unknown command `{word}`: did you mean `{command}`? "
        f"(`magi-code -- {word}` sends it as a prompt)\n"
    )


def test_a_command_after_options_is_not_taken_for_a_prompt(tmp_path: Path) -> None:
    done = magi(tmp_path / "home", "--model", "m", "context")
    assert done.returncode == 2 and "`context` is a command: put it first" in done.stderr


@pytest.mark.parametrize(
    "argv", [["fix the bug"], ["hello"], ["--", "exce"], ["--model", "m", "explain this repo"]]
)
def test_a_prompt_opens_mission_control_which_needs_a_terminal(
    tmp_path: Path, argv: list[str]
) -> None:
    """Not `unknown argument` any more: the prompt is for Mission Control, and without a
    terminal it says how to run one prompt in a script."""
    done = magi(tmp_path / "home", *argv)
    assert done.returncode == 2
    assert done.stderr.startswith("magi-code: Mission Control and --prompt need a terminal")
    assert "magi-code exec PROMPT" in done.stderr


def test_the_launch_offers_the_approval_modes_of_the_tools() -> None:
    """cli.py names them without importing tools/approval_modes.py (anyio, pathlib)."""
    assert APPROVAL_MODES == MODES


def test_the_prompt_becomes_the_first_message_of_the_launch() -> None:
    assert launch_options(["fix the bug"]) == Launch(first_prompt="fix the bug")
    assert launch_options(["--continue", "-m", "m", "go on"]) == Launch(
        first_prompt="go on", continue_latest=True, model="m"
    )
    assert launch_options(["--prompt", "once"]) == Launch(prompt="once")
    assert launch_options(["resume", "abc"][1:], resume=True) == Launch(resume="abc")
    assert launch_options([], resume=True) == Launch(resume="")
    assert launch_options(["-V"]) is None


def test_a_prompt_is_bounded_at_face_prompt_bytes() -> None:
    at_bound = "x" * (FACE_PROMPT_BYTES - 2) + "é"  # é is two bytes
    assert launch_options([at_bound]) == Launch(first_prompt=at_bound)
    with pytest.raises(UsageError, match=f"the PROMPT is over {FACE_PROMPT_BYTES:,} bytes"):
        launch_options([at_bound + "x"])
    with pytest.raises(UsageError, match="--prompt is over"):
        launch_options(["--prompt", at_bound + "x"])
    with pytest.raises(UsageError, match="give one of them"):
        launch_options(["--prompt", "a", "b c"])
    with pytest.raises(UsageError, match="the PROMPT is empty"):
        launch_options(["  "])


# ---- login lists the providers ---------------------------------------------------------------


def test_login_without_a_name_lists_the_providers(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.toml").write_text(
        '[providers.lab]\nwire_api = "openai-chat"\nbase_url = "https://lab.example/v1"\n'
    )
    done = magi(home, "login")
    assert (done.returncode, done.stderr) == (0, "")
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith("  ")}
    assert list(rows) == ["openai", "anthropic", "codex", "ollama", "lab"]
    assert "$OPENAI_API_KEY" in rows["openai"] and "browser" in rows["codex"]
    assert "no key needed" in rows["ollama"] and "(your settings)" in rows["lab"]
    assert "magi-code login NAME" in done.stdout
    assert sorted(p.name for p in home.iterdir()) == ["settings.toml"]  # nothing written


# ---- exec: --provider and --image --------------------------------------------------------------


def test_exec_image_is_repeatable_and_kept_in_order() -> None:
    options = parse(["--image", "a.png", "--image=b.jpg", "-i", "c.gif", "-m", "m", "look"])
    assert options is not None
    assert options.images == ["a.png", "b.jpg", "c.gif"]
    assert (options.model, options.prompt) == ("m", "look")
    options = parse(["hi"])
    assert options is not None and options.images == [] and options.provider is None


def test_exec_provider_chooses_the_provider_and_its_first_model(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.toml").write_text(
        '[providers.other]\nwire_api = "fixture"\nmodels = ["second-model", "third-model"]\n'
    )
    done = magi(home, "exec", "--json", "--provider", "other", "hi", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    first = done.stdout.split("\n")[0]
    assert '"provider": "other"' in first and '"model": "second-model"' in first
    done = magi(home, "exec", "--json", "--provider=other", "-m", "third-model", "hi", cwd=tmp_path)
    assert done.returncode == 0 and '"model": "third-model"' in done.stdout.split("\n")[0]
    done = magi(home, "exec", "--provider", "nobody", "hi", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "--provider names no configured provider" in done.stderr
    done = magi(home, "exec", "--provider", "other", "-m", "fixture-model", "hi", cwd=tmp_path)
    assert done.returncode == 2 and "offers no" in done.stderr


# ---- acp is for pipes ------------------------------------------------------------------------


def test_acp_refuses_what_is_not_a_pipe_at_once(tmp_path: Path) -> None:
    """/dev/null and a file on stdin made the ACP SDK's reader fail with a traceback and the
    process spin; now each is refused before anything starts, as `serve` refuses."""
    (tmp_path / "in").write_bytes(b"")
    with (tmp_path / "in").open("rb") as regular:
        for stdin in (subprocess.DEVNULL, regular):
            started = time.monotonic()
            done = magi(tmp_path / "home", "acp", stdin=stdin)
            assert time.monotonic() - started < 10
            assert done.returncode == 2 and done.stdout == ""
            assert done.stderr.startswith("magi-code: acp speaks the Agent Client Protocol")
    assert not (tmp_path / "home").exists()


# ---- the serve path stays lean ----------------------------------------------------------------


def test_serve_stdio_never_imports_argparse(tmp_path: Path) -> None:
    answer, loaded = serve_imports_to_initialize(tmp_path, "fixture")
    assert "result" in answer
    assert not {"argparse", "magi_code.arguments", "difflib"} & loaded


def test_every_other_command_parses_with_the_one_parser() -> None:
    """DESIGN rule 12: argparse through magi_code.arguments, one way to say a bad argument."""
    src = Path(__file__).resolve().parents[2] / "src" / "magi_code"
    files = list(src.rglob("*.py"))
    assert len(files) > 100
    direct = [path.name for path in files if "ArgumentParser" in path.read_text()]
    assert direct == ["arguments.py"]


# ---- a reader that leaves early ------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["login"], ["--help"], ["sessions", "list"], ["exec", "-h"]])
def test_a_closed_stdout_ends_quietly(tmp_path: Path, argv: list[str]) -> None:
    """`magi-code login | head -1`: the reader is gone before the output is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [MAGI_CODE, *argv],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=environment(tmp_path / "home"),
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert b"Traceback" not in done.stderr and b"Exception ignored" not in done.stderr
    assert done.stderr == b"" and done.returncode in (0, 141)
