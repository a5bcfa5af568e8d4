"""A settings value of the wrong type over the real `magi-code exec` (issue 35, item 5): in an
untrusted project's file it is dropped with the one-line warning `(not valid)` and the run goes
on; in a trusted project's file or the global file startup fails with `configuration_invalid`,
the key at fault named, exit 2, and never a traceback or an exception's text. The environment
and the flags that feed settings are held to the same. tests/config/test_setting_types.py walks
every key in process."""

import re
import subprocess
from pathlib import Path

import pytest

from support.exec import exec_run

ANSWER = b"Hello from the fixture model.\n"
# (the file's text, the key the warning and the error name)
WRONG_TYPES = {
    "provider_table": ("[provider]\nx = 1\n", "provider"),
    "provider_list": ("provider = [1]\n", "provider"),
    "models_table": ("[providers.fixture]\nmodels = { x = 1 }\n", "providers.fixture.models"),
    "talk_number": ("[melchior]\ntalk = 1\n", "melchior.talk"),
}
PYTHON_TEXT = re.compile(rb"Traceback|\w+(Error|Exception)\b|unhashable|object has no attribute")


def run(workspace: Path, home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return exec_run([*args, "hi"], workspace, home, **env)


pytestmark = pytest.mark.usefixtures("settings_folders")  # home and workspace/.magi-code made


def settings_in(place: str, home: Path, workspace: Path, text: str) -> Path:
    """Write `text` to the global file, or to a trusted or untrusted project's; its path."""
    project = workspace / ".magi-code" / "settings.toml"
    listed = f'[permissions]\ntrusted_projects = ["{workspace}"]\n'
    (home / "settings.toml").write_text(
        text if place == "global" else listed if place == "trusted" else ""
    )
    if place != "global":
        project.write_text(text)
    return home / "settings.toml" if place == "global" else project


def assert_no_python_text(stderr: bytes) -> None:
    assert PYTHON_TEXT.search(stderr) is None, stderr.decode(errors="replace")


@pytest.mark.parametrize(("text", "key"), WRONG_TYPES.values(), ids=list(WRONG_TYPES))
def test_an_untrusted_wrong_type_is_dropped_and_the_run_goes_on(
    home: Path, workspace: Path, text: str, key: str
) -> None:
    file = settings_in("untrusted", home, workspace, text)
    done = run(workspace, home)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER
    said = done.stderr.decode().split("\n")[:-1]
    # With no provider chosen anywhere, exec also says once that the built-in test model answers.
    told = [line for line in said if "built-in test model" not in line]
    assert told == [f"magi-code exec: ignored {key} from {file} (not valid)"]
    assert len(said) - len(told) <= 1


@pytest.mark.parametrize("place", ["trusted", "global"])
@pytest.mark.parametrize(("text", "key"), WRONG_TYPES.values(), ids=list(WRONG_TYPES))
def test_a_trusted_or_global_wrong_type_is_configuration_invalid(
    home: Path, workspace: Path, place: str, text: str, key: str
) -> None:
    settings_in(place, home, workspace, text)
    done = run(workspace, home)
    if place == "trusted" and key == "melchior.talk":  # a project only narrows it, trusted or not
        assert done.returncode == 0 and b"ignored melchior.talk" in done.stderr
        return
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    said = done.stderr.decode().split("\n")[:-1]
    assert len(said) == 1
    assert said[0].startswith("magi-code exec: startup failed: configuration_invalid: ")
    assert f"; {key} must be " in said[0]
    assert_no_python_text(done.stderr)


@pytest.mark.parametrize(
    "text",
    [
        "[shell]\nenv_keep = 1\n",
        '[subagents]\nmax_depth = "2"\n',
        "[mcp]\napproved = { d = 1 }\n",
        "[mcp.servers.x]\ncommand = 1\nenabled = false\n",
        "[sessions]\nretention_days = 1.5\n",
        "[providers.openai]\nmodels = [1]\n",
        "thinking = 2020-01-02\n",
    ],
)
def test_a_global_wrong_type_startup_used_to_pass_is_configuration_invalid(
    home: Path, workspace: Path, text: str
) -> None:
    settings_in("global", home, workspace, text)
    done = run(workspace, home)
    assert done.returncode == 2, done.stderr
    assert b"startup failed: configuration_invalid: " in done.stderr
    assert_no_python_text(done.stderr)


@pytest.mark.parametrize(
    ("args", "env"),
    [
        ((), {"MAGI_CODE_DELEGATION": "[1]"}),
        ((), {"MAGI_CODE_DELEGATION": "null"}),
        ((), {"MAGI_CODE_DELEGATION": "[" * 100_000}),
        ((), {"MAGI_SANDBOX_MODE": "{}"}),
        (("--agent", "a\x1b[2J"), {}),
        (("--agent", "x" * 5000), {}),
        (("--model", "{}"), {}),
        (("--sandbox", "[1]"), {}),
    ],
    ids=[
        "delegation_list",
        "delegation_null",
        "delegation_deep",
        "sandbox_env",
        "agent_escape",
        "agent_long",
        "model",
        "sandbox_flag",
    ],
)
def test_the_environment_and_flags_are_refused_without_python_text(
    home: Path, workspace: Path, args: tuple[str, ...], env: dict[str, str]
) -> None:
    done = run(workspace, home, *args, **env)
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    assert len(done.stderr.split(b"\n")) <= 3  # one line (a usage error adds its pointer)
    assert b"\x1b" not in done.stderr
    assert_no_python_text(done.stderr)
