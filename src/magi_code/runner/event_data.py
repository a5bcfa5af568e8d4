"""Run events as protocol data: `(name, data)` with the local agent's names and shapes.

The local agent frames these as events; `magi-code exec --json` prints them as JSON Lines,
and its detail events beside them. One mapping, so a script sees what a protocol client sees.
Pure: no I/O, no clock.
"""

from typing import Any

from magi_code.records import is_record
from magi_code.runner.events import DETAIL_NAMES, EVENT_NAMES, DetailEvent, RunEvent


def event_data(event: RunEvent, session_id: str, run_id: str) -> tuple[str, dict[str, Any]]:
    # Run events are flat records: their fields are the event's data, but a diagnostic's
    # `detail`, which is for a person's face only.
    data = {"session_id": session_id, "run_id": run_id, **vars(event)}
    data.pop("detail", None)
    return EVENT_NAMES[type(event)], data


def detail_data(event: DetailEvent) -> tuple[str, dict[str, Any]]:
    """A detail event as `exec --json` prints it: its fields, and a record among them (a plan's
    steps) as an object of its own fields."""
    return DETAIL_NAMES[type(event)], {name: plain(value) for name, value in vars(event).items()}


def plain(value: object) -> object:
    if isinstance(value, tuple):
        return [plain(item) for item in value]
    if is_record(value):
        return {name: plain(item) for name, item in vars(value).items()}
    return value
