"""Secret-looking strings, found and masked. Used on everything a face shows or stores for
display: deltas, reconciliation, summaries, diagnostics, projected history, status names.

It is a net, not a proof: it masks well-known credential shapes and long high-entropy
tokens, and never returns what it masked.
"""

import re

MASK = "[redacted]"

_PATTERNS = re.compile(
    r"""
    sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}          # OpenAI / Anthropic keys
  | gh[pousr]_[A-Za-z0-9]{20,} | github_pat_[A-Za-z0-9_]{20,}
  | AKIA[0-9A-Z]{16}                               # AWS access key id
  | xox[abprs]-[A-Za-z0-9-]{10,}                   # Slack
  | AIza[0-9A-Za-z_\-]{30,}                        # Google API key
  | eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}   # JWT
  | (?i:bearer)\s+[A-Za-z0-9._~+/\-]{16,}=*
  | -----BEGIN[ A-Z]*PRIVATE\ KEY-----[\s\S]*?(?:-----END[ A-Z]*PRIVATE\ KEY-----|\Z)
  | (?<=://)[^/\s:@]+:[^/\s@]+(?=@)                 # user:password@ in URLs
  | (?i:(?:api[_-]?key|secret|token|password|passwd)\s*[=:]\s*)["']?[^\s"']{8,}
    """,
    re.VERBOSE,
)


def redact(text: str) -> str:
    return _PATTERNS.sub(MASK, text)


def looks_secret(text: str) -> bool:
    return _PATTERNS.search(text) is not None
