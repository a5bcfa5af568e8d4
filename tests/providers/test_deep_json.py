"""JSON nested too deep from a provider is the provider's error, never a RecursionError: over
the real `magi-code exec` and `magi-code models` against a local HTTP server, and `melchior
models` against a harness that prints it. At most UNTRUSTED_JSON_DEPTH containers are read;
one more is refused, and so is nesting just under Python's recursion limit or far past it."""

import base64
import json
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from magi_code import untrusted_json
from magi_code.client import environment
from magi_code.limits import UNTRUSTED_JSON_DEPTH
from magi_code.providers.base import ProviderError
from magi_code.providers.codex import account_id_from_id_token, tokens_from_answer
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.signin import Endpoints, SignInFailed, device_sign_in
from magi_code.providers.wire import event_json
from providers.local_server import LocalServer, Reply, sse
from support.exec import exec_run, json_lines, run_magi_code
from support.settings import local_provider_settings, places

UNDER_THE_RECURSION_LIMIT = sys.getrecursionlimit() - 10


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def settings(server: LocalServer) -> str:
    keyed = 'api_key_env = "LOCAL_KEY"\nmodels = ["m"]\ndiscover = true\n'
    return local_provider_settings(server, table=keyed)


def exec_json(home: Path, workspace: Path) -> tuple[subprocess.CompletedProcess[bytes], list[Any]]:
    done = exec_run(["--json", "hi"], workspace, home, LOCAL_KEY="k")
    return done, json_lines(done.stdout)


@pytest.mark.parametrize(
    ("depth", "read"),
    [
        (UNTRUSTED_JSON_DEPTH, True),
        (UNTRUSTED_JSON_DEPTH + 1, False),
        (UNDER_THE_RECURSION_LIMIT, False),
        (100_000, False),
    ],
)
def test_a_deep_event_ends_the_run_as_a_malformed_stream(
    server: LocalServer, tmp_path: Path, depth: int, read: bool
) -> None:
    """The event object holds lists `depth - 1` deep. Before, 100_000 (or ~990) raised
    RecursionError out of the wire's parser: the run ended failed with no diagnostic and its
    journal not closed (persistence degraded)."""
    first = {"choices": [{"index": 0, "delta": {"content": "hi"}}]}
    nested = '{"choices":[],"x":' + deep(depth - 1) + "}"
    body = sse((None, first), (None, nested), (None, "[DONE]"))
    server.script("/v1/chat/completions", Reply(200, [body], {"content-type": "text/event-stream"}))
    done, events = exec_json(*places(tmp_path, settings(server)))
    finished = events[-1]
    assert finished["event"] == "run.finished", events
    assert finished["data"]["persistence"] == "durable"
    assert b"Traceback" not in done.stderr
    if read:
        assert (done.returncode, finished["data"]["outcome"]) == (0, "completed"), events
    else:
        assert done.returncode == 1
        assert events[-2]["event"] == "diagnostic", events
        assert events[-2]["data"]["code"] == "malformed_stream"
        assert (finished["data"]["outcome"], finished["data"]["error_code"]) == (
            "failed",
            "execution_failed",
        )


def test_a_deep_model_listing_is_a_failed_listing(server: LocalServer, tmp_path: Path) -> None:
    """`magi-code models --refresh --json`: the listing is refused (before: a traceback)."""
    home, workspace = places(tmp_path, settings(server))
    server.script("/v1/models", Reply(200, [deep(100_000).encode()], content_length=True))
    done = run_magi_code(["models", "--refresh", "--json"], workspace, home, LOCAL_KEY="k")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert listing["failed"] == ["local"]
    assert "m" in [card["model"] for card in listing["models"]]  # the configured one stays


def test_melchior_models_refuses_a_deep_harness_reply(tmp_path: Path) -> None:
    harness = tmp_path / "magi-code"
    harness.write_text(f"#!/bin/sh\nexec {sys.executable} -c \"print('[' * 100_000)\"\n")
    harness.chmod(0o755)
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from melchior.models import main; sys.exit(main([]))"],
        env=environment(tmp_path / "home", MAGI_CODE_BIN=str(harness)),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert json.loads(done.stdout)["code"] == "harness_failed"
    assert done.stderr == b""


def test_event_json_reads_its_bound_and_refuses_one_more() -> None:
    assert event_json('{"x":' + deep(UNTRUSTED_JSON_DEPTH - 1) + "}")["x"] == (
        json.loads(deep(UNTRUSTED_JSON_DEPTH - 1))
    )
    for depth in (UNTRUSTED_JSON_DEPTH, UNDER_THE_RECURSION_LIMIT, 100_000):
        with pytest.raises(ProviderError) as refused:
            event_json('{"x":' + deep(depth) + "}")
        assert refused.value.code == "malformed_stream"


def test_token_answers_nested_too_deep_are_refused() -> None:
    """The token endpoint's answer and an id token's claims (codex.py)."""
    with pytest.raises(ProviderError) as refused:
        tokens_from_answer(deep(30_000), "refresh", 0.0, None)
    assert refused.value.code == "auth_failed"
    payload = base64.urlsafe_b64encode(deep(30_000).encode()).decode().rstrip("=")
    assert account_id_from_id_token(f"h.{payload}.s") is None


@pytest.mark.anyio
async def test_deep_sign_in_answers_fail_the_sign_in(server: LocalServer) -> None:
    """The device flow's start, then its token answer (signin.py): each a refused answer."""
    endpoints = Endpoints(device_url=server.url + "/device", token_url=server.url + "/token")
    policy = HttpPolicy(attempts=1)
    nested = Reply(200, [deep(30_000).encode()], content_length=True)
    server.script("/device", nested, Reply.json({"device_code": "d", "user_code": "u"}))
    server.script("/token", nested)
    with pytest.raises(SignInFailed, match="could not start"):
        await device_sign_in(endpoints, policy=policy)
    with pytest.raises(SignInFailed, match="no access token"):
        await device_sign_in(endpoints, policy=policy)


@pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="json counts C recursion apart from Python's from 3.12"
)
def test_loads_turns_a_recursion_error_into_value_error() -> None:
    """Within the bound, but called on a stack already near Python's recursion limit: the
    parser's RecursionError is still a ValueError."""

    def frames() -> int:
        frame: FrameType | None = sys._getframe()
        count = 0
        while frame is not None:
            frame, count = frame.f_back, count + 1
        return count

    def nested(more: int) -> object:
        return nested(more - 1) if more else untrusted_json.loads(deep(UNTRUSTED_JSON_DEPTH))

    room = sys.getrecursionlimit() - frames()
    assert untrusted_json.loads(deep(UNTRUSTED_JSON_DEPTH))  # with room, it reads
    with pytest.raises(ValueError, match="too deep for the stack"):
        nested(room - UNTRUSTED_JSON_DEPTH // 2)
