"""Helpers for turn conformance tests: an attached child, scripted prompts, event capture."""

import subprocess
import threading
from collections.abc import Iterator
from typing import IO, Any

from magi_code.client import Event, LocalAgentClient

from .conftest import initialize


def attach(child: LocalAgentClient) -> str:
    initialize(child, "turn.start")
    session_id: str = child.request("session.create")["session_id"]
    return session_id


def start(child: LocalAgentClient, session_id: str, prompt: str) -> str:
    run_id: str = child.request("turn.start", {"session_id": session_id, "prompt": prompt})[
        "run_id"
    ]
    return run_id


def until(child: LocalAgentClient, name: str, timeout: float = 30) -> list[Event]:
    """Events up to and including the first one called `name`."""
    seen = []
    while True:
        event = child.next_event(timeout)
        seen.append(event)
        if event.name == name:
            return seen


def run(child: LocalAgentClient, session_id: str, prompt: str) -> tuple[str, list[Event]]:
    run_id = start(child, session_id, prompt)
    return run_id, until(child, "run.finished")


def reconciled(events: list[Event]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for event in events:
        if event.name == "message.reconcile":
            texts[event.data["message_id"]] = (
                texts.get(event.data["message_id"], "") + event.data["text"]
            )
    return texts


def pages(child: LocalAgentClient, session_id: str, revision: str) -> list[dict[str, Any]]:
    out, cursor = [], None
    while True:
        page = child.request(
            "history.page", {"session_id": session_id, "revision": revision, "cursor": cursor}
        )
        out.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            return out


class _Gate:
    """The child's stdout, read only while `open` is set (as a busy UI stops reading)."""

    def __init__(self, stream: IO[bytes], open_: threading.Event) -> None:
        self.stream, self.open = stream, open_

    def __iter__(self) -> Iterator[bytes]:
        while self.open.wait() and (line := self.stream.readline()):
            yield line

    def close(self) -> None:
        self.open.set()
        self.stream.close()


class PausableClient(LocalAgentClient):
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.reading = threading.Event()
        self.reading.set()
        assert process.stdout is not None
        process.stdout = _Gate(process.stdout, self.reading)  # type: ignore[assignment]
        super().__init__(process)


def delta_parts(events: list[Event]) -> dict[str, list[tuple[int, str]]]:
    """Per message, its deltas' (part, text) in arrival order."""
    parts: dict[str, list[tuple[int, str]]] = {}
    for event in events:
        if event.name == "message.delta":
            parts.setdefault(event.data["message_id"], []).append(
                (event.data["part"], event.data["text"])
            )
    return parts
