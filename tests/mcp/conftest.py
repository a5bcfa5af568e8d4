"""Fixtures for MCP tests: settings tables that run the real echo server; real HTTP servers;
the reference servers `@modelcontextprotocol/server-everything` and `server-filesystem`,
installed from npm (support/npm.py)."""

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mcp_harness import ECHO_SERVER, Definition, HttpServer

from support import npm


@pytest.fixture(scope="session")
def everything() -> Path:
    """The server-everything entry point (`node <it> stdio`)."""
    return npm.peer("@modelcontextprotocol", "server-everything", "dist", "index.js")


@pytest.fixture(scope="session")
def filesystem() -> Path:
    """The server-filesystem entry point (`node <it> [FOLDER...]`)."""
    return npm.peer("@modelcontextprotocol", "server-filesystem", "dist", "index.js")


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
