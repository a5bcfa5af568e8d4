"""Presets that work alone (issue 28, item 3), over the real binary and a local HTTP server:
`provider = "openai"` (or "ollama") with nothing else picks the built-in catalog's default
model; `magi-code models` lists a preset in use with its facts, and `--refresh` discovers from
the preset's own listing (Ollama's /api/tags); one rule for an unknown model on every face
(exec, Mission Control, the settings, serve, ACP): refused at startup, the close matches
named."""

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from magi_code.client import LocalAgentClient, environment
from magi_code.config.settings import DEFAULTS
from magi_code.providers import known_models
from providers.local_server import LocalServer, Reply, sse
from support.exec import run_magi_code
from support.settings import places

SECRET = "sk-test-PRESETALONE0123456789abcdef"

RESPONSES_ANSWER = sse(
    ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "Hi."}),
    ("response.completed", {"type": "response.completed", "response": {}}),
)
CHAT_ANSWER = sse(
    (None, {"choices": [{"index": 0, "delta": {"content": "Hi."}}]}),
    (None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    (None, "[DONE]"),
)


def streamed(data: bytes) -> Reply:
    return Reply(200, [data], {"content-type": "text/event-stream"}, content_length=True)


def magi(home: Path, workspace: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_magi_code(list(args), workspace, home, text=True, **env)


@pytest.mark.parametrize(
    ("preset", "path", "answer", "env"),
    [
        ("openai", "/v1/responses", RESPONSES_ANSWER, {"OPENAI_API_KEY": SECRET}),
        ("ollama", "/v1/chat/completions", CHAT_ANSWER, {}),
    ],
)
def test_a_preset_alone_starts_and_picks_its_default_model(
    server: LocalServer,
    tmp_path: Path,
    preset: str,
    path: str,
    answer: bytes,
    env: dict[str, str],
) -> None:
    server.script(path, streamed(answer))
    settings = f'provider = "{preset}"\n[providers.{preset}]\nbase_url = "{server.url}/v1"\n'
    home, workspace = places(tmp_path, settings)
    done = magi(home, workspace, "exec", "hello", **env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hi.\n"
    sent = json.loads(server.requests[0].body)
    assert sent["model"] == known_models.presets()[preset]["default"]
    if env:
        assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


def test_models_lists_a_preset_in_use_with_its_facts(tmp_path: Path) -> None:
    home, workspace = places(tmp_path, "")
    alone = magi(home, workspace, "models")
    assert alone.stdout == "fixture/fixture-model\n", "no preset is in use"
    keyed = magi(home, workspace, "models", OPENAI_API_KEY=SECRET)
    assert keyed.returncode == 0, keyed.stderr
    lines = keyed.stdout.splitlines()
    assert "openai/gpt-5  (default, 400,000 tokens, $1.25 in / $10 out per 1M tokens, images)" in (
        lines
    )
    assert not any(line.startswith("anthropic/") for line in lines)
    cards = json.loads(magi(home, workspace, "models", "--json", OPENAI_API_KEY=SECRET).stdout)
    default = [c for c in cards["models"] if c.get("default")]
    assert [(c["provider"], c["model"], c["source"]) for c in default] == [
        ("openai", "gpt-5", "catalog")
    ]
    assert default[0]["images"] is True and default[0]["context_window"] == 400_000


def test_refresh_discovers_from_each_preset_in_use(server: LocalServer, tmp_path: Path) -> None:
    tags = {"models": [{"name": "qwen3:8b", "model": "qwen3:8b"}, {"name": "gpt-oss:20b"}]}
    server.script("/api/tags", Reply.json(tags))
    server.script("/v1/models", Reply.json({"data": [{"id": "gpt-5.1-preview"}]}))
    settings = (
        f'provider = "ollama"\n[providers.ollama]\nbase_url = "{server.url}/v1"\n'
        f'[providers.openai]\nbase_url = "{server.url}/v1"\n'
    )
    home, workspace = places(tmp_path, settings)
    preview = ("exec", "--provider", "openai", "--model", "gpt-5.1-preview", "hi")
    # before the listing, the catalog does not know the new model: refused, named close

    before = magi(home, workspace, *preview, OPENAI_API_KEY=SECRET)
    assert before.returncode == 2 and "offers no such model: `gpt-5.1-preview`" in before.stderr
    done = magi(home, workspace, "models", "--refresh", "--json", OPENAI_API_KEY=SECRET)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    found = {(c["provider"], c["model"], c["source"]) for c in listed["models"]}
    assert ("ollama", "qwen3:8b", "discovered") in found
    assert ("openai", "gpt-5.1-preview", "discovered") in found
    assert listed["failed"] == []
    assert sorted(r.path for r in server.requests) == ["/api/tags", "/v1/models"]
    auth = {r.path: r.headers.get("authorization") for r in server.requests}
    assert auth == {"/api/tags": None, "/v1/models": f"Bearer {SECRET}"}
    server.script("/v1/responses", streamed(RESPONSES_ANSWER))
    after = magi(home, workspace, *preview, OPENAI_API_KEY=SECRET)
    assert after.returncode == 0, after.stderr  # the listing made it known


def test_refresh_names_why_a_local_listing_failed(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = f'provider = "ollama"\n[providers.ollama]\nbase_url = "http://127.0.0.1:{port}/v1"\n'
    home, workspace = places(tmp_path, settings)
    done = magi(home, workspace, "models", "--refresh")
    assert done.returncode == 0
    assert "magi-code models: listing failed for ollama: The provider could not be reached" in (
        done.stderr
    )
    assert "Is `ollama serve` running?" in done.stderr
    assert "ollama/gpt-oss:20b  (default" in done.stdout  # the catalog's stay listed


MOCKS = '[providers.fixture]\nwire_api = "fixture"\nmodels = ["mock-large", "mock-small"]\n'
NAMED = "offers no such model: `mock-larg`; did you mean `mock-large`"


def test_an_unknown_model_on_the_command_line_is_refused_naming_the_close_one(
    tmp_path: Path,
) -> None:
    from mission_control.terminal import run_in_pty

    home, workspace = places(tmp_path, MOCKS)
    done = magi(home, workspace, "exec", "--model", "mock-larg", "hi")
    assert done.returncode == 2 and NAMED in done.stderr, done.stderr
    code, out = run_in_pty(["--model", "mock-larg", "--prompt", "hi"], workspace, home, {})
    flat = " ".join(out.decode(errors="replace").split())
    assert code == 1 and "model_unknown" in flat and NAMED in flat, flat
    fine = magi(home, workspace, "exec", "--model", "mock-small", "hi")
    assert fine.returncode == 0, fine.stderr


def test_an_unknown_model_in_the_settings_is_refused_on_every_face(tmp_path: Path) -> None:
    from acp import RequestError

    from mission_control.terminal import run_in_pty
    from support.acp import agent

    home, workspace = places(tmp_path, 'model = "mock-larg"\n' + MOCKS)
    done = magi(home, workspace, "exec", "hi")
    assert done.returncode == 2 and "configuration_invalid" in done.stderr
    assert NAMED in done.stderr, done.stderr
    code, out = run_in_pty(["--prompt", "hi"], workspace, home, {})
    flat = " ".join(out.decode(errors="replace").split())
    assert code == 1 and "model_unknown" in flat and NAMED in flat, flat
    with LocalAgentClient.spawn(cwd=workspace, env=environment(home)) as child:
        frame = child.wait(child.send("initialize", {"required_capabilities": ["status"]}))
        assert frame["error"] == {"code": "configuration_invalid"}, frame

    async def scenario() -> None:
        async with agent(workspace, home) as (conn, _):
            with pytest.raises(RequestError) as refused:
                await conn.new_session(cwd=str(workspace), mcp_servers=[])
            assert refused.value.data == {"code": "configuration_invalid"}

    asyncio.run(asyncio.wait_for(scenario(), timeout=60))


def test_the_catalog_describes_every_preset() -> None:
    presets = known_models.presets()
    shipped = {name for name in DEFAULTS["providers"] if name != "fixture"}
    assert set(presets) == shipped
    for name, entry in presets.items():
        assert entry["wire_api"] == DEFAULTS["providers"][name]["wire_api"], name
        assert entry["default"] in entry["models"], name
        for model, facts in entry["models"].items():
            where = f"{name}/{model}"
            assert isinstance(facts["context_window"], int) and facts["context_window"] > 0, where
            assert isinstance(facts["images"], bool), where
            for price in ("input", "cached_input", "output"):
                assert facts[price] is None or facts[price] >= 0, where


def card_of(provider: str, model: str) -> dict[str, Any] | None:
    return known_models.card(provider, DEFAULTS["providers"][provider], model)


def test_a_preset_is_its_name_on_its_own_wire() -> None:
    assert (card_of("openai", "gpt-5") or {}).get("images") is True
    assert (card_of("ollama", "llama3.2") or {}).get("images") is False
    assert card_of("openai", "no-such-model") is None
    elsewhere = {"wire_api": "openai-chat", "base_url": "http://127.0.0.1:1/v1"}
    assert known_models.preset("openai", elsewhere) is None  # another wire: not the preset
    assert known_models.default_model("mine", {"models": ["a", "b"]}) == "a"
    assert known_models.refusal("mine", {"wire_api": "openai-chat"}, "anything", None) is None
