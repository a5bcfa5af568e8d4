"""The npm peers the tests drive (the MCP reference servers and acpx, the ACP command line):
pinned here, and installed together by one `npm install` into the repository's
`.cache/npm-peers`.

`make test` installs them before the suite starts (`python tests/support/npm.py`), retrying a
registry that fails. A test that finds them absent (pytest run by hand) installs them under a file
lock. One install for all, never one per package: a later `npm install` into the same folder
rearranges `node_modules` under a server another test worker is running. A stamp, written
once npm has finished, says what was installed; nothing is read from a half-done install."""

import fcntl
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PREFIX = REPO / ".cache" / "npm-peers"
STAMP = PREFIX / ".installed"
INSTALL_SECONDS = 300  # one attempt
ATTEMPTS = 3  # a registry that fails now and then does not fail the suite
PAUSE_SECONDS = 5  # before the next attempt

# Pinned: their tool names and answers are what the tests read.
PEERS = (
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
    "acpx@0.19.1",
)


def peer(*path: str) -> Path:
    """A file of the installed peers, under `node_modules`; installed first if need be. The test
    is skipped, saying why, when npm or node is absent."""
    if not installed():
        if missing := absent_tools():
            pytest.skip(f"{missing} is needed to install {', '.join(PEERS)}")
        install()
    return PREFIX.joinpath("node_modules", *path)


def installed() -> bool:
    return STAMP.exists() and STAMP.read_text() == "\n".join(PEERS)


def absent_tools() -> str | None:
    return next((tool for tool in ("npm", "node") if shutil.which(tool) is None), None)


def install() -> None:
    """Install every peer at once, under the lock; a worker that waited finds them installed."""
    PREFIX.mkdir(parents=True, exist_ok=True)
    with open(PREFIX / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed():
            return
        STAMP.unlink(missing_ok=True)
        command = ["npm", "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", *PEERS]
        for attempt in range(1, ATTEMPTS + 1):
            try:
                done = subprocess.run(command, capture_output=True, timeout=INSTALL_SECONDS)
            except subprocess.TimeoutExpired:
                said = [f"no answer within {INSTALL_SECONDS} s"]
            else:
                if done.returncode == 0:
                    STAMP.write_text("\n".join(PEERS))
                    return
                said = done.stderr.decode(errors="replace").strip().splitlines()[-5:]
            print(f"npm install failed (attempt {attempt} of {ATTEMPTS}):", *said, sep="\n  ")
            if attempt < ATTEMPTS:
                time.sleep(PAUSE_SECONDS)
        raise RuntimeError(f"npm install of the test peers failed {ATTEMPTS} times")


def main() -> int:
    if installed():
        return 0
    if missing := absent_tools():
        print(f"{missing} is absent: the tests that drive npm peers will be skipped")
        return 0
    print(f"installing the npm peers the tests drive into {PREFIX}")
    install()
    return 0


if __name__ == "__main__":
    sys.exit(main())
