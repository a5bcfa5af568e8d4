"""Fixtures that start the real `magi-code serve --stdio` over real pipes."""

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from magi_code.client import LocalAgentClient, environment
from magi_code.limits import PROTOCOL, PROTOCOL_VERSION

Spawn = Callable[..., LocalAgentClient]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "mc-home"


@pytest.fixture
def spawn(workspace: Path, home: Path) -> Iterator[Spawn]:
    children: list[LocalAgentClient] = []

    def start(**extra: str) -> LocalAgentClient:
        child = LocalAgentClient.spawn(cwd=workspace, env=environment(home, **extra))
        children.append(child)
        return child

    yield start
    for child in children:
        child.__exit__(None, None, None)


def frame(request_id: Any, method: str, params: Any = None, **override: Any) -> bytes:
    body = {
        "protocol": PROTOCOL,
        "version": PROTOCOL_VERSION,
        "id": request_id,
        "method": method,
        "params": {} if params is None else params,
    }
    body.update(override)
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def initialize(child: LocalAgentClient, *caps: str) -> dict[str, Any]:
    return child.request("initialize", {"required_capabilities": list(caps or ["status"])})
