"""`@SERVER:URI` mentions in a prompt: each names a resource of a connected MCP server (a URI
with a scheme, `@ev:demo://resource/static/document/architecture.md`), read (resources/read)
before the prompt is sent and attached to it the way a tool result's embedded resource is
given (results.py): text under its URI, images as images.

Rules:
- A mention is a word that starts with `@`, then a server name, `:` and a URI with a scheme;
  sentence punctuation after it is not part of it. A file mention (`@src/app.py`) is not one.
- At most MENTIONS in one prompt, each read waited for at most ATTACH_S. A server that is not
  connected, a failed read or a mention too many refuse the prompt (NotSent): nothing is sent.
- The text they add follows the prompt, cut at ATTACHED_BYTES, saying so; their images go
  with it, within what the prompt may still carry (PROMPT_IMAGES).
- `mentioned` is pure; `attach` waits for the servers, in a worker thread or exec's own. The
  SDK's types (results.py) load only when a prompt mentions a resource: Mission Control's
  prompt box imports this module, and exec does for any prompt holding an `@`.
"""

import re
from typing import TYPE_CHECKING

from magi_code.mcp.calls import FAILURES, waited
from magi_code.mcp.errors import NotSent
from magi_code.mcp.limits import ATTACH_S, ATTACHED_BYTES, MENTIONS
from magi_code.records import record
from magi_code.tools.limits import PROMPT_IMAGES

if TYPE_CHECKING:
    from magi_code.mcp.manager import McpManager
    from magi_code.providers.base import ImagePart

MENTION = re.compile(r"(?<!\S)@([^\s:@]+):([A-Za-z][A-Za-z0-9+.-]*:\S+)")
TRAILING = ".,;:!?)]}>\"'"  # the sentence around a mention, not its URI


@record
class Mention:
    server: str
    uri: str


def mentioned(prompt: str) -> list[Mention]:
    """The prompt's `@SERVER:URI` mentions, in order, each once."""
    found: list[Mention] = []
    for match in MENTION.finditer(prompt):
        mention = Mention(match.group(1), match.group(2).rstrip(TRAILING))
        if mention not in found:
            found.append(mention)
    return found


def attach(
    manager: "McpManager | None", prompt: str, images_before: int = 0
) -> tuple[str, tuple["ImagePart", ...]]:
    """The prompt followed by the text of the resources it mentions, and their images (room
    left for them after `images_before`); the prompt as it is when it mentions none."""
    mentions = mentioned(prompt)
    if not mentions:
        return prompt, ()
    from magi_code.mcp.results import contents_text, cut  # the SDK's types: see the rules

    if len(mentions) > MENTIONS:
        raise NotSent(f"The prompt mentions {len(mentions)} MCP resources; at most {MENTIONS}.")
    connected = sorted(manager.connections) if manager is not None else []
    images: list[ImagePart] = []
    parts: list[str] = []
    for mention in mentions:
        where = f"@{mention.server}:{mention.uri}"
        if manager is None or mention.server not in connected:
            servers = ", ".join(connected) or "none"
            raise NotSent(
                f"{where}: no MCP server {mention.server} is connected (connected: {servers}; "
                "`magi-code mcp list` shows the configured ones)."
            )
        try:
            future = manager.submit_read_resource(mention.server, mention.uri)
        except RuntimeError:
            raise NotSent("The MCP servers are shutting down.") from None
        result = waited(future, ATTACH_S)
        if result is None:
            raise NotSent(f"{where}: the MCP server did not answer in {ATTACH_S:g} s.")
        if isinstance(result, str):
            raise NotSent(f"{where} could not be read: {FAILURES[result]}.")
        parts += [contents_text(contents, images) for contents in result.contents]
    room = max(0, PROMPT_IMAGES - images_before)
    if len(images) > room:
        parts.append(
            f"[{len(images) - room} image(s) not attached: a prompt carries at most "
            f"{PROMPT_IMAGES}]"
        )
    attached = cut("\n\n".join(parts), ATTACHED_BYTES, "attached resources")
    return f"{prompt}\n\n{attached}", tuple(images[:room])
