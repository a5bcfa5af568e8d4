"""What melchior publishes as data: the verbs a model may call (`melchior tool`) and the calls a
session answers over its socket (`melchior verbs`). Plain JSON values, never types: a harness
turns them into whatever a tool looks like on its side. Nothing here does I/O.
"""

from __future__ import annotations

from typing import Any

from melchior.limits import (
    FAMILY,
    FRAME_TIMEOUT,
    HELLO_TIMEOUT,
    MAX_FRAME,
    MAX_REPORT,
    MAX_TEXT,
    REPORT_PAGE,
)

# The states of an ask (melchior.tasks moves them; a harness reads them here, without importing
# the bookkeeping).
STATES = (
    "submitted",
    "working",
    "input-required",
    "completed",
    "failed",
    "canceled",
    "rejected",
)
_WHO = {"value": "string", "description": "the session's id, as `list` shows it"}
_MESSAGE = {"value": "string", "description": f"UTF-8 text, at most {MAX_TEXT} bytes"}
_STATES = "submitted, working, input-required, then completed, failed, canceled or rejected"
_VIEW = {
    "task": "id@message-id",
    "state": "|".join(STATES),
    "text": "what the latest state said: the answer, a reason, a question|null",
    "answer": "text when completed, else null",
}

TOOL: dict[str, Any] = {
    "family": FAMILY,
    "command": ["melchior", "tool"],
    "how": "one exec per request: --verb=<verb> --<option>=<value> ...; the answer is one JSON "
    "object on stdout (a reply: ok, family, n, result, and code when ok is false); exit 0 when "
    "ok, 1 when refused, 2 for a bad command line",
    "verbs": {
        "list": {
            "summary": "the live sessions you may reach in your project",
            "options": {},
        },
        "status": {
            "summary": "a session's current status (busy, working_for, waiting); yourself "
            "without --who. Poll a session you started this way: its id is not a task handle",
            "options": {"who": _WHO},
        },
        "tell": {
            "summary": "send a message; it reaches that session's harness labelled as yours",
            "options": {
                "who": _WHO,
                "message": _MESSAGE,
                "sort": {"enum": ["note", "attention"], "default": "note"},
            },
            "required": ["who", "message"],
        },
        "ask": {
            "summary": "ask a question; returns a task handle <id>@<message-id> to poll",
            "options": {"who": _WHO, "message": _MESSAGE},
            "required": ["who", "message"],
        },
        "task": {
            "summary": "the state of a question you asked (--about=<id>@<message-id>): "
            f"{_STATES}, with the harness's text (the answer when completed). With the bare "
            "id of a session you started, its current status instead",
            "options": {"about": {"value": "string"}, "who": _WHO},
            "required": ["about"],
        },
        "cancel": {
            "summary": "withdraw a question you asked (--about=<id>@<message-id>) that is not "
            "finished yet: it becomes canceled and the asked session is told",
            "options": {"about": {"value": "string"}, "who": _WHO},
            "required": ["about"],
        },
        "report": {
            "summary": "store your report (--message=<text>, or --about=- to read it from "
            f"stdin, at most {MAX_REPORT} bytes), which notifies your parent; or read a "
            f"session's report with --who: one page of {REPORT_PAGE} bytes (--page=N), or "
            "--about=json for the whole body, its revision and sha256. A stored report does "
            "not mean the work is finished: check status",
            "options": {
                "who": _WHO,
                "message": _MESSAGE,
                "about": {"enum": ["-", "json"]},
                "page": {"value": "integer", "minimum": 0, "default": 0},
            },
        },
        "end": {
            "summary": "end a session you started (only its minter may)",
            "options": {"who": _WHO},
            "required": ["who"],
        },
    },
}

SOCKET: dict[str, Any] = {
    "family": FAMILY,
    "framing": f"u32 big-endian length, then at most {MAX_FRAME} bytes of JSON",
    "first": f"hello, within {HELLO_TIMEOUT:g} s of connecting",
    "frame deadline": f"each frame whole within {FRAME_TIMEOUT:g} s of its first byte",
    "calls": {
        "hello": {
            "args": [{"id": "string", "token": "string", "talk": "instance|run|project"}],
            "result": [{"id": "string", "role": "main|sub", "who": "project/role/id"}],
            "refusals": ["bad_args", "unauthenticated", "forbidden", "too_busy (then closed)"],
        },
        "status": {
            "args": [],
            "result": [
                {
                    "id": "string",
                    "role": "main|sub",
                    "parent": "string|null",
                    "busy": "boolean",
                    "working_for": "integer",
                    "waiting": "integer",
                }
            ],
        },
        "tell": {
            "args": [
                "text",
                "note|attention|report",
                {"revision": "integer|label", "sha256": "hex", "bytes": "integer"},
            ],
            "result": [{"delivered": True}],
            "refusals": ["bad_args", "forbidden (a report from anyone but a child)"],
        },
        "ask": {
            "args": ["text"],
            "result": [{"task": "id@message-id", "state": "submitted"}],
            "when full": [{"task": None, "state": "rejected", "code": "too_busy"}],
        },
        "task": {
            "args": ["id@message-id"],
            "result": [_VIEW],
            "refusals": ["unknown_task"],
        },
        "cancel": {
            "args": ["id@message-id"],
            "result": [_VIEW],
            "refusals": ["unknown_task", "task_final"],
            "who": "its asker only",
        },
        "report": {
            "args": ["page", "revision (optional: refuse with `changed` if it moved)"],
            "result": [
                {
                    "revision": "integer",
                    "sha256": "hex",
                    "bytes": "integer",
                    "pages": "integer",
                    "page": "integer",
                    "text": "string",
                }
            ],
            "refusals": ["no_report", "changed"],
        },
        "report_put": {
            "args": ["chunk", "final (boolean)"],
            "result": [{"revision": "integer", "sha256": "hex", "bytes": "integer"}],
            "who": "the session itself only",
        },
        "end": {
            "args": [],
            "result": [{"ending": "project/role/id"}],
            "who": "its minter only (the secret that minted it, not a later holder of its id)",
        },
    },
    "pipe": {
        "in": [
            "doing {busy, working_for, waiting}",
            "answer {task, text} (the same as task with state completed)",
            "task {task, state: working|input-required|completed|failed|rejected[, text]}",
        ],
        "out": [
            "listening {at, who}",
            "message {who, sort, text[, task][, revision, sha256, bytes]}",
            "task {task, state: canceled, who}",
            "refused {code}",
            "ended {by}",
        ],
    },
}
