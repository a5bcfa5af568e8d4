"""The HTTP stack is imported only when a client is built, never by importing providers."""

import subprocess
import sys

from magi_code.limits import ERROR_BODY_BYTES, ERROR_BODY_DEADLINE_S, STREAM_INACTIVITY_S
from magi_code.providers.http import HttpPolicy

MODULES = [
    "magi_code.providers.registry",
    "magi_code.providers.sse",
    "magi_code.providers.http",
    "magi_code.providers.openai_chat",
    "magi_code.providers.openai_responses",
    "magi_code.providers.anthropic",
    "magi_code.providers.codex",
    "magi_code.config.credentials",
]


def test_no_http_stack_at_import() -> None:
    code = (
        f"import sys\nfor m in {MODULES!r}: __import__(m)\n"
        "heavy = ('httpx2', 'httpcore2', 'openai')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in heavy)\n"
        "print(bad)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_default_policy_uses_the_spec_bounds() -> None:
    policy = HttpPolicy()
    assert policy.body_bytes == ERROR_BODY_BYTES
    assert policy.body_deadline_s == ERROR_BODY_DEADLINE_S
    assert policy.inactivity_s == STREAM_INACTIVITY_S
