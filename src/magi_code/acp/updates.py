"""Run events, stored history and approvals as ACP values. Pure: no I/O, no clock.

- A prompt is the text of its blocks: text as is, a resource link as its URI, an embedded text
  resource fenced with its URI. Images, audio and binary resources are refused (the agent
  does not advertise them).
- Tool activities are ACP tool calls keyed by activity id; an approval's tool call carries a
  diff for file writes and edits, built from the tool's arguments (redacted: they are model
  output), never from reading the file.
- Stored history replays as user/agent message chunks, thoughts for reasoning summaries and
  compactions, and one tool call per activity.
"""

from typing import Any

from acp import (
    start_tool_call,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ContentToolCallContent,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    PermissionOption,
    ResourceContentBlock,
    TerminalToolCallContent,
    TextContentBlock,
    TextResourceContents,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolCallUpdate,
    ToolKind,
    UserMessageChunk,
)

from magi_code import untrusted_json
from magi_code.redact import redact
from magi_code.runner.events import Activity, Diagnostic
from magi_code.tools.approvals import Asked

TOOL_KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "list_dir": "search",
    "glob": "search",
    "grep": "search",
    "shell": "execute",
    "skill": "read",
}
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
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(block.uri)
        elif isinstance(block, EmbeddedResourceContentBlock) and isinstance(
            block.resource, TextResourceContents
        ):
            resource = block.resource
            parts.append(f'\n<context uri="{resource.uri}">\n{resource.text}\n</context>\n')
        else:
            raise UnsupportedContent
    return "".join(parts)


def tool_kind(name: str, kind: str) -> ToolKind:
    return TOOL_KINDS.get(name, "other") if kind == "tool" else "think"


def activity_update(event: Activity) -> ToolCallStart | ToolCallProgress:
    title = event.summary or event.name
    if event.state == "started":
        return start_tool_call(
            event.activity_id, title, kind=tool_kind(event.name, event.kind), status="in_progress"
        )
    status: ToolCallStatus = "completed" if event.state == "completed" else "failed"
    return update_tool_call(event.activity_id, title=title, status=status)


def diagnostic_update(event: Diagnostic) -> AgentMessageChunk:
    return update_agent_message_text(f"\n[{event.code}] {event.summary}\n")


def diff(asked: Asked | None) -> list[Content] | None:
    """The change a write or an edit would make, from its arguments; None for anything else."""
    if asked is None or asked.tool not in ("write_file", "edit_file") or not asked.access.paths:
        return None
    try:
        arguments = untrusted_json.loads(asked.arguments)
    except ValueError:
        return None
    if not isinstance(arguments, dict):
        return None
    path = str(asked.access.paths[0])
    if asked.tool == "write_file" and isinstance(arguments.get("content"), str):
        return [tool_diff_content(path, redact(arguments["content"]))]
    old, new = arguments.get("old"), arguments.get("new")
    if asked.tool == "edit_file" and isinstance(old, str) and isinstance(new, str):
        return [tool_diff_content(path, redact(new), redact(old))]
    return None


def permission_call(tool_call_id: str, summary: str, asked: Asked | None) -> ToolCallUpdate:
    return ToolCallUpdate(
        tool_call_id=tool_call_id,
        title=summary,
        kind=tool_kind(asked.tool, "tool") if asked is not None else "other",
        status="pending",
        content=diff(asked),
    )


def replay(entry: dict[str, Any], started: set[str]) -> Update | None:
    """One stored history part as an update; `started` holds the tool calls already sent."""
    kind, text, message_id = entry["kind"], entry["text"], entry["message_id"]
    if kind == "user":
        return update_user_message_text(text)
    if kind == "assistant":
        return update_agent_message_text(text)
    if kind in ("reasoning_summary", "compaction"):
        return update_agent_thought_text(text)
    if kind == "diagnostic":
        return update_agent_message_text(f"\n{text}\n")
    if kind == "activity" and message_id not in started:
        started.add(message_id)
        status: ToolCallStatus = "failed" if entry["partial"] else "completed"
        return start_tool_call(message_id, text, kind="other", status=status)
    return None
