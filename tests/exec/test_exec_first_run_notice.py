"""`exec` with no provider configured says once, on stderr, that the built-in test model
answers and how to choose a real one (issue 28, item 2); nothing when a provider is chosen."""

import subprocess
from pathlib import Path

import pytest

from support.exec import exec_run

NOTICE = "no provider is configured: using the built-in test model `fixture`"


def exec_hi(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return exec_run([*args, "hi"], tmp_path, tmp_path / "home", text=True)


def test_the_fixture_by_default_is_said_once_with_what_to_do(tmp_path: Path) -> None:
    done = exec_hi(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the fixture model.\n"  # stdout carries the answer only
    assert done.stderr.count(NOTICE) == 1
    assert "`magi-code login NAME`" in done.stderr and "`--provider NAME`" in done.stderr


@pytest.mark.parametrize("where", ["global", "project", "command line"])
def test_nothing_is_said_once_a_provider_is_chosen(tmp_path: Path, where: str) -> None:
    chosen = 'provider = "fixture"\n'
    if where == "global":
        (tmp_path / "home").mkdir()
        (tmp_path / "home" / "settings.toml").write_text(chosen)
    elif where == "project":
        (tmp_path / ".magi-code").mkdir()
        (tmp_path / ".magi-code" / "settings.toml").write_text(chosen)
    done = exec_hi(tmp_path, *(["--provider", "fixture"] if where == "command line" else []))
    assert done.returncode == 0, done.stderr
    assert NOTICE not in done.stderr
