"""Turns over the real `magi-code serve --stdio` through the typed client: `finish` reads a
run's events up to its `run.finished`, `turn` starts one in a session and reads it, `one_turn`
runs a whole fresh child (initialize, session.create, one turn)."""

from pathlib import Path
from typing import Any

from magi_code.client import Event, LocalAgentClient, environment


def finish(child: LocalAgentClient, timeout: float = 30) -> list[Event]:
    """Every event up to and including the next `run.finished`."""
    events: list[Event] = []
    while not events or events[-1].name != "run.finished":
        events.append(child.next_event(timeout))
    return events


def turn(child: LocalAgentClient, session_id: str, prompt: str) -> list[Event]:
    """`turn.start` with `prompt` in `session_id`, and its events to `run.finished`."""
    child.request("turn.start", {"session_id": session_id, "prompt": prompt})
    return finish(child)


def one_turn(
    cwd: Path, home: Path, prompt: str = "hi", **env: str
) -> tuple[list[Event], list[dict[str, Any]]]:
    """One turn in a fresh child in `cwd` under MC_HOME `home`: its events to `run.finished`,
    and every frame the child wrote."""
    with LocalAgentClient.spawn(cwd=cwd, env=environment(home, **env)) as child:
        child.request("initialize", {"required_capabilities": ["turn.start"]})
        session_id = child.request("session.create")["session_id"]
        events = turn(child, session_id, prompt)
        return events, child.frames
