"""Fixtures for MCP tests: settings tables that run the real echo server; real HTTP servers;
the reference servers `@modelcontextprotocol/server-everything` and `server-filesystem`,
installed from npm once."""

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mcp_harness import ECHO_SERVER, Definition, HttpServer

from support import npm

# Pinned: their tool names and answers are what the tests read.
EVERYTHING_VERSION = "2026.8.31"
FILESYSTEM_VERSION = "2026.8.31"
NPM_PREFIX = npm.npm_prefix("npm-mcp")


def npm_server(name: str, version: str) -> Path:
    """The entry point of `@modelcontextprotocol/<name>` at `version`, installed by npm on
    first use; the test is skipped, saying why, when npm or node is absent."""
    folder = NPM_PREFIX / "node_modules" / "@modelcontextprotocol" / name
    entry, package = folder / "dist" / "index.js", folder / "package.json"

    def installed() -> bool:
        return entry.exists() and f'"version": "{version}"' in package.read_text()

    npm.install(NPM_PREFIX, (f"@modelcontextprotocol/{name}@{version}",), installed)
    return entry


@pytest.fixture(scope="session")
def everything() -> Path:
    """The server-everything entry point (`node <it> stdio`)."""
    return npm_server("server-everything", EVERYTHING_VERSION)


@pytest.fixture(scope="session")
def filesystem() -> Path:
    """The server-filesystem entry point (`node <it> [FOLDER...]`)."""
    return npm_server("server-filesystem", FILESYSTEM_VERSION)


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
