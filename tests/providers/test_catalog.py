"""Model discovery against a real local server: cache freshness, refresh, empty listings,
failures keeping the last listing; `magi-code models --json` and `melchior models` end to end."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from magi_code.config.credentials import CredentialStore
from magi_code.limits import DISCOVERY_CACHE_S
from magi_code.providers.catalog import CACHE_FILE, build_catalog, parse_listing
from magi_code.providers.policy import HttpPolicy
from providers.local_server import LocalServer, Reply

pytestmark = pytest.mark.anyio

POLICY = HttpPolicy(attempts=1)


def listing(*ids: str) -> Reply:
    return Reply.json({"object": "list", "data": [{"id": i, "object": "model"} for i in ids]})


def conf(server: LocalServer, **extra: object) -> dict[str, dict[str, object]]:
    return {
        "local": {
            "wire_api": "openai-chat",
            "base_url": server.url + "/v1",
            "models": ["pinned"],
            "discover": True,
            **extra,
        }
    }


def discovered(cards: list[dict[str, object]]) -> list[object]:
    return [c["model"] for c in cards if c["source"] == "discovered"]


async def test_fresh_cache_is_used_and_refresh_bypasses_it(
    server: LocalServer, tmp_path: Path
) -> None:
    store = CredentialStore(tmp_path)
    server.script("/v1/models", listing("a", "b"), listing("c"))
    first = await build_catalog(
        conf(server), tmp_path, store, {}, sent_to=conf(server), policy=POLICY, now=1000.0
    )
    assert discovered(first.cards) == ["a", "b"] and first.failed == []
    assert first.cards[0] == {"provider": "local", "model": "pinned", "source": "configured"}
    # within the cache's life: no request
    edge = 1000.0 + DISCOVERY_CACHE_S - 1
    cached = await build_catalog(
        conf(server), tmp_path, store, {}, sent_to=conf(server), policy=POLICY, now=edge
    )
    assert discovered(cached.cards) == ["a", "b"] and len(server.requests) == 1
    refreshed = await build_catalog(
        conf(server),
        tmp_path,
        store,
        {},
        refresh=True,
        policy=POLICY,
        now=edge,
        sent_to=conf(server),
    )
    assert discovered(refreshed.cards) == ["c"] and refreshed.refreshed
    assert len(server.requests) == 2


async def test_stale_cache_is_fetched_again(server: LocalServer, tmp_path: Path) -> None:
    store = CredentialStore(tmp_path)
    server.script("/v1/models", listing("a"), listing("b"))
    await build_catalog(
        conf(server), tmp_path, store, {}, sent_to=conf(server), policy=POLICY, now=0.0
    )
    later = await build_catalog(
        conf(server),
        tmp_path,
        store,
        {},
        policy=POLICY,
        now=float(DISCOVERY_CACHE_S),
        sent_to=conf(server),
    )
    assert discovered(later.cards) == ["b"] and len(server.requests) == 2


async def test_empty_listing_replaces_and_failure_keeps_last(
    server: LocalServer, tmp_path: Path
) -> None:
    store = CredentialStore(tmp_path)
    server.script("/v1/models", listing("a"), Reply(500, [b"down"]), listing())
    run = {
        "providers": conf(server),
        "mc_home": tmp_path,
        "credentials": store,
        "env": {},
        "sent_to": conf(server),
    }
    await build_catalog(**run, policy=POLICY, refresh=True)  # type: ignore[arg-type]
    failed = await build_catalog(**run, policy=POLICY, refresh=True)  # type: ignore[arg-type]
    assert failed.failed == ["local"] and discovered(failed.cards) == ["a"]
    empty = await build_catalog(**run, policy=POLICY, refresh=True)  # type: ignore[arg-type]
    assert empty.failed == [] and discovered(empty.cards) == []
    cache = json.loads((tmp_path / CACHE_FILE).read_text())
    assert cache["local"]["models"] == []


async def test_anthropic_listing_sends_its_headers(server: LocalServer, tmp_path: Path) -> None:
    store = CredentialStore(tmp_path)
    store.set_api_key("claude", "sk-ant")
    server.script("/v1/models", Reply.json({"data": [{"id": "claude-x", "type": "model"}]}))
    providers = {
        "claude": {"wire_api": "anthropic", "base_url": server.url + "/v1", "discover": True}
    }
    result = await build_catalog(providers, tmp_path, store, {}, policy=POLICY, sent_to=providers)
    assert discovered(result.cards) == ["claude-x"]
    assert server.requests[0].headers["x-api-key"] == "sk-ant"
    assert server.requests[0].method == "GET"


def test_parse_listing_shapes() -> None:
    assert parse_listing('{"models": [{"slug": "gpt-5-codex"}, {"id": "x"}, 3]}') == [
        "gpt-5-codex",
        "x",
    ]
    with pytest.raises(Exception) as err:
        parse_listing("[]")
    assert getattr(err.value, "code", None) == "malformed_stream"


# ---- the command lines, as real subprocesses ------------------------------------------------


def harness(tmp_path: Path, server: LocalServer) -> tuple[Path, dict[str, str]]:
    """A stand-in `magi-code` binary that routes `models` to commands.models, as the CLI will."""
    script = tmp_path / "magi-code"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\nfrom pathlib import Path\n"
        "from magi_code.providers.commands import models\n"
        "assert sys.argv[1] == 'models'\n"
        "settings = json.loads(os.environ['TEST_SETTINGS'])\n"
        "providers = settings['providers']  # the user's own: credentials may go to each\n"
        "sys.exit(models(sys.argv[2:], Path(os.environ['MC_HOME']), settings, providers))\n"
    )
    script.chmod(0o755)
    settings = {"provider": "local", "providers": conf(server)}
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "MC_HOME": str(tmp_path / "mc"),
        "MAGI_CODE_BIN": str(script),
        "TEST_SETTINGS": json.dumps(settings),
    }
    return script, env


def test_magi_code_models_json(server: LocalServer, tmp_path: Path) -> None:
    script, env = harness(tmp_path, server)
    server.script("/v1/models", listing("m1"))
    done = subprocess.run(
        [str(script), "models", "--refresh", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["refreshed"] is True and out["failed"] == []
    assert [c["model"] for c in out["models"]] == ["pinned", "m1"]


def test_melchior_models_reply(server: LocalServer, tmp_path: Path) -> None:
    _, env = harness(tmp_path, server)
    server.script("/v1/models", Reply(503, [b"x"]))
    run = [
        sys.executable,
        "-c",
        "import sys; from melchior.models import main; sys.exit(main(sys.argv[1:]))",
    ]
    done = subprocess.run(
        [*run, "--refresh", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply == {
        "ok": True,
        "family": 1,
        "n": 1,
        "result": [{"provider": "local", "model": "pinned", "source": "configured"}],
        "refreshed": True,
        "failed": ["local"],
    }
    assert server.requests and server.requests[0].path == "/v1/models"


def test_melchior_models_without_a_harness(tmp_path: Path) -> None:
    env = {**os.environ, "MAGI_CODE_BIN": str(tmp_path / "missing"), "HOME": str(tmp_path)}
    run = [
        sys.executable,
        "-c",
        "import sys; from melchior.models import main; sys.exit(main(sys.argv[1:]))",
    ]
    done = subprocess.run(
        [*run, "--json"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1
    assert json.loads(done.stdout) == {
        "ok": False,
        "family": 1,
        "n": 0,
        "result": [],
        "code": "harness_unavailable",
    }
