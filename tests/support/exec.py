"""The real `magi-code` console script run to its end: `MAGI_CODE` (the binary beside this
Python), `run_magi_code` for any of its commands and `exec_run` for `magi-code exec`, each in a
cwd with its own MC_HOME (`environment(home, **env)`), stdin closed unless bytes are given,
output captured, and a timeout so that a hang fails the test instead of the suite; and
`json_lines`, which reads `exec --json` output split on LF only (never `str.splitlines`)."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from magi_code.client import environment

MAGI_CODE = str(Path(sys.executable).with_name("magi-code"))


def run_magi_code(
    args: list[str],
    cwd: Path | None,
    home: Path,
    *,
    stdin: bytes | str | None = None,
    text: bool = False,
    timeout: float = 60,
    **env: str,
) -> subprocess.CompletedProcess[Any]:
    """`magi-code ARGS` in `cwd` under MC_HOME `home` (plus `env`), fed `stdin` if given (else
    /dev/null); stdout and stderr captured, as text when `text`."""
    return subprocess.run(
        [MAGI_CODE, *args],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=text,
        cwd=cwd,
        env=environment(home, **env),
        timeout=timeout,
    )


def exec_run(
    args: list[str],
    cwd: Path,
    home: Path,
    *,
    stdin: bytes | str | None = None,
    text: bool = False,
    timeout: float = 60,
    **env: str,
) -> subprocess.CompletedProcess[Any]:
    """`magi-code exec ARGS`, as `run_magi_code` runs a command."""
    return run_magi_code(["exec", *args], cwd, home, stdin=stdin, text=text, timeout=timeout, **env)


def json_lines(stdout: bytes) -> list[dict[str, Any]]:
    """JSON Lines split on LF only (str.splitlines would also split on U+2028 and friends);
    every line ends with LF, and no output has no lines."""
    assert not stdout or stdout.endswith(b"\n"), stdout[-500:]
    return [json.loads(line) for line in stdout.split(b"\n")[:-1]]


def named(lines: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    """The data of each `event` line, in order."""
    return [line["data"] for line in lines if line["event"] == event]
