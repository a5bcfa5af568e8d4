"""npm peers the tests drive (the MCP reference servers, acpx, the ACP TypeScript SDK),
installed once into the repository's `.cache`. A file lock makes the install once per machine
even when several test workers ask for it at the same moment."""

import fcntl
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INSTALL_SECONDS = 300


def npm_prefix(name: str) -> Path:
    return REPO / ".cache" / name


def install(prefix: Path, packages: tuple[str, ...], installed: Callable[[], bool]) -> None:
    """Install `packages` under `prefix` unless `installed()` already says so; skipped, saying
    why, when npm or node is absent."""
    if installed():
        return
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip(f"npm and node are needed to install {', '.join(packages)}")
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed():  # another worker installed it while this one waited
            return
        subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", *packages],
            check=True,
            capture_output=True,
            timeout=INSTALL_SECONDS,
        )
