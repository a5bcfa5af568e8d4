"""Safe one-line summaries: control characters out, secrets redacted, bounded in UTF-8 bytes.

Every summary that leaves the runner (activity, approval, diagnostic) passes through
`safe_summary`. It is pure. It must never return more than SUMMARY_BYTES UTF-8 bytes, a
fragment of a secret it recognised, or a character that is not valid UTF-8.

Order matters: controls are removed first (so `sk-ab\\x00cd...` cannot hide a key from the
patterns), then secrets are redacted, then the text is cut (so a cut never exposes the tail of
a half-matched secret).
"""

import re

from magi_code.limits import SUMMARY_BYTES
from magi_code.redact import redact

ELLIPSIS = "…"

# Redaction runs over a bounded prefix; the cut drops the last whitespace-free run, which
# might be the start of a secret too short for its pattern.
SCAN_CHARS = 16 * SUMMARY_BYTES

_SURROGATES = re.compile("[\ud800-\udfff]")
_SPACES = re.compile(r"[\s\u0085\u2028\u2029]+")
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def clip_utf8(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` UTF-8 bytes, never inside a character; mark a cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    keep = data[: max(0, limit - len(ELLIPSIS.encode("utf-8")))]
    return keep.decode("utf-8", "ignore") + ELLIPSIS


def scrub_surrogates(text: str) -> str:
    """Lone surrogates (undecodable file names arrive as them) become U+FFFD."""
    return _SURROGATES.sub("\ufffd", text)


def one_line(text: str) -> str:
    """Lone surrogates become U+FFFD, whitespace runs one space, other controls vanish."""
    text = scrub_surrogates(text)
    text = _CONTROLS.sub("", _SPACES.sub(" ", text))
    return _SPACES.sub(" ", text).strip()


def _drop_last_word(text: str) -> str:
    """Cut back to the last whitespace (a loop: `\\S+$` is quadratic on long words)."""
    end = len(text)
    while end and not text[end - 1].isspace():
        end -= 1
    return text[:end]


def safe_summary(text: str) -> str:
    """The only way a summary is made: one line, redacted, at most SUMMARY_BYTES bytes."""
    if len(text) > SCAN_CHARS:
        text = _drop_last_word(text[:SCAN_CHARS]) + " " + ELLIPSIS
    return clip_utf8(redact(one_line(text)), SUMMARY_BYTES)
