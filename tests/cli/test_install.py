"""Installed from a built wheel into a fresh virtual environment (what `pipx install .` and
`uv tool install .` do), `magi-code` and `melchior` are on that environment's PATH and run:
`--version`, one `exec` turn on the fixture provider, `melchior tool`. The dependencies come
from this project's environment (a path in a `.pth` file), so the install itself is offline;
building the wheel needs hatchling, which `build` fetches: without it the test skips, saying
so."""

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def built_wheel(out: Path) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        pytest.skip("no wheel could be built here (hatchling unreachable?): " + done.stderr[-300:])
    (wheel,) = out.glob("magi_code-*.whl")
    return wheel


def test_the_wheel_puts_both_commands_on_path_and_they_run(tmp_path: Path) -> None:
    wheel = built_wheel(tmp_path / "dist")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    subprocess.run(
        [*pip, "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=300,
    )
    ours = Path(sysconfig.get_paths()["purelib"])  # where the dependencies are installed
    (theirs,) = (venv / "lib").glob("python3*/site-packages")
    (theirs / "dependencies.pth").write_text(f"{ours}\n")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "MC_HOME": str(home),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, cwd=work, env=env, capture_output=True, text=True, timeout=120, check=False
        )

    located = run("sh", "-c", "command -v magi-code; command -v melchior").stdout.split()
    assert located == [str(venv / "bin" / "magi-code"), str(venv / "bin" / "melchior")]
    assert run("magi-code", "--version").stdout == "magi-code 0.1.0\n"
    done = run("magi-code", "exec", "hello")
    assert (done.returncode, done.stdout) == (0, "Hello from the fixture model.\n"), done.stderr
    status = json.loads(run("melchior", "tool", "--verb=status").stdout)
    assert status["code"] == "no_identity"
    where = run(str(venv / "bin" / "python"), "-c", "import magi_code; print(magi_code.__file__)")
    assert where.stdout.startswith(str(theirs)), where  # the wheel's copy, not this checkout
