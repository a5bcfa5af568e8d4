"""Fixtures for MCP tests: settings tables that run the real echo server; real HTTP servers."""

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mcp_harness import ECHO_SERVER, Definition, HttpServer


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
