"""Secret-looking strings, found and masked: the one redactor of magi-code.

Everything a face shows or stores for display passes through `redact`: reconciliation,
summaries, diagnostics, projected history, status names. A live stream of deltas passes
through a `LiveRedactor`, which holds back what a later delta could turn into a secret, so
a secret split across deltas is never shown, not even for a moment. It is a net, not a
proof: it masks well-known credential shapes, bearer/basic tokens, key=value secrets, URL
passwords and PEM private keys, and never returns or logs what it masked.
"""

from __future__ import annotations

import functools
import re

from magi_code.limits import LIVE_REDACTION_HOLD_CHARS
from magi_code.records import KW_ONLY, record

REDACTED = "[REDACTED]"

# The well-known token shapes, the one table of them: (what it is, the marks it cannot match
# without (case-sensitive substrings, the cheap pre-check), its pattern). Each pattern starts
# with its mark, has no lookbehind of its own (one, shared, is put before them all: no letter
# or digit right before a token) and is bounded or possessive.
TOKEN_SHAPES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("anthropic", ("sk-ant-",), r"sk-ant-[A-Za-z0-9_-]{16,}+"),
    ("anthropic-underscore", ("sk_ant_",), r"sk_ant_[A-Za-z0-9_-]{16,}+"),
    ("openai", ("sk-",), r"sk-[A-Za-z0-9_-]{16,}+"),  # sk-proj-, sk-svcacct-, sk-ant- too
    ("github", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{20,}+"),
    ("github-fine-grained", ("github_pat_",), r"github_pat_[A-Za-z0-9_]{20,}+"),
    ("gitlab", ("glpat-",), r"glpat-[A-Za-z0-9_-]{20,}+"),
    (
        "slack",
        ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-"),
        r"xox[abposr]-[A-Za-z0-9-]{10,}+",
    ),
    (
        "stripe",
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
        r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}+",
    ),
    ("aws-access-key-id", ("AKIA", "ASIA"), r"(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])"),
    ("google", ("AIza",), r"AIza[0-9A-Za-z_-]{30,}+"),
    ("npm", ("npm_",), r"npm_[A-Za-z0-9]{30,}+"),
    ("pypi", ("pypi-",), r"pypi-[A-Za-z0-9_-]{40,}+"),
    ("hugging-face", ("hf_",), r"hf_[A-Za-z0-9]{30,}+"),
    ("jwt", ("eyJ",), r"eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]++"),
)


@record
class _Patterns:
    _: KW_ONLY
    pem: re.Pattern[str]
    url_password: re.Pattern[str]
    bearer: re.Pattern[str]
    key_value: re.Pattern[str]
    tokens: re.Pattern[str]


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
            r"(?<![A-Za-z0-9])(?:" + "|".join(shape for _, _, shape in TOKEN_SHAPES) + ")"
        ),
    )


# What each pattern cannot match without: substring tests are far cheaper than a regex pass,
# and most text (a whole history, at open) contains none of them.
_TOKEN_MARKS = tuple(mark for _, marks, _ in TOKEN_SHAPES for mark in marks)
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


def has_token(text: str) -> bool:
    """Whether `text` holds one of the well-known token shapes (TOKEN_SHAPES); compiled only
    for text with a mark of one."""
    return any(mark in text for mark in _TOKEN_MARKS) and bool(patterns().tokens.search(text))


# A cut goes back to the start of the word it falls in (exactly as `redact` sees the whole
# text) unless that word is longer than this; then it may fall inside the word, at least
# _LOOKAHEAD_CHARS from the end: more than any secret needs before it matches, but for the
# open shapes (a URL's userinfo, a JWT) that `_open_secret` holds back.
_WORD_CHARS = 256
_LOOKAHEAD_CHARS = 80  # > a PEM header ("-----BEGIN" + 40 + " PRIVATE KEY-----") or a token
_PEM_HEADER_CHARS = 66
_LAST_BREAK = re.compile(r"\s(?=\S*\Z)")  # the last whitespace before the end (linear)
_JOINERS = "=:\"'"  # with whitespace, what may stand between a keyword and its secret
_KEYWORDS = (
    *_BEARER_MARKS,
    *("password", "passwd", "pwd", "secret", "auth"),
    *("apikey", "api_key", "api-key", "accesskey", "access_key", "access-key"),
)
_SCHEME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_JWT = re.compile(r"(?<![A-Za-z0-9])eyJ[A-Za-z0-9_.-]*+\Z")


def _secret_spans(text: str) -> list[tuple[int, int]]:
    """The spans of the secrets in `text`; the patterns are compiled only for text that has
    a mark of one (most text has none)."""
    lower, found = text.lower(), []
    if "PRIVATE KEY-----" in text:
        found.append(patterns().pem)
    if "://" in text and "@" in text:
        found.append(patterns().url_password)
    if any(mark in lower for mark in _BEARER_MARKS):
        found.append(patterns().bearer)
    if any(mark in lower for mark in _KEY_MARKS):
        found.append(patterns().key_value)
    if any(mark in text for mark in _TOKEN_MARKS):
        found.append(patterns().tokens)
    return [match.span() for pattern in found for match in pattern.finditer(text)]


def _word_start(text: str, cut: int) -> int:
    word = _LAST_BREAK.search(text, 0, cut)
    start = word.end() if word else 0
    return start if cut - start <= _WORD_CHARS else min(cut, len(text) - _LOOKAHEAD_CHARS)


def _keyword_start(lower: str, cut: int) -> int:
    """Not right after a keyword that a secret may follow ("password = ", "Bearer "), nor
    inside one (`lower` is the text lowercased)."""
    end = cut
    while end > 0 and (lower[end - 1].isspace() or lower[end - 1] in _JOINERS):
        end -= 1
    # Only while the word at the cut is still open can it become the secret a keyword before
    # it announces; a finished word there is decided already (and a secret in it is a span).
    open_word = not any(c.isspace() for c in lower[cut:])
    if open_word and lower.endswith(_KEYWORDS, 0, end):
        return min(end - len(k) for k in _KEYWORDS if lower.endswith(k, 0, end))
    longest = max(map(len, _KEYWORDS))
    for keyword in _keyword_pattern().finditer(lower, max(0, cut - longest), cut + longest):
        if keyword.start() < cut < keyword.end():
            return keyword.start()
    return cut


@functools.cache
def _keyword_pattern() -> re.Pattern[str]:
    return re.compile("|".join(sorted(map(re.escape, _KEYWORDS), key=len, reverse=True)))


def _open_secret(text: str, cut: int) -> int:
    """Not after the start of a secret that is still open: a PEM header not yet complete, a
    URL whose userinfo has not ended, a JWT still going on."""
    header = text.find("-----BEGIN", max(0, len(text) - _PEM_HEADER_CHARS))
    if 0 <= header < cut:
        cut = header
    url = text.rfind("://")
    if url >= 0 and not any(c.isspace() or c == "/" for c in text[url + 3 :]):
        scheme = url
        while scheme > max(0, url - 32) and text[scheme - 1] in _SCHEME:
            scheme -= 1
        cut = min(cut, scheme)
    jwt = _JWT.search(text, max(0, cut - _WORD_CHARS - _LOOKAHEAD_CHARS))
    return min(cut, jwt.start()) if jwt else cut


def _safe_cut(text: str) -> int:
    """The longest prefix of `text` that nothing appended later can make part of a secret:
    it ends where a word starts (or deep inside a very long word), not inside or right
    after a keyword, not after the start of an open secret, and never inside a secret
    already there that reaches the end (it may go on)."""
    spans, lower = _secret_spans(text), text.lower()
    cut = len(text)
    while True:
        moved = _open_secret(text, _keyword_start(lower, _word_start(text, cut)))
        last = len(text) - 1  # a secret ending here or at the end may still grow
        moved = min([moved, *(a for a, b in spans if a < moved and (moved < b or b >= last))])
        if moved == cut:
            return cut
        cut = moved


class LiveRedactor:
    """Redacts a text that arrives in pieces. `feed` returns the redacted part that no later
    piece can change and holds back the rest (the last word, and what may begin a secret);
    `end` returns the rest, redacted. Joined, they show what `redact` shows for the whole
    text (words longer than _WORD_CHARS may be cut, and then masked more, never less). A
    held-back part longer than LIVE_REDACTION_HOLD_CHARS (a secret still open, a very long
    word) silences the stream for the rest of the text: the reconciled copy shows it."""

    def __init__(self) -> None:
        self._held = ""
        self._silenced = False

    def feed(self, text: str) -> str:
        if self._silenced:
            return ""
        self._held += text
        cut = _safe_cut(self._held)
        shown, self._held = self._held[:cut], self._held[cut:]
        if len(self._held) > LIVE_REDACTION_HOLD_CHARS:
            self._held, self._silenced = "", True
        return redact(shown) if shown else ""

    def end(self) -> str:
        rest, self._held = self._held, ""
        return "" if self._silenced or not rest else redact(rest)
