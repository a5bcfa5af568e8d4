"""What a provider said when it failed: the message of its error body, for a person's face.

`provider_message` takes the message out of an error body's JSON (`error.message` as OpenAI
and Anthropic send it, `error` as a string as Ollama does, `message`, `detail`,
`error_description`, ...), never the raw body: text that is not JSON, or JSON with no message,
says nothing. The message is redacted (magi_code/redact.py) with its control and format
characters removed (no escape sequence or bidirectional override reaches a terminal; line
breaks become spaces), then cut to PROVIDER_MESSAGE_CHARS. It goes to a person's face only
(`base.failure_detail`), never onto a protocol wire.
"""

import unicodedata

from magi_code import untrusted_json
from magi_code.providers.limits import PROVIDER_MESSAGE_CHARS
from magi_code.redact import redact

# Where an error body keeps its message, in the order looked at; a value that is a table is
# looked into the same way (OpenAI's and Anthropic's `{"error": {"message": ...}}`).
MESSAGE_KEYS = ("message", "error", "detail", "error_description", "msg", "title")
MESSAGE_DEPTH = 3  # tables looked into, the body's own included


def provider_message(body: str) -> str:
    """The message of an error body that is a JSON object, cleaned for a terminal; "" when
    there is none."""
    try:
        value = untrusted_json.loads(body)
    except ValueError:
        return ""
    found = _message(value, MESSAGE_DEPTH) if isinstance(value, dict) else None
    return cleaned(found) if found else ""


def _message(value: object, depth: int) -> str | None:
    if isinstance(value, str):
        return value if value.strip() else None
    if depth == 0:
        return None
    if isinstance(value, list):  # FastAPI's `detail`: a list of {"msg": ...}
        return next(filter(None, (_message(item, depth - 1) for item in value[:4])), None)
    if isinstance(value, dict):
        for key in MESSAGE_KEYS:
            found = _message(value.get(key), depth - 1) if key in value else None
            if found:
                return found
    return None


def cleaned(text: str) -> str:
    """`text` for a terminal: words joined by single spaces, no control or format character
    left, redacted, at most PROVIDER_MESSAGE_CHARS ("…" ends a cut one)."""
    words = ("".join(c for c in word if unicodedata.category(c)[0] != "C") for word in text.split())
    joined = redact(" ".join(word for word in words if word))
    if len(joined) <= PROVIDER_MESSAGE_CHARS:
        return joined
    return joined[: PROVIDER_MESSAGE_CHARS - 1].rstrip() + "…"
