"""A provider failure reaches the face as a `diagnostic` carrying its class, before
`run.finished`: driven over the real `serve --stdio` pipes against a local HTTP provider."""

import json
from pathlib import Path

import pytest

from magi_code.providers.limits import RETRY_ATTEMPTS
from providers.local_server import LocalServer, Reply
from providers.test_http_bounds import OVERFLOW
from support.local_agent import one_turn
from support.settings import local_provider_settings, places

SECRET = "sk-test-DIAGNOSTICSECRET0123456789"
BODY_MARKER = "body-text-never-shown"
# Retried statuses answer "Retry-After: 0" so the bounded retries cost no waiting.
NOW = {"retry-after": "0"}


def settings(server: LocalServer) -> str:
    keyed = 'api_key_env = "LOCAL_KEY"\nmodels = ["m"]\n'
    return local_provider_settings(server, "openai-responses", table=keyed)


def failing(status: int) -> Reply:
    body = json.dumps({"error": {"message": f"{BODY_MARKER} {SECRET}"}}).encode()
    return Reply(status, [body], {"content-type": "application/json", **NOW}, content_length=True)


CASES = {
    "auth_failed": ([failing(401)], 401),
    "rate_limited": ([failing(429)] * RETRY_ATTEMPTS, 429),
    "server_error": ([failing(500)] * RETRY_ATTEMPTS, 500),
    "context_overflow": ([Reply(400, [OVERFLOW], content_length=True)], 400),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_provider_failure_is_a_coded_diagnostic_before_run_finished(
    server: LocalServer, tmp_path: Path, code: str
) -> None:
    replies, status = CASES[code]
    server.script("/v1/responses", *replies)
    home, workspace = places(tmp_path, settings(server))
    events, said = one_turn(workspace, home, LOCAL_KEY=SECRET)
    frames = json.dumps(said)
    names = [e.name for e in events]
    assert names[-2:] == ["diagnostic", "run.finished"], names
    diagnostic, finished = events[-2].data, events[-1].data
    assert diagnostic["code"] == code
    assert diagnostic["summary"].endswith(f"(HTTP {status})")
    assert (finished["outcome"], finished["error_code"]) == ("failed", "execution_failed")
    assert SECRET not in frames and BODY_MARKER not in frames and "context_length" not in frames
    assert len(server.requests) == len(replies), "retried within the bound, then told"
