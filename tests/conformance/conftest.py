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
def spawn(workspace: Path, home: Path, tmp_path: Path) -> Iterator[Spawn]:
    """Children of `serve --stdio`; one given MC_DEBUG_STDERR="1" keeps its stderr, and
    `ChildGone` then tells its end (why the child exited)."""
    children: list[LocalAgentClient] = []

    def start(**extra: str) -> LocalAgentClient:
        kept = tmp_path / f"stderr-{len(children)}.txt" if extra.get("MC_DEBUG_STDERR") else None
        child = LocalAgentClient.spawn(cwd=workspace, env=environment(home, **extra), stderr=kept)
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
