"""Hooks: which commands the settings run on which runner event, what a hook is told, and
what its exit means. Pure: settings and bytes in, values out; hook_runs.py runs the processes.

Rules:
- `[[hooks.<event>]]` entries have `command` (an argv list, or a string for `/bin/sh -c`),
  an optional `matcher` (an fnmatch glob on the tool name, tool events only; absent: every
  tool) and `timeout_ms` (default HOOK_TIMEOUT_MS, at most HOOK_MAX_TIMEOUT_MS). Any other
  shape is `HookConfigError` (startup: `configuration_invalid`).
- Exit 0 proceeds. Its stdout, when it is a JSON object, may carry `{"decision": "block",
  "reason": ...}` (pre_tool_use, user_prompt_submit only) and `{"additional_context": ...}`
  (session_start, user_prompt_submit, post_tool_use only); other events ignore them, and
  stdout that is not a JSON object is ignored.
- Exit 2 blocks an event that can block, with stderr as the reason the model gets.
- Anything else (another exit code, exit 2 where nothing can be blocked, a signal, the
  timeout, stdout past HOOK_STDOUT_BYTES, a command that cannot start) is a diagnostic: the
  action goes on as if the hook were not there.
- A hook has no other power: it never answers an approval and never widens a permission.
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Mapping, Sequence
from typing import Literal

from magi_code.errors import MagiError
from magi_code.limits import (
    HOOK_CONTEXT_BYTES,
    HOOK_MAX_TIMEOUT_MS,
    HOOK_REASON_BYTES,
    HOOK_STDOUT_BYTES,
    HOOK_TIMEOUT_MS,
    HOOKS_PER_EVENT,
)
from magi_code.records import record
from magi_code.tools.summaries import clip_utf8, scrub_surrogates

EVENTS = (
    "session_start",
    "user_prompt_submit",
    "pre_tool_use",
    "post_tool_use",
    "pre_compact",
    "stop",
)
TOOL_EVENTS = frozenset({"pre_tool_use", "post_tool_use"})
CAN_BLOCK = frozenset({"pre_tool_use", "user_prompt_submit"})
CAN_ADD_CONTEXT = frozenset({"session_start", "user_prompt_submit", "post_tool_use"})
BLOCK_EXIT = 2
_KEYS = frozenset({"command", "matcher", "timeout_ms", "cwd"})


class HookConfigError(MagiError, ValueError):
    """The `hooks` settings have a bad shape. Carries no settings text."""

    code: Literal["configuration_invalid"] = "configuration_invalid"


@record
class Hook:
    event: str
    argv: tuple[str, ...]  # a string command is ("/bin/sh", "-c", command)
    label: str  # the command as written, for activity summaries
    matcher: str | None = None
    timeout_ms: int = HOOK_TIMEOUT_MS
    cwd: str | None = None  # where it starts, when its entry says (config/own_commands.py)

    def matches(self, tool: str | None) -> bool:
        if self.matcher is None:
            return True
        return tool is not None and fnmatch.fnmatchcase(tool, self.matcher)


@record
class Finished:
    """How one hook process ended, as hook_runs.py saw it."""

    exit_code: int | None  # None: did not start, or killed at its timeout
    stdout: bytes  # at most HOOK_STDOUT_BYTES + 1 (one more says it was too long)
    stderr: bytes
    timed_out: bool = False
    started: bool = True


@record
class Verdict:
    blocked: str | None = None  # the reason, when the hook blocks
    context: str | None = None  # additional context for the model
    problem: str | None = None  # why the hook failed (a diagnostic); the action proceeds


def parse(table: object) -> dict[str, tuple[Hook, ...]]:
    """The `hooks` settings table as hooks per event; HookConfigError on any bad shape."""
    if table is None:
        return {}
    if not isinstance(table, Mapping) or not set(table) <= set(EVENTS):
        raise HookConfigError
    hooks: dict[str, tuple[Hook, ...]] = {}
    for event, entries in table.items():
        if not isinstance(entries, list) or len(entries) > HOOKS_PER_EVENT:
            raise HookConfigError
        hooks[event] = tuple(_hook(event, entry) for entry in entries)
    return hooks


def _hook(event: str, entry: object) -> Hook:
    if not isinstance(entry, Mapping) or not set(entry) <= _KEYS or "command" not in entry:
        raise HookConfigError
    command = entry["command"]
    if isinstance(command, str) and command.strip():
        argv: tuple[str, ...] = ("/bin/sh", "-c", command)
        label = command
    elif isinstance(command, list) and command and all(isinstance(a, str) for a in command):
        argv = tuple(command)
        label = " ".join(command)
    else:
        raise HookConfigError
    matcher = entry.get("matcher")
    if matcher is not None and (not isinstance(matcher, str) or event not in TOOL_EVENTS):
        raise HookConfigError
    timeout = entry.get("timeout_ms", HOOK_TIMEOUT_MS)
    if isinstance(timeout, bool) or not isinstance(timeout, int):
        raise HookConfigError
    if not 0 < timeout <= HOOK_MAX_TIMEOUT_MS:
        raise HookConfigError
    cwd = entry.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not os.path.isabs(cwd) or "\x00" in cwd):
        raise HookConfigError
    return Hook(event, argv, label, matcher, timeout, cwd)


def payload(event: str, session_id: str, cwd: str, **fields: object) -> bytes:
    """The one JSON object a hook reads on stdin, as bytes ending in a newline."""
    body = {"event": event, "session_id": session_id, "cwd": cwd, **fields}
    return json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"


def verdict(hook: Hook, finished: Finished) -> Verdict:
    """What one finished hook means for its event."""
    event = hook.event
    if not finished.started:
        return Verdict(problem="could not start")
    if finished.timed_out:
        return Verdict(problem=f"timed out after {hook.timeout_ms} ms")
    code = finished.exit_code
    if code == BLOCK_EXIT and event in CAN_BLOCK:
        return Verdict(blocked=_reason(finished.stderr) or "blocked by a hook")
    if code != 0:
        return Verdict(problem=f"killed by signal {-code}" if code and code < 0 else f"exit {code}")
    if len(finished.stdout) > HOOK_STDOUT_BYTES:
        return Verdict(problem=f"stdout over {HOOK_STDOUT_BYTES} bytes")
    answer = _json_object(finished.stdout)
    if event in CAN_BLOCK and answer.get("decision") == "block":
        return Verdict(blocked=_reason(str(answer.get("reason") or "").encode()) or "blocked")
    context = answer.get("additional_context")
    if event in CAN_ADD_CONTEXT and isinstance(context, str) and context.strip():
        return Verdict(context=bounded_context(context))
    return Verdict()


def bounded_context(text: str) -> str:
    """`additional_context` cut to HOOK_CONTEXT_BYTES on a character boundary."""
    return clip_utf8(scrub_surrogates(text), HOOK_CONTEXT_BYTES)


def framed(event: str, context: str) -> str:
    """Context as the model sees it: said to come from a hook, never from the user."""
    return f"[context from a {event} hook]\n{context}"


def _reason(data: bytes) -> str:
    text = data[:HOOK_REASON_BYTES].decode("utf-8", "replace").strip()
    return clip_utf8(text, HOOK_REASON_BYTES)


def _json_object(data: bytes) -> dict[str, object]:
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def applying(hooks: Mapping[str, Sequence[Hook]], event: str, tool: str | None) -> list[Hook]:
    """The hooks of `event` that apply (to `tool`, for tool events), in settings order."""
    return [hook for hook in hooks.get(event, ()) if hook.matches(tool)]
