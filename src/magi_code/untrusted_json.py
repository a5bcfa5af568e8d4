"""JSON that comes from outside the process, parsed with its nesting bounded.

Provider events, an ACP client's lines and a Code Mode program's calls are text we do not
control. Python's json recurses once a container: about a thousand nested arrays raise
RecursionError out of `json.loads`, which its callers, ready for ValueError, let through. Here
the nesting is measured first (local_agent/envelope.py's linear scan) and text whose containers
nest deeper than UNTRUSTED_JSON_DEPTH is refused like text that is not JSON: `loads` raises
ValueError and nothing else, and no value it returns is deep enough to trouble what walks it.
"""

import json

from magi_code.limits import UNTRUSTED_JSON_DEPTH
from magi_code.local_agent.envelope import nesting_exceeds


def loads(data: str | bytes) -> object:
    """The one JSON value of `data` (UTF-8 when bytes); ValueError for anything else."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    # Text with fewer openers than the bound cannot pass it: most events skip the scan.
    if text.count("[") + text.count("{") > UNTRUSTED_JSON_DEPTH and nesting_exceeds(
        text.encode("utf-8", "surrogatepass"), UNTRUSTED_JSON_DEPTH
    ):
        raise ValueError(f"JSON nested deeper than {UNTRUSTED_JSON_DEPTH} levels")
    try:
        return json.loads(text)
    except RecursionError:  # within the bound, but the caller's own stack was already deep
        raise ValueError("JSON nested too deep for the stack") from None
