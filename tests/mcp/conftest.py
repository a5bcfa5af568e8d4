"""Fixtures for MCP tests: settings tables that run the real echo server; real HTTP servers;
the reference server `@modelcontextprotocol/server-everything`, installed from npm once."""

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mcp_harness import ECHO_SERVER, Definition, HttpServer

REPO = Path(__file__).resolve().parents[2]
EVERYTHING_VERSION = "2026.8.31"  # pinned: its tool names and answers are what the tests read
NPM_PREFIX = REPO / ".cache" / "npm-mcp"
EVERYTHING = NPM_PREFIX / "node_modules" / "@modelcontextprotocol" / "server-everything"


@pytest.fixture(scope="session")
def everything() -> Path:
    """The server-everything entry point (`node <it> stdio`), installed by npm on first use;
    the test is skipped, saying why, when npm or node is absent."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("npm and node are needed to install @modelcontextprotocol/server-everything")
    entry = EVERYTHING / "dist" / "index.js"
    installed = EVERYTHING / "package.json"
    if not entry.exists() or f'"version": "{EVERYTHING_VERSION}"' not in installed.read_text():
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(NPM_PREFIX),
                "--no-audit",
                "--no-fund",
                f"@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}",
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )
    return entry


@pytest.fixture
def server_def(tmp_path: Path) -> Callable[..., Definition]:
    """A settings table for the echo server in `mode`; its pid lands in tmp_path/<pidname>."""

    def make(mode: str = "ok", pidname: str = "server", delay: float = 0.0) -> Definition:
        pidfile = str(tmp_path / f"{pidname}.pid")
        return {
            "command": sys.executable,
            "args": [ECHO_SERVER, mode, pidfile, str(delay)],
            "enabled": True,
        }

    return make


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpServer]:
    server = HttpServer(tmp_path / "http")
    yield server
    server.kill()


@pytest.fixture
def oauth_server(tmp_path: Path) -> Iterator[HttpServer]:
    server = HttpServer(tmp_path / "oauth", oauth=True)
    yield server
    server.kill()
