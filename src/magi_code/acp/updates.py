"""Run events, stored history and approvals as ACP values. Pure: no I/O, no clock.

- A prompt is the text of its blocks, each on lines of its own: text as is, a resource link as
  a `<resource_link>` tag with its URI and name, an embedded text resource fenced with its URI;
  and its images (PNG, JPEG, GIF, WebP), each brought within the bounds of tools/images.py.
  Audio, binary resources and other images are refused (the agent advertises none of them).
- Tool activities are ACP tool calls keyed by activity id, with their kind and the places they
  touch; a finished one shows its output (or the client terminal it ran in) and, for a write
  or an edit, its diff. An approval's tool call carries that diff too. Diffs are built from
  the tool's arguments (redacted: they are model output), never from reading the file.
- The plan `update_plan` sets (tools/plan.py) is a `plan` update, each step an entry of
  priority `medium` (the plan ranks none) with its status, which ACP names as we do.
- Stored history replays as user/agent message chunks, thoughts for reasoning summaries and
  compactions, and one tool call per activity, shown as it was live (from its stored
  records: name, state, arguments and output); an `update_plan` call's plan follows it.
- A failed prompt is a JSON-RPC error that names the failure's class and what to do.
"""

import base64
import binascii
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from acp import (
    RequestError,
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    tool_terminal_ref,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ImageContentBlock,
    PermissionOption,
    ResourceContentBlock,
    TerminalToolCallContent,
    TextContentBlock,
    TextResourceContents,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolCallUpdate,
    ToolKind,
    UserMessageChunk,
)

from magi_code import limits, untrusted_json
from magi_code.acp.watched import Call
from magi_code.providers.base import ImagePart
from magi_code.records import record
from magi_code.redact import redact
from magi_code.runner.events import Activity, Diagnostic
from magi_code.tools.approvals import Asked
from magi_code.tools.images import ImageRefused, image_part
from magi_code.tools.limits import PROMPT_IMAGES
from magi_code.tools.plan import PlanUpdate, stored_plan
from magi_code.tools.progress import ToolProgress

TOOL_KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "list_dir": "search",
    "glob": "search",
    "grep": "search",
    "shell": "execute",
    "skill": "read",
    "web_fetch": "fetch",
    "update_plan": "think",
}
INTERNAL_ERROR = -32603  # JSON-RPC's code for a request the agent could not carry out
ALLOW_ONCE, ALLOW_ALWAYS, REJECT = "allow_once", "allow_always", "reject_once"
OPTIONS = [
    PermissionOption(option_id=ALLOW_ONCE, name="Allow", kind="allow_once"),
    PermissionOption(
        option_id=ALLOW_ALWAYS, name="Always allow in this session", kind="allow_always"
    ),
    PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
]

Content = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent
Update = AgentMessageChunk | AgentThoughtChunk | UserMessageChunk | ToolCallStart | ToolCallProgress


class UnsupportedContent(ValueError):
    """A prompt block this agent does not take (image, audio, binary resource)."""


def prompt_text(blocks: list[Any]) -> str:
    """The prompt's text: each block its own part, in order, on lines of its own."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"<resource_link uri={quoted(block.uri)} name={quoted(block.name)} />")
        elif isinstance(block, EmbeddedResourceContentBlock) and isinstance(
            block.resource, TextResourceContents
        ):
            resource = block.resource
            parts.append(f"<context uri={quoted(resource.uri)}>\n{resource.text}\n</context>")
        elif not isinstance(block, ImageContentBlock):
            raise UnsupportedContent
    return "\n".join(parts)


def quoted(value: str) -> str:
    """An attribute value that cannot end its tag early (JSON string quoting)."""
    return json.dumps(value, ensure_ascii=False)


def prompt_images(blocks: list[Any]) -> tuple[ImagePart, ...]:
    """The prompt's images, as the model is sent them (CPU work: run it in a worker thread);
    raises UnsupportedContent for one that is not valid base64 or no image a model is sent,
    and for more than PROMPT_IMAGES."""
    given = [block for block in blocks if isinstance(block, ImageContentBlock)]
    if len(given) > PROMPT_IMAGES:
        raise UnsupportedContent
    images = []
    for block in given:
        try:
            images.append(image_part(base64.b64decode(block.data, validate=True)))
        except (binascii.Error, ValueError, ImageRefused):
            raise UnsupportedContent from None
    return tuple(images)


def tool_kind(name: str, kind: str) -> ToolKind:
    return TOOL_KINDS.get(name, "other") if kind == "tool" else "think"


def activity_update(event: Activity, call: Call | None) -> ToolCallStart | ToolCallProgress:
    """A tool activity as its tool call: kind and places when it starts; its content (output
    or terminal, and the change a write or an edit made) and status when it ends."""
    title = event.summary or event.name
    locations = places(call.paths) if call is not None else None
    if event.state == "started":
        kind = tool_kind(event.name, event.kind)
        return start_tool_call(
            event.activity_id, title, kind=kind, status="in_progress", locations=locations
        )
    status: ToolCallStatus = "completed" if event.state == "completed" else "failed"
    content = None
    if call is not None:
        content = call_content(call, event.state == "completed")
    return update_tool_call(
        event.activity_id, title=title, status=status, content=content, locations=locations
    )


def call_content(call: Call, done: bool) -> list[Content]:
    """What a finished call shows: the client terminal it ran in, else its output (redacted:
    it reached the model, not yet a person); and, when it succeeded, its change."""
    content: list[Content] = []
    if call.terminal is not None:
        content.append(tool_terminal_ref(call.terminal))
    elif call.output:
        content.append(tool_content(text_block(redact(call.output))))
    change = diff(call.tool, call.arguments, call.paths) if done else None
    return content + (change or [])


def places(paths: tuple[Path, ...]) -> list[ToolCallLocation]:
    return [ToolCallLocation(path=str(path)) for path in paths]


def terminal_update(tool_call_id: str, terminal_id: str) -> ToolCallProgress:
    """The client terminal a call is running in, shown while it runs."""
    return update_tool_call(tool_call_id, content=[tool_terminal_ref(terminal_id)])


def progress_update(event: ToolProgress) -> ToolCallProgress:
    """A running call's progress (`3/10 message`), shown as its content while it runs."""
    return update_tool_call(event.activity_id, content=[tool_content(text_block(event.text()))])


def diagnostic_update(event: Diagnostic) -> AgentMessageChunk:
    """A diagnostic as the person reads it in the editor (a provider failure with what the
    provider said and what to do: its `detail`)."""
    return update_agent_message_text(f"\n[{event.code}] {event.detail or event.summary}\n")


def plan_update(update: PlanUpdate) -> AgentPlanUpdate:
    """The whole plan, which replaces the client's last."""
    return update_plan(plan_entry(step.step, status=step.status) for step in update.plan)


def run_failure(code: str, diagnostic: Diagnostic | None) -> RequestError:
    """A failed prompt as a JSON-RPC error a person can read: the failure's class and what to
    do (the diagnostic's `detail`, else its summary); `data` keeps both codes for a program."""
    if diagnostic is None:
        return RequestError(INTERNAL_ERROR, "The turn failed.", {"code": code})
    said = diagnostic.detail or diagnostic.summary
    data = {"code": code, "failure": diagnostic.code}
    return RequestError(INTERNAL_ERROR, f"{diagnostic.code}: {said}", data)


def diff(tool: str, arguments: str, paths: tuple[Path, ...]) -> list[Content] | None:
    """The change a write or an edit makes, from its arguments; None for anything else and
    for texts over ACP_FILE_BYTES (no diff may outgrow a message)."""
    if tool not in ("write_file", "edit_file") or not paths:
        return None
    try:
        given = untrusted_json.loads(arguments)
    except ValueError:
        return None
    if not isinstance(given, dict):
        return None
    path = str(paths[0])
    new, old = given.get("content" if tool == "write_file" else "new"), given.get("old")
    if not isinstance(new, str) or (tool == "edit_file" and not isinstance(old, str)):
        return None
    if len(new) + len(old or "") > limits.ACP_FILE_BYTES:
        return None
    return [tool_diff_content(path, redact(new), redact(old) if old is not None else None)]


def permission_call(tool_call_id: str, summary: str, asked: Asked | None) -> ToolCallUpdate:
    change = diff(asked.tool, asked.arguments, tuple(asked.access.paths)) if asked else None
    return ToolCallUpdate(
        tool_call_id=tool_call_id,
        title=summary,
        kind=tool_kind(asked.tool, "tool") if asked is not None else "other",
        status="pending",
        content=change,
    )


@record(frozen=False)
class StoredCall:
    kind: str  # "tool": the model's; "activity": a hook run, a Code Mode call
    state: str
    call: Call


def replay(entry: dict[str, Any], started: set[str], call: StoredCall | None) -> Update | None:
    """One stored history part as an update; `started` holds the tool calls already sent;
    `call` is a tool entry's stored call (its name, state, arguments and output)."""
    kind, text, message_id = entry["kind"], entry["text"], entry["message_id"]
    if kind == "user":
        return update_user_message_text(text)
    if kind == "assistant":
        return update_agent_message_text(text)
    if kind in ("reasoning_summary", "compaction"):
        return update_agent_thought_text(text)
    if kind == "diagnostic":
        return update_agent_message_text(f"\n{text}\n")
    if kind != "activity" or message_id in started:
        return None
    started.add(message_id)
    if call is None:
        status: ToolCallStatus = "failed" if entry["partial"] else "completed"
        return start_tool_call(message_id, text, kind="other", status=status)
    done = call.state == "completed"  # "started" alone: the run was interrupted
    return start_tool_call(
        message_id,
        text,
        kind=tool_kind(call.call.tool, call.kind),
        status="completed" if done else "failed",
        content=call_content(call.call, done),
        locations=places(call.call.paths),
    )


def replayed_plan(call: StoredCall | None) -> AgentPlanUpdate | None:
    """The plan a stored `update_plan` call set, replayed after its tool call."""
    if call is None or call.kind != "tool" or call.call.tool != "update_plan":
        return None
    stored = stored_plan(call.call.arguments) if call.state == "completed" else None
    return plan_update(stored) if stored is not None else None


def stored_calls(records: Iterable[dict[str, Any]], cwd: str) -> list[StoredCall]:
    """The tool and activity records' calls, one per activity in stored order (its last state
    wins), as the history projection keys them; places come from a `path` argument."""
    calls: dict[tuple[str, str], StoredCall] = {}
    for stored in records:
        kind = stored.get("type")
        if kind not in ("tool", "activity"):
            continue
        key = (str(stored.get("run_id")), str(stored.get("activity_id")))
        arguments = stored.get("arguments")
        held = calls.get(key)
        if held is None:
            held = calls[key] = StoredCall(str(kind), "started", Call(str(stored["name"]), "{}"))
        held.state = str(stored.get("state"))
        if isinstance(arguments, str):
            held.call.arguments = arguments
            held.call.paths = argument_paths(arguments, cwd)
        result = stored.get("result")
        if result is not None:
            held.call.output = result if isinstance(result, str) else json.dumps(result)
    return list(calls.values())


def argument_paths(arguments: str, cwd: str) -> tuple[Path, ...]:
    try:
        given = untrusted_json.loads(arguments)
    except ValueError:
        return ()
    path = given.get("path") if isinstance(given, dict) else None
    if not isinstance(path, str) or not path or "\0" in path:
        return ()
    return (Path(os.path.normpath(os.path.join(cwd, path))),)
