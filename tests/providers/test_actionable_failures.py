"""A provider failure a person can act on (issue 28, item 4): the real binary against a local
HTTP server answering 401/404/429/500 with OpenAI- and Anthropic-shaped error bodies. Every
face a person reads (exec's stderr, Mission Control, ACP's message and error) shows what the
provider said (from the body's JSON: bounded, redacted, no control characters) and what to do;
the local agent's wire (`serve --stdio`) and exec's JSON stdout carry the fixed summary only; a
local server that is not running is named ("is `ollama serve` running?")."""

import asyncio
import json
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from magi_code.providers.error_body import provider_message
from magi_code.providers.limits import PROVIDER_MESSAGE_CHARS, RETRY_ATTEMPTS
from providers.local_server import LocalServer, Reply
from support.exec import exec_run
from support.local_agent import one_turn
from support.settings import places

SECRET = "sk-test-ACTIONABLE0123456789abcdef"
QUICK = {"retry-after-ms": "1"}  # a retried status: the bounded retries cost no waiting


def body(status: int, value: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    raw = json.dumps(value).encode()
    head = {"content-type": "application/json", **(headers or {})}
    return Reply(status, [raw], head, content_length=True)


def openai_error(message: str, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


OPENAI_401 = openai_error(
    f"Incorrect API key provided: {SECRET}. You can find your API key at "
    "https://platform.openai.com/account/api-keys.",
    "invalid_request_error",
    "invalid_api_key",
)
OPENAI_404 = openai_error(
    "The model `gpt-5` does not exist or you do not have access to it.",
    "invalid_request_error",
    "model_not_found",
)
OPENAI_429 = openai_error(
    "Rate limit reached for gpt-5 on tokens per min (TPM): Limit 30000, Used 30000.",
    "tokens",
    "rate_limit_exceeded",
)

# (preset, its endpoint, the replies, what stderr must say)
CASES: dict[str, tuple[str, str, list[Reply], list[str]]] = {
    "openai_401": (
        "openai",
        "/v1/responses",
        [body(401, OPENAI_401)],
        [
            'The provider said: "Incorrect API key provided: [REDACTED]',
            "Run `magi-code login openai`, or set OPENAI_API_KEY.",
        ],
    ),
    "anthropic_401": (
        "anthropic",
        "/v1/messages",
        [body(401, anthropic_error("authentication_error", "invalid x-api-key"))],
        ['"invalid x-api-key"', "Run `magi-code login anthropic`, or set ANTHROPIC_API_KEY."],
    ),
    "openai_404": (
        "openai",
        "/v1/responses",
        [body(404, OPENAI_404)],
        [
            "(HTTP 404)",
            "The model `gpt-5` does not exist or you do not have access to it.",
            "`magi-code models --refresh` lists the models openai offers now.",
        ],
    ),
    "anthropic_404": (
        "anthropic",
        "/v1/messages",
        [body(404, anthropic_error("not_found_error", "model: claude-sonnet-4-5"))],
        ['"model: claude-sonnet-4-5"', "`magi-code models --refresh`"],
    ),
    "openai_429": (
        "openai",
        "/v1/responses",
        [body(429, OPENAI_429, QUICK)] * (RETRY_ATTEMPTS - 1)
        + [body(429, OPENAI_429, {"retry-after": "20"})],
        ["Rate limit reached for gpt-5", "The provider asks to wait 20 s: send the prompt again"],
    ),
    "anthropic_500": (
        "anthropic",
        "/v1/messages",
        [body(500, anthropic_error("api_error", "Internal server error"), QUICK)] * RETRY_ATTEMPTS,
        ["(HTTP 500)", 'The provider said: "Internal server error".'],
    ),
}


def preset_places(tmp_path: Path, preset: str, base_url: str) -> tuple[Path, Path]:
    """MC_HOME selecting `preset` alone, its base URL a local one; and a workspace."""
    return places(
        tmp_path, f'provider = "{preset}"\n[providers.{preset}]\nbase_url = "{base_url}"\n'
    )


def keys() -> dict[str, str]:
    return {"OPENAI_API_KEY": SECRET, "ANTHROPIC_API_KEY": SECRET}


def exec_hello(home: Path, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return exec_run([*args, "hello"], workspace, home, text=True, **keys())


@pytest.mark.parametrize("case", sorted(CASES))
def test_exec_says_what_the_provider_said_and_what_to_do(
    server: LocalServer, tmp_path: Path, case: str
) -> None:
    preset, path, replies, said = CASES[case]
    server.script(path, *replies)
    home, workspace = preset_places(tmp_path, preset, f"{server.url}/v1")
    done = exec_hello(home, workspace)
    assert done.returncode == 1, done.stderr
    for phrase in said:
        assert phrase in done.stderr, (phrase, done.stderr)
    assert SECRET not in done.stderr + done.stdout
    assert len(server.requests) == len(replies), "retried within the bound, then told"


def test_exec_json_keeps_the_summary_on_stdout_and_tells_the_person_on_stderr(
    server: LocalServer, tmp_path: Path
) -> None:
    server.script("/v1/responses", body(401, OPENAI_401))
    home, workspace = preset_places(tmp_path, "openai", f"{server.url}/v1")
    done = exec_hello(home, workspace, "--json")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    diagnostic = next(line["data"] for line in lines if line["event"] == "diagnostic")
    assert diagnostic["summary"] == "The provider refused the credentials. (HTTP 401)"
    assert "detail" not in diagnostic and "Incorrect API key" not in done.stdout
    assert "Incorrect API key provided" in done.stderr and "magi-code login openai" in done.stderr


def test_the_local_agent_wire_carries_the_fixed_summary_only(
    server: LocalServer, tmp_path: Path
) -> None:
    server.script("/v1/responses", body(401, OPENAI_401))
    home, workspace = preset_places(tmp_path, "openai", f"{server.url}/v1")
    events, said = one_turn(workspace, home, **keys())
    frames = json.dumps(said)
    diagnostic = events[-2].data
    assert diagnostic["summary"] == "The provider refused the credentials. (HTTP 401)"
    assert "Incorrect API key" not in frames and "magi-code login" not in frames
    assert SECRET not in frames


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ('provider = "ollama"\n[providers.ollama]\nbase_url = "{url}"\n', "`ollama serve`"),
        (
            'provider = "mine"\n[providers.mine]\nwire_api = "openai-chat"\n'
            'base_url = "{url}"\nmodels = ["m"]\n',
            "the server at http://127.0.0.1:{port}",
        ),
    ],
    ids=["ollama", "compatible"],
)
def test_a_local_server_that_is_not_running_is_named(
    tmp_path: Path, settings: str, named: str
) -> None:
    port = closed_port()
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (home / "settings.toml").write_text(settings.format(url=f"http://127.0.0.1:{port}/v1"))
    done = exec_hello(home, workspace)
    assert done.returncode == 1, done.stderr
    assert "transport_failed: The provider could not be reached" in done.stderr
    assert f"Is {named.format(port=port)} running?" in done.stderr, done.stderr


def test_a_message_is_bounded_redacted_and_has_no_control_characters(
    server: LocalServer, tmp_path: Path
) -> None:
    hostile = "\x1b[31mred\x1b[0m \u202eevil\u202c line\nbreak " + SECRET + " " + "x" * 400
    server.script("/v1/responses", body(400, openai_error(hostile, "invalid_request_error", None)))
    home, workspace = preset_places(tmp_path, "openai", f"{server.url}/v1")
    done = exec_hello(home, workspace)
    said = done.stderr.split('The provider said: "', 1)[1].split('".', 1)[0]
    assert said.startswith("[31mred[0m evil line break [REDACTED] xxx")
    assert len(said) == PROVIDER_MESSAGE_CHARS and said.endswith("…")
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u202e\u202c" for c in said)


def test_the_bound_is_exact_and_only_json_is_read() -> None:
    def shaped(message: str) -> str:
        return json.dumps(openai_error(message, "x", None))

    edge = "m" * (PROVIDER_MESSAGE_CHARS - 1) + "Z"
    assert provider_message(shaped(edge)) == edge  # N characters: whole
    over = edge + "!"
    assert provider_message(shaped(over)) == edge[:-1] + "…"  # N + 1: cut, at N
    assert provider_message("<html><body>Bad gateway: body-marker</body></html>") == ""
    assert provider_message('{"status": 500}') == ""
    assert provider_message('{"error": "model \\"llama9\\" not found"}') == (
        'model "llama9" not found'
    )
    assert provider_message('{"detail": [{"loc": ["body"], "msg": "field required"}]}') == (
        "field required"
    )


def test_mission_control_shows_what_the_provider_said(server: LocalServer, tmp_path: Path) -> None:
    from mission_control.terminal import run_in_pty

    server.script("/v1/responses", body(401, OPENAI_401))
    home, workspace = preset_places(tmp_path, "openai", f"{server.url}/v1")
    from magi_code.config.credentials import CredentialStore

    CredentialStore(home).set_api_key("openai", SECRET)
    code, out = run_in_pty(["--prompt", "hello"], workspace, home, {})
    screen = out.decode(errors="replace")
    assert code == 1, screen
    flat = " ".join(re.sub(r"\x1b\[[0-9;?<>=$]*[A-Za-z]|\x1b\][^\x07]*\x07", "", screen).split())
    assert "Incorrect API key provided" in flat and "magi-code login openai" in flat, flat
    assert SECRET not in screen


def test_acp_says_what_the_provider_said_in_its_message_and_error(
    server: LocalServer, tmp_path: Path
) -> None:
    from acp import RequestError, text_block

    from support.acp import agent

    server.script("/v1/messages", body(401, anthropic_error("authentication_error", "bad key")))
    home, workspace = preset_places(tmp_path, "anthropic", f"{server.url}/v1")
    from magi_code.config.credentials import CredentialStore

    CredentialStore(home).set_api_key("anthropic", SECRET)

    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            with pytest.raises(RequestError) as failed:
                await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
            data, said = failed.value.data, str(failed.value)
            assert (data["code"], data["failure"]) == ("execution_failed", "auth_failed")
            assert said.startswith("auth_failed: ")
            assert '"bad key"' in said and "magi-code login anthropic" in said
            assert "[auth_failed] The provider refused the credentials. (HTTP 401)" in client.text()
            assert "magi-code login anthropic" in client.text()

    asyncio.run(asyncio.wait_for(scenario(), timeout=60))
