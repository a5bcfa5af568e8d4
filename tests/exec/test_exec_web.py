"""The web over real processes: `magi-code exec` against a real local HTTP server.

web_fetch is decided by the `network` permission kind (asked by default, so `exec` refuses it
without a mode that allows it; an `allow` rule by domain runs it) and its page reaches the
model as Markdown. With `[web] search = true` the provider's own search tool is offered
(Responses `web_search`, Anthropic `web_search_20250305`); a search answer streamed in the
shapes the providers document passes through, and the sources it cites end the reply, so the
session keeps them."""

import json
from pathlib import Path
from typing import Any

import pytest

from magi_code.providers.limits import ANTHROPIC_WEB_SEARCHES
from providers.local_server import LocalServer, Reply, sse
from support import sessions
from support.exec import exec_run, json_lines
from support.settings import local_provider
from support.wires import typed

SSE = {"content-type": "text/event-stream"}
CITED = "https://docs.python.org/3/whatsnew/3.14.html"
SOURCES = f"\n\nSources:\n- [What’s New In Python 3.14]({CITED})"


def exec_json(workspace: Path, home: Path, *args: str) -> list[dict[str, Any]]:
    done = exec_run(["--json", *args], workspace, home, timeout=120)
    assert done.stdout.endswith(b"\n"), done.stderr
    return json_lines(done.stdout)


def records(home: Path, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sessions.records(home, lines[0]["data"]["session_id"])


# ---- web_fetch and the network permission ---------------------------------------------------


def fetch_call(url: str) -> Reply:
    call = {
        "index": 0,
        "id": "call_1",
        "function": {"name": "web_fetch", "arguments": json.dumps({"url": url})},
    }
    body = sse(
        (None, {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}),
        (None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        (None, "[DONE]"),
    )
    return Reply(chunks=[body], headers=SSE)


def chat_text(text: str) -> Reply:
    end = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}
    return Reply(chunks=[sse((None, end), (None, "[DONE]"))], headers=SSE)


PAGE = b"<html><head><title>Docs</title></head><body><h2>Install</h2><p>pip install x</p></body>"
ALLOW_PRIVATE = "[web]\nallow_private = true\n"
ALLOW_LOOPBACK = (
    '[[permissions.rules]]\ntool = "web_fetch"\ndomain = "127.0.0.1"\ndecision = "allow"\n'
)


def tool_result(body: bytes) -> str:
    messages = json.loads(body)["messages"]
    [result] = [m["content"] for m in messages if m["role"] == "tool"]
    assert isinstance(result, str)
    return result


def test_a_fetch_is_asked_about_so_exec_refuses_it_by_default(
    workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    with LocalServer() as server:
        local_provider(home, server, "openai-chat", top=ALLOW_PRIVATE)
        server.script("/v1/chat/completions", fetch_call(f"{server.url}/docs"), chat_text("no"))
        lines = exec_json(workspace, home, "read the docs")
        assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2  # no /docs
    assert tool_result(server.requests[1].body) == "The user did not allow this action."
    assert [line["event"] for line in lines].count("approval.requested") == 1


def test_an_allow_rule_by_domain_runs_it_and_the_page_reaches_the_model_as_markdown(
    workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    with LocalServer() as server:
        local_provider(home, server, "openai-chat", top=ALLOW_PRIVATE + ALLOW_LOOPBACK)
        server.script(
            "/docs", Reply(200, [PAGE], {"content-type": "text/html"}, content_length=True)
        )
        server.script("/v1/chat/completions", fetch_call(f"{server.url}/docs"), chat_text("done"))
        lines = exec_json(workspace, home, "read the docs")
        assert [r.path for r in server.requests] == [
            "/v1/chat/completions",
            "/docs",
            "/v1/chat/completions",
        ]
        url = server.url
    assert lines[-1]["data"]["outcome"] == "completed"
    assert "approval.requested" not in [line["event"] for line in lines]
    assert tool_result(server.requests[2].body) == (
        f"URL: {url}/docs\nTitle: Docs\n\n## Install\n\npip install x"
    )
    assert server.requests[1].headers.keys() == {"host", "user-agent", "accept", "accept-encoding"}


def test_without_allow_private_a_rule_still_reaches_no_local_address(
    workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    with LocalServer() as server:
        local_provider(home, server, "openai-chat", top=ALLOW_LOOPBACK)
        server.script("/docs", Reply(200, [PAGE], {"content-type": "text/html"}))
        server.script("/v1/chat/completions", fetch_call(f"{server.url}/docs"), chat_text("no"))
        exec_json(workspace, home, "read the docs")
        assert "/docs" not in [r.path for r in server.requests]
    assert tool_result(server.requests[1].body).startswith("error: private_address: 127.0.0.1")


# ---- the provider's own web search ----------------------------------------------------------


def responses_search() -> Reply:
    """A Responses answer with one web_search_call and a message citing what it found."""
    text = "Python 3.14 was released on 7 October 2025."
    citation = {
        "type": "url_citation",
        "start_index": 0,
        "end_index": len(text),
        "url": CITED,
        "title": "What’s New In Python 3.14",
    }
    search = {"id": "ws_1", "type": "web_search_call", "status": "in_progress"}
    done_search = {
        **search,
        "status": "completed",
        "action": {"type": "search", "query": "python 3.14 release date"},
    }
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress"}
    part = {"type": "output_text", "text": text, "annotations": [citation]}
    usage = {"input_tokens": 310, "output_tokens": 25, "total_tokens": 335}
    body = sse(
        typed("response.created", response={"id": "resp_1", "status": "in_progress"}),
        typed("response.output_item.added", output_index=0, item=search),
        typed("response.web_search_call.in_progress", output_index=0, item_id="ws_1"),
        typed("response.web_search_call.searching", output_index=0, item_id="ws_1"),
        typed("response.web_search_call.completed", output_index=0, item_id="ws_1"),
        typed("response.output_item.done", output_index=0, item=done_search),
        typed("response.output_item.added", output_index=1, item={**message, "content": []}),
        typed(
            "response.content_part.added",
            item_id="msg_1",
            output_index=1,
            content_index=0,
            part={"type": "output_text", "text": "", "annotations": []},
        ),
        typed("response.output_text.delta", item_id="msg_1", output_index=1, delta=text[:20]),
        typed("response.output_text.delta", item_id="msg_1", output_index=1, delta=text[20:]),
        typed(
            "response.output_text.annotation.added",
            item_id="msg_1",
            output_index=1,
            content_index=0,
            annotation_index=0,
            annotation=citation,
        ),
        typed("response.output_text.done", item_id="msg_1", output_index=1, text=text),
        typed("response.content_part.done", item_id="msg_1", output_index=1, part=part),
        typed(
            "response.output_item.done",
            output_index=1,
            item={**message, "status": "completed", "content": [part]},
        ),
        typed(
            "response.completed", response={"id": "resp_1", "status": "completed", "usage": usage}
        ),
    )
    return Reply(chunks=[body], headers=SSE)


def anthropic_search() -> Reply:
    """A Messages answer: text, a server_tool_use web search, its results, cited text."""
    result = {
        "type": "web_search_result",
        "title": "What’s New In Python 3.14",
        "url": CITED,
        "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5",
        "page_age": "October 7, 2025",
    }
    citation = {
        "type": "web_search_result_location",
        "url": CITED,
        "title": "What’s New In Python 3.14",
        "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm",
        "cited_text": "Python 3.14 was released on 7 October 2025.",
    }
    query = json.dumps({"query": "python 3.14 release date"})
    body = sse(
        typed("message_start", message={"id": "msg_1", "usage": {"input_tokens": 2679}}),
        typed("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        typed(
            "content_block_delta", index=0, delta={"type": "text_delta", "text": "Let me look. "}
        ),
        typed("content_block_stop", index=0),
        typed(
            "content_block_start",
            index=1,
            content_block={
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {},
            },
        ),
        typed(
            "content_block_delta",
            index=1,
            delta={"type": "input_json_delta", "partial_json": query},
        ),
        typed("content_block_stop", index=1),
        typed(
            "content_block_start",
            index=2,
            content_block={
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": [result],
            },
        ),
        typed("content_block_stop", index=2),
        typed(
            "content_block_start",
            index=3,
            content_block={"type": "text", "text": "", "citations": []},
        ),
        typed(
            "content_block_delta", index=3, delta={"type": "citations_delta", "citation": citation}
        ),
        typed(
            "content_block_delta",
            index=3,
            delta={"type": "text_delta", "text": "Python 3.14 was released on 7 October 2025."},
        ),
        typed("content_block_stop", index=3),
        typed(
            "message_delta",
            delta={"stop_reason": "end_turn"},
            usage={"output_tokens": 510, "server_tool_use": {"web_search_requests": 1}},
        ),
        typed("message_stop"),
    )
    return Reply(chunks=[body], headers=SSE)


SEARCH = {
    "openai-responses": ("/v1/responses", responses_search, {"type": "web_search"}),
    "anthropic": (
        "/v1/messages",
        anthropic_search,
        {"type": "web_search_20250305", "name": "web_search", "max_uses": ANTHROPIC_WEB_SEARCHES},
    ),
}


@pytest.mark.parametrize("wire", list(SEARCH))
def test_a_provider_search_passes_through_and_its_citations_are_kept(
    wire: str, workspace: Path, tmp_path: Path
) -> None:
    path, answer, tool = SEARCH[wire]
    home = tmp_path / "home"
    with LocalServer() as server:
        local_provider(home, server, wire, top="[web]\nsearch = true\n")
        server.script(path, answer())
        lines = exec_json(workspace, home, "when was python 3.14 released?")
    assert lines[-1]["data"]["outcome"] == "completed"
    [request] = server.requests
    assert tool in json.loads(request.body)["tools"]
    [assistant] = [r for r in records(home, lines) if r["type"] == "assistant"]
    assert assistant["text"].endswith("Python 3.14 was released on 7 October 2025." + SOURCES)
    assert assistant["text"].count(CITED) == 1  # cited twice by Responses, listed once


@pytest.mark.parametrize("wire", list(SEARCH))
def test_without_the_setting_no_search_tool_is_offered(
    wire: str, workspace: Path, tmp_path: Path
) -> None:
    path, answer, tool = SEARCH[wire]
    home = tmp_path / "home"
    with LocalServer() as server:
        local_provider(home, server, wire)
        server.script(path, answer())
        exec_json(workspace, home, "when?")
    tools = json.loads(server.requests[0].body)["tools"]
    assert tool not in tools and all(t.get("type") in (None, "function") for t in tools)
