"""The stored session record schema, and the pure check of one decoded record against it.

One JSONL file per session: ``MC_HOME/sessions/<session_id>.jsonl``, created 0600 in a 0700
directory on the first append (never on create/open). Each line is one JSON object, UTF-8,
terminated by LF, carrying ``"session_id"`` (equal to the file's ID) and ``"type"``:

=================  ===========================================================================
type               fields (besides session_id/type)
=================  ===========================================================================
session            ``cwd`` canonical absolute path (optional: older files lack it),
                   ``created_at`` ISO 8601, ``selection`` {provider, model, thinking}.
                   Written first; a later one may update the selection (last one wins).
                   ``approval_mode`` (optional): the mode an ACP client chose (last wins).
user               ``message_id``, ``run_id``, ``text``, ``images`` (optional: see below),
                   ``at`` (optional) ISO 8601: when it was sent
assistant_chunk    ``message_id``, ``run_id``, ``index`` (int), ``text``: streamed pieces
assistant          ``message_id``, ``run_id``, ``text``: the reconciled segment; wins over
                   its chunks. Legacy records without ``text`` (absent or null) fall back to
                   the chunks.
reasoning_summary  ``item_id``, ``run_id``, ``text``, ``provider_summary`` (bool; projected
                   only when true; a repeated item_id within a run replaces the earlier one)
tool               ``activity_id``, ``run_id``, ``name``, ``state`` (started|completed|failed),
                   ``summary`` (optional str), ``result`` (raw, provider replay only; any JSON),
                   ``images`` (optional: see below; provider replay only)
activity           ``activity_id``, ``run_id``, ``name``, ``state`` (started|completed|failed),
                   ``summary`` (optional str): an activity the model did not call itself (a
                   hook run, a Code Mode bridged call). Projected like a tool's; replayed to
                   the model only through ``context`` (optional str: a hook's additional
                   context) and ``drops_prompt`` (optional str: the id of the run's prompt a
                   hook blocked, which the model then never sees)
compaction         ``text``: a compaction summary; ``keep_from`` (optional str): the stored
                   message_id of the prompt the summary was made in, which it keeps
peer               ``run_id``, ``who`` (melchior's proven project/role/id), ``sort``, ``text``,
                   ``task`` (optional): a peer's message, shown to the model labelled at the
                   start of a turn; never user input, never projected
internal           provider-only prompt; never projected
assessment         private assessment; never projected
reasoning          raw reasoning; never projected
run_finished       ``run_id``, ``outcome`` (completed|cancelled|failed), ``error_code`` (str|null),
                   ``usage`` (optional: older files and runs no provider told any lack it):
                   the run's tokens as its provider reported them, an object of non-negative
                   integers ``rounds`` (model requests), ``input_tokens``, ``output_tokens``,
                   ``cached_input_tokens`` (all its requests together, a compaction's too)
                   and ``context_tokens`` (its last request's input and output: what the
                   conversation weighed). Never projected
rewind             ``drop_from``: the stored message_id of a prompt; the conversation goes on
                   from just before it (that turn and every later one leave the projection and
                   the replay, and stay in the file); ``at`` (optional str) ISO 8601
=================  ===========================================================================

``images`` is a list of objects ``{media_type, data, description}`` (strings): each image a
prompt carried or a tool returned, stored whole, its bytes in base64 as the model was sent them
(tools/images.py bounds each at IMAGE_BYTES, its description short). Stored bytes rather than a
reference: a prompt's image may have no file, and a file may change or go; a session stays
what the model saw. Never projected.

A file is ``session_invalid`` when a line is not valid UTF-8, not JSON, not an object, names
another session, has an unknown type or the type ``diagnostic``, or lacks a required string
field. The type set is closed on purpose: a new type is added here first, then written.

Crash decision (torn tail): the writer appends each record as one ``write`` of the line plus
LF, so bytes after the last LF can only come from a write that never completed, and were
never acknowledged as persisted. Such a torn last line is ignored as not durable rather than
making the whole session invalid; the projection then carries an ``interrupted`` diagnostic
and is not complete. The next append truncates the torn bytes before writing, so they never
become a malformed line in the middle of the file. A malformed *terminated* line is still
``session_invalid``.

This module never touches files and never decides what is shown; see projection.py.
"""

from collections.abc import Callable
from typing import Any

from magi_code.sessions.errors import SessionError

Record = dict[str, Any]

PROJECTED_TYPES = frozenset(
    {"user", "assistant_chunk", "assistant", "reasoning_summary", "tool", "activity", "compaction"}
)
PRIVATE_TYPES = frozenset({"internal", "assessment", "reasoning"})
RECORD_TYPES = PROJECTED_TYPES | PRIVATE_TYPES | {"session", "run_finished", "peer", "rewind"}

TOOL_STATES = frozenset({"started", "completed", "failed"})
USAGE_FIELDS = ("rounds", "input_tokens", "output_tokens", "cached_input_tokens", "context_tokens")
OUTCOMES = frozenset({"completed", "cancelled", "failed"})

# Required string fields per type (private types need only their type and session).
_REQUIRED: dict[str, tuple[str, ...]] = {
    "session": (),
    "user": ("message_id", "run_id", "text"),
    "assistant_chunk": ("message_id", "run_id", "text"),
    "assistant": ("message_id", "run_id"),
    "reasoning_summary": ("item_id", "run_id", "text"),
    "tool": ("activity_id", "run_id", "name", "state"),
    "activity": ("activity_id", "run_id", "name", "state"),
    "compaction": ("text",),
    "run_finished": ("run_id", "outcome"),
    "peer": ("run_id", "who", "sort", "text"),
    "rewind": ("drop_from",),
}


def _invalid() -> SessionError:
    return SessionError("session_invalid")


def _is_text(value: object) -> bool:
    # Lone surrogates cannot reach us as str: the reader's JSON parser rejects their escapes,
    # and the writer's UTF-8 encoding of a new record fails on them (a ValueError).
    return isinstance(value, str)


def _optional_text(record: Record, key: str) -> None:
    value = record.get(key)
    if value is not None and not _is_text(value):
        raise _invalid()


def _check_session(record: Record) -> None:
    _optional_text(record, "cwd")


def _check_compaction(record: Record) -> None:
    _optional_text(record, "keep_from")


def _check_rewind(record: Record) -> None:
    _optional_text(record, "at")


def _check_assistant(record: Record) -> None:
    _optional_text(record, "text")


def _check_chunk(record: Record) -> None:
    if type(record.get("index")) is not int:
        raise _invalid()


def _check_summary(record: Record) -> None:
    if not isinstance(record.get("provider_summary", False), bool):
        raise _invalid()


def _check_images(record: Record) -> None:
    images = record.get("images")
    if images is None:
        return
    if not isinstance(images, list):
        raise _invalid()
    for image in images:
        if not isinstance(image, dict) or not all(
            _is_text(image.get(key)) for key in ("media_type", "data", "description")
        ):
            raise _invalid()


def _check_user(record: Record) -> None:
    _check_images(record)
    _optional_text(record, "at")


def _check_tool(record: Record) -> None:
    _optional_text(record, "summary")
    _check_images(record)
    if record["state"] not in TOOL_STATES:
        raise _invalid()


def _check_activity(record: Record) -> None:
    _check_tool(record)
    _optional_text(record, "context")
    _optional_text(record, "drops_prompt")


def _check_finished(record: Record) -> None:
    _optional_text(record, "error_code")
    if record["outcome"] not in OUTCOMES:
        raise _invalid()
    usage = record.get("usage")
    if usage is None:
        return
    if not isinstance(usage, dict) or not all(_count(usage.get(key)) for key in USAGE_FIELDS):
        raise _invalid()


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


_EXTRA: dict[str, Callable[[Record], None]] = {
    "session": _check_session,
    "user": _check_user,
    "assistant": _check_assistant,
    "compaction": _check_compaction,
    "rewind": _check_rewind,
    "assistant_chunk": _check_chunk,
    "reasoning_summary": _check_summary,
    "tool": _check_tool,
    "activity": _check_activity,
    "run_finished": _check_finished,
}


def check_record(record: object, session_id: str) -> Record:
    """Return `record` when it is a valid stored record of `session_id`, else session_invalid."""
    if not isinstance(record, dict) or record.get("session_id") != session_id:
        raise _invalid()
    kind = record.get("type")
    if not isinstance(kind, str):  # before any set lookup: a list or object is unhashable
        raise _invalid()
    if kind in PRIVATE_TYPES:
        return record
    if kind not in _REQUIRED:
        raise _invalid()
    for key in _REQUIRED[kind]:
        if not isinstance(record.get(key), str):
            raise _invalid()
    extra = _EXTRA.get(kind)
    if extra is not None:
        extra(record)
    return record
