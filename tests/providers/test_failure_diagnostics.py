"""A provider failure reaches the face as a `diagnostic` carrying its class, before
`run.finished`: driven over the real `serve --stdio` pipes against a local HTTP provider."""

import json
from pathlib import Path

import pytest

from magi_code.client import LocalAgentClient, environment
from magi_code.providers.limits import RETRY_ATTEMPTS
from providers.local_server import LocalServer, Reply
from providers.test_http_bounds import OVERFLOW

SECRET = "sk-test-DIAGNOSTICSECRET0123456789"
BODY_MARKER = "body-text-never-shown"
# Retried statuses answer "Retry-After: 0" so the bounded retries cost no waiting.
NOW = {"retry-after": "0"}


def settings(server: LocalServer) -> str:
    return (
        'provider = "local"\nmodel = "m"\n[providers.local]\nwire_api = "openai-responses"\n'
        f'base_url = "{server.url}/v1"\napi_key_env = "LOCAL_KEY"\nmodels = ["m"]\n'
    )


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
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.toml").write_text(settings(server))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = environment(home, LOCAL_KEY=SECRET)
    with LocalAgentClient.spawn(cwd=workspace, env=env) as child:
        child.request("initialize", {"required_capabilities": ["turn.start"]})
        session_id = child.request("session.create")["session_id"]
        child.request("turn.start", {"session_id": session_id, "prompt": "hi"})
        events = []
        while not events or events[-1].name != "run.finished":
            events.append(child.next_event(30))
        frames = json.dumps(child.frames)
    names = [e.name for e in events]
    assert names[-2:] == ["diagnostic", "run.finished"], names
    diagnostic, finished = events[-2].data, events[-1].data
    assert diagnostic["code"] == code
    assert diagnostic["summary"].endswith(f"(HTTP {status})")
    assert (finished["outcome"], finished["error_code"]) == ("failed", "execution_failed")
    assert SECRET not in frames and BODY_MARKER not in frames and "context_length" not in frames
    assert len(server.requests) == len(replies), "retried within the bound, then told"
