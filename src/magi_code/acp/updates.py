"""Run events, stored history and approvals as ACP values. Pure: no I/O, no clock.

- A prompt is the text of its blocks: text as is, a resource link as its URI, an embedded text
  resource fenced with its URI; and its images (PNG, JPEG, GIF, WebP), each brought within the
  bounds of tools/images.py. Audio, binary resources and other images are refused (the agent
  advertises none of them).
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
    ImageContentBlock,
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
from magi_code.providers.base import ImagePart
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
    "web_fetch": "fetch",
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
        elif not isinstance(block, ImageContentBlock):
            raise UnsupportedContent
    return "".join(parts)


def prompt_images(blocks: list[Any]) -> tuple[ImagePart, ...]:
    """The prompt's images, as the model is sent them (CPU work: run it in a worker thread);
    raises UnsupportedContent for one that is not valid base64 or no image a model is sent,
    and for more than PROMPT_IMAGES."""
    import base64
    import binascii

    from magi_code.tools.images import ImageRefused, image_part
    from magi_code.tools.limits import PROMPT_IMAGES

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


def activity_update(event: Activity) -> ToolCallStart | ToolCallProgress:
    title = event.summary or event.name
    if event.state == "started":
        return start_tool_call(
            event.activity_id, title, kind=tool_kind(event.name, event.kind), status="in_progress"
        )
    status: ToolCallStatus = "completed" if event.state == "completed" else "failed"
    return update_tool_call(event.activity_id, title=title, status=status)


def diagnostic_update(event: Diagnostic) -> AgentMessageChunk:
    """A diagnostic as the person reads it in the editor (a provider failure with what the
    provider said and what to do: its `detail`)."""
    return update_agent_message_text(f"\n[{event.code}] {event.detail or event.summary}\n")


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
