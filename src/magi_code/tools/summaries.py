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

REDACTED = "[REDACTED]"
ELLIPSIS = "…"

# Redaction runs over a bounded prefix; the cut drops the last whitespace-free run, which
# might be the start of a secret too short for its pattern.
SCAN_CHARS = 16 * SUMMARY_BYTES

_SURROGATES = re.compile("[\ud800-\udfff]")
_SPACES = re.compile(r"[\s\u0085\u2028\u2029]+")
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")

# Every quantifier is bounded or possessive and no pattern rescans a long run from each of
# its positions: the text is model-controlled, and this runs on the event loop.
_PEM = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY-----.*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY-----|$)",
    re.S,
)
_URL_PASSWORD = re.compile(r"(?i)([a-z][a-z0-9+.-]{0,31}://[^\s/:@]*+):[^\s/]*@")
_BEARER = re.compile(r"(?i)\b(bearer|token|basic)\s++[A-Za-z0-9._~+/=-]{8,}+")
_KEY_VALUE = re.compile(
    r"(?i)(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth)"
    r"\s*+([=:])\s*+(\"[^\"]*+\"?|'[^']*+'?|[^\s&;,]++)"
)
_TOKENS = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"sk-[A-Za-z0-9_-]{16,}+"
    r"|gh[pousr]_[A-Za-z0-9]{20,}+"
    r"|github_pat_[A-Za-z0-9_]{20,}+"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}+"
    r"|AIza[0-9A-Za-z_-]{30,}+"
    r"|eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]++"
    r")"
)


def redact(text: str) -> str:
    """Replace every secret-looking substring with a marker; keep the words around it."""
    text = _PEM.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(rf"\1:{REDACTED}@", text)
    text = _BEARER.sub(rf"\1 {REDACTED}", text)
    text = _KEY_VALUE.sub(rf"\1\2{REDACTED}", text)
    return _TOKENS.sub(REDACTED, text)


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
