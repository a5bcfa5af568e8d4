"""Masking of secret-looking strings in text shown to a frontend.

`redact` keeps a short recognisable prefix and replaces the secret body with ``[REDACTED]``.
Every pattern is linear-time (no nested quantifiers), so redacting a multi-megabyte history
stays cheap. It never logs, stores or returns what it masked. (Temporary home: the lead will
move it to a shared module.)
"""

import re

MASK = "[REDACTED]"

_PEM = re.compile(
    r"-----BEGIN (?P<label>[A-Z0-9 ]{0,40}PRIVATE KEY)-----"
    r".*?(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----|\Z)",
    re.DOTALL,
)
# Each pattern's group "keep" survives; the rest of the match is masked.
_TOKENS = re.compile(
    r"(?P<keep>"
    r"\bsk-(?:ant-|proj-|svcacct-|admin-)?"  # OpenAI / Anthropic style keys
    r"|\bgh[pousr]_|\bgithub_pat_"  # GitHub tokens
    r"|\bglpat-|\bxox[abprs]-|\bAIza"  # GitLab, Slack, Google
    r"|\b(?:AKIA|ASIA)"  # AWS access key IDs
    r")[A-Za-z0-9_\-]{16,}"
    r"|(?P<bearer>\b[Bb]earer\s+)[A-Za-z0-9._~+/=\-]{8,}"
)


def _mask_token(match: re.Match[str]) -> str:
    keep = match.group("keep")
    if keep is None:
        keep = match.group("bearer")
    return keep + MASK


# Substring scans are much faster than a regex pass; most texts contain none of these.
_TRIGGERS = ("sk-", "gh", "github_pat_", "glpat-", "xox", "AIza", "AKIA", "ASIA", "earer")


def redact(text: str) -> str:
    """Return `text` with private keys, API keys, tokens and bearer credentials masked."""
    if "PRIVATE KEY-----" in text:
        text = _PEM.sub(lambda m: f"-----BEGIN {m.group('label')}-----{MASK}", text)
    if any(trigger in text for trigger in _TRIGGERS):
        text = _TOKENS.sub(_mask_token, text)
    return text
