"""Each wire API against a real local HTTP server replaying recorded-shape streams."""

import json
from pathlib import Path

import pytest

from magi_code.config.credentials import CredentialStore, OAuthTokens
from magi_code.providers.anthropic import AnthropicProvider
from magi_code.providers.base import (
    Completed,
    ModelRequest,
    ProviderEvent,
    ReasoningSummary,
    TextDelta,
    ToolCall,
    ToolCallDone,
    ToolResult,
    ToolSpec,
    Usage,
    UserText,
)
from magi_code.providers.codex import CodexAuth, CodexProvider
from magi_code.providers.openai_chat import OpenAIChatProvider
from magi_code.providers.openai_responses import OpenAIResponsesProvider
from magi_code.providers.policy import HttpPolicy
from providers.local_server import LocalServer, Reply, split_every, sse

pytestmark = pytest.mark.anyio

REQUEST = ModelRequest(
    model="m",
    instructions="be brief",
    items=(
        UserText("hi"),
        ToolCall("c0", "read", '{"path": "a"}'),
        ToolResult("c0", "text"),
        UserText("more"),
    ),
    tools=(ToolSpec("read", "read a file", {"type": "object"}),),
)
POLICY = HttpPolicy(attempts=1)


async def collect(provider: object, request: ModelRequest = REQUEST) -> list[ProviderEvent]:
    return [e async for e in provider.stream(request)]  # type: ignore[attr-defined]


def merged_text(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


# ---- Chat Completions -----------------------------------------------------------------------

CHAT_STREAM = sse(
    (None, {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Grüß "}}]}),
    (None, {"choices": [{"index": 0, "delta": {"content": "dich 🎉"}}]}),
    (
        None,
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "write", "arguments": '{"text": "日'},
                            }
                        ]
                    },
                }
            ]
        },
    ),
    (
        None,
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '本"}'}}]},
                }
            ]
        },
    ),
    (None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    (
        None,
        {
            "choices": [],
            "usage": {
                "prompt_tokens": 11,
                "completion_tokens": 7,
                "prompt_tokens_details": {"cached_tokens": 3},
            },
        },
    ),
    (None, "[DONE]"),
)


async def test_chat_stream_through_a_real_server(server: LocalServer) -> None:
    # 3-byte chunks split the multi-byte characters of text and tool arguments alike
    server.script("/v1/chat/completions", Reply(chunks=split_every(CHAT_STREAM, 3)))
    provider = OpenAIChatProvider("local", server.url + "/v1", "sk-test", POLICY)
    events = await collect(provider)
    assert merged_text(events) == "Grüß dich 🎉"
    assert events[-3:] == [
        ToolCallDone(ToolCall("call_1", "write", '{"text": "日本"}')),
        Usage(11, 7, 3),
        Completed("tool_use"),
    ]
    seen = server.requests[0]
    assert seen.headers["authorization"] == "Bearer sk-test"
    body = json.loads(seen.body)
    assert body["stream"] is True and body["messages"][0] == {
        "role": "system",
        "content": "be brief",
    }
    assert body["messages"][2]["tool_calls"][0]["id"] == "c0"
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "c0", "content": "text"}


async def test_chat_without_a_key_sends_no_authorization(server: LocalServer) -> None:
    server.script(
        "/v1/chat/completions",
        Reply(
            chunks=[
                sse(
                    (
                        None,
                        {
                            "choices": [
                                {"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}
                            ]
                        },
                    ),
                )
            ]
        ),
    )
    events = await collect(OpenAIChatProvider("ollama", server.url + "/v1", None, POLICY))
    assert events == [TextDelta("ok"), Completed("end_turn")]
    assert "authorization" not in server.requests[0].headers


async def test_chat_stream_cut_short_is_malformed(server: LocalServer) -> None:
    server.script("/v1/chat/completions", Reply(chunks=[CHAT_STREAM[:200]]))
    with pytest.raises(Exception) as err:
        await collect(OpenAIChatProvider("x", server.url + "/v1", "k", POLICY))
    assert getattr(err.value, "code", None) == "malformed_stream"


# ---- Responses ------------------------------------------------------------------------------

RESPONSES_STREAM = sse(
    ("response.created", {"type": "response.created", "response": {"id": "r1"}}),
    (
        "response.reasoning_summary_text.delta",
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "summary_index": 0,
            "delta": "Thinking ",
        },
    ),
    (
        "response.reasoning_summary_text.delta",
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "summary_index": 0,
            "delta": "about ü",
        },
    ),
    (
        "response.reasoning_summary_text.done",
        {
            "type": "response.reasoning_summary_text.done",
            "item_id": "rs_1",
            "summary_index": 0,
            "text": "Thinking about ü",
        },
    ),
    ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "Voilà"}),
    (
        "response.function_call_arguments.delta",
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"q": "é'},
    ),
    (
        "response.function_call_arguments.delta",
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '"}'},
    ),
    (
        "response.output_item.done",
        {
            "type": "response.output_item.done",
            "item": {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "grep"},
        },
    ),
    (
        "response.completed",
        {
            "type": "response.completed",
            "response": {
                "usage": {
                    "input_tokens": 20,
                    "output_tokens": 5,
                    "input_tokens_details": {"cached_tokens": 4},
                }
            },
        },
    ),
)


async def test_responses_stream_through_a_real_server(server: LocalServer) -> None:
    chunks = split_every(RESPONSES_STREAM.replace(b"\n", b"\r\n"), 5)
    server.script("/v1/responses", Reply(chunks=chunks))
    provider = OpenAIResponsesProvider("openai", server.url + "/v1", "sk-test", POLICY)
    events = await collect(provider, REQUEST)
    assert events == [
        ReasoningSummary("rs_1", "Thinking about ü"),
        TextDelta("Voilà"),
        ToolCallDone(ToolCall("call_9", "grep", '{"q": "é"}')),
        Usage(20, 5, 4),
        Completed("tool_use"),
    ]
    body = json.loads(server.requests[0].body)
    assert body["instructions"] == "be brief" and body["store"] is False
    assert body["input"][1] == {
        "type": "function_call",
        "call_id": "c0",
        "name": "read",
        "arguments": '{"path": "a"}',
    }


async def test_responses_failed_event_reports_context_overflow(server: LocalServer) -> None:
    server.script(
        "/v1/responses",
        Reply(
            chunks=[
                sse(
                    (
                        "response.failed",
                        {
                            "type": "response.failed",
                            "response": {
                                "error": {"code": "context_length_exceeded", "message": "too long"}
                            },
                        },
                    )
                )
            ]
        ),
    )
    with pytest.raises(Exception) as err:
        await collect(OpenAIResponsesProvider("o", server.url + "/v1", "k", POLICY))
    assert getattr(err.value, "code", None) == "context_overflow"


# ---- Anthropic ------------------------------------------------------------------------------

ANTHROPIC_STREAM = sse(
    (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "usage": {"input_tokens": 30, "cache_read_input_tokens": 8, "output_tokens": 1}
            },
        },
    ),
    (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": ""},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Let me look"},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig"},
        },
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("ping", {"type": "ping"}),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": "Ça marche"},
        },
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 1}),
    (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "edit", "input": {}},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": '{"new": "naï'},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": 've"}'},
        },
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 2}),
    (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 42},
        },
    ),
    ("message_stop", {"type": "message_stop"}),
)


async def test_anthropic_stream_through_a_real_server(server: LocalServer) -> None:
    chunks = split_every(ANTHROPIC_STREAM.replace(b"\n", b"\r"), 7)
    server.script("/v1/messages", Reply(chunks=chunks))
    provider = AnthropicProvider("anthropic", server.url + "/v1", "sk-ant", POLICY)
    request = ModelRequest("claude", "sys", (UserText("hi"),), thinking="low")
    events = await collect(provider, request)
    assert events == [
        ReasoningSummary("thinking-0", "Let me look"),
        TextDelta("Ça marche"),
        ToolCallDone(ToolCall("toolu_1", "edit", '{"new": "naïve"}')),
        Usage(30, 42, 8),
        Completed("tool_use"),
    ]
    seen = server.requests[0]
    assert seen.headers["x-api-key"] == "sk-ant" and "anthropic-version" in seen.headers
    body = json.loads(seen.body)
    assert body["system"] == "sys" and body["thinking"]["type"] == "enabled"


async def test_anthropic_text_is_never_reasoning(server: LocalServer) -> None:
    server.script(
        "/v1/messages",
        Reply(
            chunks=[
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
                            "delta": {"type": "text_delta", "text": "<thinking>x</thinking>"},
                        },
                    ),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    ("message_stop", {"type": "message_stop"}),
                )
            ]
        ),
    )
    events = await collect(AnthropicProvider("a", server.url + "/v1", "k", POLICY))
    assert not any(isinstance(e, ReasoningSummary) for e in events)


# ---- Codex ----------------------------------------------------------------------------------

DONE_STREAM = sse(
    ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "hello"}),
    ("response.completed", {"type": "response.completed", "response": {}}),
)


def _codex(
    server: LocalServer, tmp_path: Path, expires_at: float
) -> tuple[CodexProvider, CredentialStore]:
    store = CredentialStore(tmp_path / "mc")
    store.set_oauth("codex", OAuthTokens("old-access", "refresh-1", expires_at, "acct-1"))
    auth = CodexAuth("codex", store, server.url + "/oauth/token", "client", POLICY)
    return CodexProvider("codex", auth, server.url + "/codex", POLICY), store


async def test_codex_refreshes_an_expired_token_before_the_turn(
    server: LocalServer, tmp_path: Path
) -> None:
    server.script("/oauth/token", Reply.json({"access_token": "new-access", "expires_in": 3600}))
    server.script("/codex/responses", Reply(chunks=[DONE_STREAM]))
    provider, store = _codex(server, tmp_path, expires_at=1.0)
    events = await collect(provider)
    assert events == [TextDelta("hello"), Completed("end_turn")]
    refresh = json.loads(server.requests[0].body)
    assert refresh["grant_type"] == "refresh_token" and refresh["refresh_token"] == "refresh-1"
    stream = server.requests[1].headers
    assert stream["authorization"] == "Bearer new-access"
    assert stream["chatgpt-account-id"] == "acct-1"
    saved = store.oauth("codex")
    assert saved is not None and saved.access_token == "new-access"
    assert saved.refresh_token == "refresh-1"  # kept when the answer carries none


async def test_codex_refreshes_once_on_401_during_a_turn(
    server: LocalServer, tmp_path: Path
) -> None:
    import time

    server.script(
        "/codex/responses", Reply(401, [b'{"error": "expired"}']), Reply(chunks=[DONE_STREAM])
    )
    server.script("/oauth/token", Reply.json({"access_token": "a2", "refresh_token": "r2"}))
    provider, store = _codex(server, tmp_path, expires_at=time.time() + 3600)
    assert await collect(provider) == [TextDelta("hello"), Completed("end_turn")]
    assert [r.path for r in server.requests] == [
        "/codex/responses",
        "/oauth/token",
        "/codex/responses",
    ]
    saved = store.oauth("codex")
    assert saved is not None and saved.refresh_token == "r2"


async def test_codex_refusal_of_refresh_is_auth_failed(server: LocalServer, tmp_path: Path) -> None:
    server.script("/oauth/token", Reply.json({"error": "invalid_grant"}, status=400))
    provider, _ = _codex(server, tmp_path, expires_at=1.0)
    with pytest.raises(Exception) as err:
        await collect(provider)
    assert getattr(err.value, "code", None) == "auth_failed"
    assert [r.path for r in server.requests] == ["/oauth/token"]


def test_chat_tool_calls_without_index_are_kept_apart() -> None:
    from magi_code.providers.openai_chat import ChatStreamState

    state = ChatStreamState()
    for delta in (
        {"id": "a", "function": {"name": "one", "arguments": '{"x":'}},
        {"function": {"arguments": " 1}"}},
        {"id": "b", "function": {"name": "two", "arguments": "{}"}},
    ):
        state.chunk(json.dumps({"choices": [{"delta": {"tool_calls": [delta]}}]}))
    state.chunk(json.dumps({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}))
    assert state.finish_events() == [
        ToolCallDone(ToolCall("a", "one", '{"x": 1}')),
        ToolCallDone(ToolCall("b", "two", "{}")),
        Completed("tool_use"),
    ]


def test_anthropic_tool_input_given_whole() -> None:
    from magi_code.providers.anthropic import MessagesStreamState

    state = MessagesStreamState()
    state.event(
        json.dumps(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "tool_use",
                    "id": "t",
                    "name": "ls",
                    "input": {"dir": "é"},
                },
            }
        )
    )
    assert state.event(json.dumps({"type": "content_block_stop", "index": 0})) == [
        ToolCallDone(ToolCall("t", "ls", '{"dir": "é"}'))
    ]
