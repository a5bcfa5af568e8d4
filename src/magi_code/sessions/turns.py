"""The turns a conversation still holds, in order: what a rewind can go back to. Pure.

A turn is a stored prompt (`user` record) and its run. The list follows the records the way
the provider replay does (runner/replay.py): a `compaction` keeps the prompts from the one it
names (``keep_from``) on, a `rewind` drops the prompt it names (``drop_from``) and every later
one, and a prompt a hook blocked (an activity's ``drops_prompt``) was never part of it.
`rewound_runs` names the runs of the turns rewinds dropped: what they did (the plan they set)
is no longer where the conversation stands.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from magi_code.records import record


@record
class StoredTurn:
    message_id: str  # the prompt's stored message_id (what a `rewind` record names)
    run_id: str
    prompt: str
    at: str | None  # when it was sent (ISO 8601), if the record says


def conversation_turns(records: Iterable[Mapping[str, Any]]) -> list[StoredTurn]:
    return _walk(records)[0]


def rewound_runs(records: Iterable[Mapping[str, Any]]) -> set[str]:
    """The run_ids of the turns a `rewind` dropped."""
    return _walk(records)[1]


def _walk(records: Iterable[Mapping[str, Any]]) -> tuple[list[StoredTurn], set[str]]:
    turns: list[StoredTurn] = []
    rewound: set[str] = set()
    for stored in records:
        kind = stored.get("type")
        if kind == "user":
            at = stored.get("at")
            turns.append(StoredTurn(stored["message_id"], stored["run_id"], stored["text"], at))
        elif kind == "compaction":
            turns = _from(turns, stored.get("keep_from"), keep=True)
        elif kind == "rewind":
            kept = _from(turns, stored["drop_from"], keep=False)
            rewound.update(turn.run_id for turn in turns[len(kept) :])
            turns = kept
        elif kind == "activity" and stored.get("drops_prompt"):
            turns = [t for t in turns if t.message_id != stored["drops_prompt"]]
    return turns, rewound


def _from(turns: list[StoredTurn], message_id: object, *, keep: bool) -> list[StoredTurn]:
    """With `keep`, the turns from `message_id` on (none when it is not listed: the replay
    then keeps only the summary); without, the turns before it (all when it is not listed)."""
    ids = [turn.message_id for turn in turns]
    if message_id not in ids:
        return [] if keep else turns
    cut = ids.index(message_id)
    return turns[cut:] if keep else turns[:cut]
