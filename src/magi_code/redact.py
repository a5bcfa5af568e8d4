"""Secret-looking strings, found and masked: the one redactor of magi-code.

Everything a face shows or stores for display passes through `redact`: deltas,
reconciliation, summaries, diagnostics, projected history, status names. It is a net, not
a proof: it masks well-known credential shapes, bearer/basic tokens, key=value secrets,
URL passwords and PEM private keys, and never returns or logs what it masked.
"""

from __future__ import annotations

import functools
import re

REDACTED = "[REDACTED]"


class _Patterns:
    __slots__ = ("bearer", "key_value", "pem", "tokens", "url_password")

    def __init__(
        self,
        *,
        pem: re.Pattern[str],
        url_password: re.Pattern[str],
        bearer: re.Pattern[str],
        key_value: re.Pattern[str],
        tokens: re.Pattern[str],
    ) -> None:
        self.pem, self.url_password, self.bearer = pem, url_password, bearer
        self.key_value, self.tokens = key_value, tokens


@functools.cache
def patterns() -> _Patterns:
    """Compiled on first need: a status name or most text never needs them (start-up cost)."""
    # Every quantifier is bounded or possessive and no pattern rescans a long run from each of
    # its positions: the text is model-controlled, and this runs on the event loop.
    return _Patterns(
        pem=re.compile(
            r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY-----.*?"
            r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY-----|$)",
            re.S,
        ),
        url_password=re.compile(r"(?i)([a-z][a-z0-9+.-]{0,31}://[^\s/:@]*+):[^\s/]*@"),
        bearer=re.compile(r"(?i)\b(bearer|token|basic)\s++[A-Za-z0-9._~+/=-]{8,}+"),
        key_value=re.compile(
            r"(?i)(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth)"
            r"\s*+([=:])\s*+(\"[^\"]*+\"?|'[^']*+'?|[^\s&;,]++)"
        ),
        tokens=re.compile(
            r"(?<![A-Za-z0-9])(?:"
            r"sk-[A-Za-z0-9_-]{16,}+"
            r"|gh[pousr]_[A-Za-z0-9]{20,}+"
            r"|github_pat_[A-Za-z0-9_]{20,}+"
            r"|(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])"
            r"|xox[abposr]-[A-Za-z0-9-]{10,}+"
            r"|AIza[0-9A-Za-z_-]{30,}+"
            r"|eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]++"
            r")"
        ),
    )


# What each pattern cannot match without: substring tests are far cheaper than a regex pass,
# and most text (a whole history, at open) contains none of them.
_TOKEN_MARKS = (
    *("sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA"),
    *("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "AIza", "eyJ"),
)
_BEARER_MARKS = ("bearer", "token", "basic")
_KEY_MARKS = ("pass", "pwd", "secret", "token", "api", "access", "auth")


def redact(text: str) -> str:
    """Replace every secret-looking substring with a marker; keep the words around it."""
    if "PRIVATE KEY-----" in text:
        text = patterns().pem.sub(REDACTED, text)
    if "://" in text and "@" in text:
        text = patterns().url_password.sub(rf"\1:{REDACTED}@", text)
    lower = text.lower()
    if any(mark in lower for mark in _BEARER_MARKS):
        text = patterns().bearer.sub(rf"\1 {REDACTED}", text)
    if any(mark in lower for mark in _KEY_MARKS) and ("=" in text or ":" in text):
        text = patterns().key_value.sub(rf"\1\2{REDACTED}", text)
    if any(mark in text for mark in _TOKEN_MARKS):
        text = patterns().tokens.sub(REDACTED, text)
    return text


def looks_secret(text: str) -> bool:
    return redact(text) != text
