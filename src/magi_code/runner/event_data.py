"""Run events as protocol data: `(name, data)` with the local agent's names and shapes.

The local agent frames these as events; `magi-code exec --json` prints them as JSON Lines.
One mapping, so a script sees what a protocol client sees. Pure: no I/O, no clock.
"""

from typing import Any

from magi_code.runner.events import EVENT_NAMES, RunEvent


def event_data(event: RunEvent, session_id: str, run_id: str) -> tuple[str, dict[str, Any]]:
    # Run events are flat records: their fields are the event's data, but a diagnostic's
    # `detail`, which is for a person's face only.
    data = {"session_id": session_id, "run_id": run_id, **vars(event)}
    data.pop("detail", None)
    return EVENT_NAMES[type(event)], data
