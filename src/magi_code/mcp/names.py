"""Model-facing names of MCP tools. Pure.

`mcp__<server>__<tool>`, limited to [A-Za-z0-9_-] and TOOL_NAME_CHARS. A name that had to be
changed (a character replaced, or cut) ends in 8 hex digits of the SHA-256 of the original, so
two different tools never share a name after sanitising.
"""

import hashlib
import re

from magi_code.mcp.limits import TOOL_NAME_CHARS

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_HASH_CHARS = 8


def tool_name(server: str, tool: str) -> str:
    raw = f"mcp__{server}__{tool}"
    safe = _UNSAFE.sub("_", raw)
    if safe == raw and len(raw) <= TOOL_NAME_CHARS:
        return raw
    tag = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    return f"{safe[: TOOL_NAME_CHARS - _HASH_CHARS - 1]}_{tag}"
