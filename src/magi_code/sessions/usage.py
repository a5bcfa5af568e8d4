"""What a session's turns spent, read back from their stored records. Pure (records in).

Each run stores its tokens on its `run_finished` record (``usage``, sessions/records.py;
older files and runs no provider told any have none, and count nothing). The session's totals
are every run's together, the turns a rewind dropped included: they were spent. What the
conversation weighs (`context`) is the last run's figure (what its last request and reply
weighed, as a face's status line shows it live), unless a `compaction` or a `rewind` changed
the conversation since: then None, and the caller estimates it from what is left.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from magi_code.records import record


@record
class StoredUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    context: int | None = None  # tokens the conversation weighs; None: unknown


def stored_usage(records: Iterable[Mapping[str, Any]]) -> StoredUsage:
    spent_in = spent_out = 0
    context: int | None = None
    for stored in records:
        kind = stored.get("type")
        if kind in ("compaction", "rewind"):
            context = None
        elif kind == "run_finished" and (usage := stored.get("usage")) is not None:
            spent_in += usage["input_tokens"]
            spent_out += usage["output_tokens"]
            context = usage["context_tokens"]
    return StoredUsage(spent_in, spent_out, context)
