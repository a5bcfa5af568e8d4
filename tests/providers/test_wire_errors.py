"""The boundary cases replayed through every wire API's real client code, not just one."""

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from magi_code.config.credentials import CredentialStore, OAuthTokens
from magi_code.providers.anthropic import AnthropicProvider
from magi_code.providers.base import Completed, Provider, ProviderError, TextDelta
from magi_code.providers.codex import CodexAuth, CodexProvider
from magi_code.providers.openai_chat import OpenAIChatProvider
from magi_code.providers.openai_responses import OpenAIResponsesProvider
from magi_code.providers.policy import HttpPolicy
from providers.local_server import LocalServer, Reply, sse
from providers.test_http_bounds import OVERFLOW, Sleeps
from providers.test_wire_apis import collect

pytestmark = pytest.mark.anyio

Build = Callable[[LocalServer, Path, HttpPolicy], Provider]


def _codex(server: LocalServer, tmp: Path, policy: HttpPolicy) -> Provider:
    store = CredentialStore(tmp / "mc")
    store.set_oauth("codex", OAuthTokens("a", "r", time.time() + 3600))
    auth = CodexAuth("codex", store, server.url + "/oauth/token", "cid", policy)
    return CodexProvider("codex", auth, server.url + "/v1", policy)


RESPONSES_OK = sse(
    ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "é"}),
    ("response.completed", {"type": "response.completed", "response": {}}),
)
WIRES: dict[str, tuple[str, Build, bytes]] = {
    "openai-chat": (
        "/v1/chat/completions",
        lambda s, t, p: OpenAIChatProvider("c", s.url + "/v1", "k", p),
        sse(
            (None, {"choices": [{"delta": {"content": "é"}, "finish_reason": "stop"}]}),
            (None, "[DONE]"),
        ),
    ),
    "openai-responses": (
        "/v1/responses",
        lambda s, t, p: OpenAIResponsesProvider("r", s.url + "/v1", "k", p),
        RESPONSES_OK,
    ),
    "anthropic": (
        "/v1/messages",
        lambda s, t, p: AnthropicProvider("a", s.url + "/v1", "k", p),
        sse(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "é"},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ),
    ),
    "codex": ("/v1/responses", _codex, RESPONSES_OK),
}


@pytest.fixture(params=sorted(WIRES))
def wire(request: pytest.FixtureRequest) -> tuple[str, Build, bytes]:
    return WIRES[request.param]


def ends_well(events: Sequence[object]) -> bool:
    return TextDelta("é") in events and isinstance(events[-1], Completed)


async def test_429_then_success(
    server: LocalServer, tmp_path: Path, wire: tuple[str, Build, bytes]
) -> None:
    path, build, ok = wire
    sleeps = Sleeps()
    server.script(path, Reply(429, [b"{}"], {"retry-after": "2"}), Reply(chunks=[ok]))
    events = await collect(build(server, tmp_path, HttpPolicy(attempts=2, sleep=sleeps)))
    assert ends_well(events) and sleeps.delays == [2.0]


async def test_context_overflow_body(
    server: LocalServer, tmp_path: Path, wire: tuple[str, Build, bytes]
) -> None:
    path, build, _ = wire
    server.script(path, Reply(400, [OVERFLOW]))
    with pytest.raises(ProviderError) as err:
        await collect(build(server, tmp_path, HttpPolicy(attempts=2, sleep=Sleeps())))
    assert err.value.code == "context_overflow"


async def test_malformed_utf8_then_success(
    server: LocalServer, tmp_path: Path, wire: tuple[str, Build, bytes]
) -> None:
    path, build, ok = wire
    server.script(path, Reply(chunks=[ok.replace("é".encode(), b"\xe9")]), Reply(chunks=[ok]))
    events = await collect(build(server, tmp_path, HttpPolicy(attempts=2, sleep=Sleeps())))
    assert ends_well(events) and len(server.requests) == 2


async def test_inactivity_mid_stream(
    server: LocalServer, tmp_path: Path, wire: tuple[str, Build, bytes]
) -> None:
    path, build, ok = wire
    first_event = ok[: ok.index(b"\n\n") + 2]
    server.script(path, Reply(chunks=[first_event], hang=True))
    policy = HttpPolicy(attempts=2, inactivity_s=0.3, sleep=Sleeps())
    with pytest.raises(ProviderError) as err:
        await collect(build(server, tmp_path, policy))
    assert err.value.code == "transport_failed"
