"""Text that cannot be stored or framed, over real pipes: a prompt holding a lone surrogate
is refused at admission; a model reply holding one (fixture or a real OpenAI Chat wire on a
local HTTP server) is made encodable where it enters, and the child still ends on EOF."""

import json
from pathlib import Path
from typing import Any

import pytest

from magi_code.client import ErrorResponse, Event, LocalAgentClient
from magi_code.limits import FRAME_BYTES
from magi_code.providers.fixture import split_text
from magi_code.redact import redact
from providers.local_server import LocalServer, Reply, sse
from support.sessions import script
from support.settings import local_provider

from .conftest import Spawn
from .turns import attach, pages, reconciled, run, start

LONE = ["hi \ud800 there", "\ude00\ud83d reversed pair", "ends high \udbff", "\udc00"]


@pytest.mark.parametrize("prompt", LONE)
def test_a_prompt_that_cannot_be_stored_is_refused_at_admission(
    spawn: Spawn, home: Path, prompt: str
) -> None:
    child = spawn()
    sid = attach(child)
    with pytest.raises(ErrorResponse) as refused:
        start(child, sid, prompt)
    assert refused.value.code == "invalid_params"
    assert child.request("status")["run_id"] is None
    assert list((home / "sessions").glob("*.jsonl")) == []  # nothing was appended
    _, events = run(child, sid, "a storable prompt")
    assert events[-1].data["outcome"] == "completed"


def test_every_other_prompt_within_the_bound_is_stored_exactly(spawn: Spawn) -> None:
    """The only text no session file can hold is a lone surrogate: controls, NUL, line
    separators, noncharacters, astral characters and JSON's worst escaping ratio all keep."""
    child = spawn()
    sid = attach(child)
    odd = '\x00\x01\x1f\x7f\u2028\u2029\ufeff\ufffe\uffff\U0001f600\U0010ffff"\\ x'
    worst = "\x01" * (FRAME_BYTES // 6 - 100) + "x"  # 6 bytes each escaped: what a frame holds
    for prompt in (odd, worst):
        _, events = run(child, sid, prompt)
        finished = events[-1].data
        assert (finished["outcome"], finished["persistence"]) == ("completed", "durable")
        entries = [e for p in pages(child, sid, finished["revision"]) for e in p["entries"]]
        last = [e for e in entries if e["kind"] == "user"][-1]["message_id"]
        assert "".join(e["text"] for e in entries if e["message_id"] == last) == prompt


def lone_surrogate_turn(
    child: LocalAgentClient, prompt: str, segments: int = 1
) -> list[dict[str, Any]]:
    """Run `prompt` whose every assistant segment is "a\ud800b"; the history's entries."""
    sid = attach(child)
    _, events = run(child, sid, prompt)
    finished = events[-1].data
    assert (finished["outcome"], finished["persistence"]) == ("completed", "durable")
    deltas = "".join(e.data["text"] for e in events if e.name == "message.delta")
    assert deltas == "a\ufffdb" * segments
    assert list(reconciled(events).values()) == ["a\ufffdb"] * segments
    entries = [e for p in pages(child, sid, finished["revision"]) for e in p["entries"]]
    assert [e["text"] for e in entries if e["kind"] == "assistant"] == ["a\ufffdb"] * segments
    assert child.finish(timeout=10) == 0  # the child still ends on EOF
    return entries


def test_a_lone_surrogate_from_the_fixture_model_is_replaced(spawn: Spawn) -> None:
    # The script is JSON with ASCII escapes: the prompt is storable, the reply is not.
    first = {"text": "a\ud800b", "reasoning": "r\udfff", "tools": [{"name": "t\ud800"}]}
    prompt = "fixture:" + json.dumps([first, {"text": "a\ud800b"}])
    assert "\\ud800" in prompt
    entries = lone_surrogate_turn(spawn(), prompt, segments=2)
    assert [e["text"] for e in entries if e["kind"] == "reasoning_summary"] == ["r\ufffd"]
    assert any("t\ufffd" in e["text"] for e in entries if e["kind"] == "activity")


def test_a_lone_surrogate_over_the_openai_chat_wire_is_replaced(spawn: Spawn, home: Path) -> None:
    with LocalServer() as server:
        server.script(
            "/v1/chat/completions",
            Reply(
                chunks=[
                    sse(
                        (None, '{"choices":[{"index":0,"delta":{"content":"a\\ud800b"}}]}'),
                        (None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
                        (None, "[DONE]"),
                    )
                ],
                headers={"content-type": "text/event-stream"},
            ),
        )
        local_provider(home, server)
        lone_surrogate_turn(spawn(), "hi")


SECRET = "sk-proj-" + "A1b2C3d4" * 3


def shown_and_reconciled(events: list[Event]) -> tuple[str, str]:
    deltas = "".join(e.data["text"] for e in events if e.name == "message.delta")
    [reconcile] = reconciled(events).values()
    return deltas, reconcile


def halved_inside_the_secret(line: str, k: int) -> str:
    """`line` padded so that the fixture's two deltas split it `k` characters into SECRET."""
    for pad in ("x" * n for n in range(2 * len(line))):
        for text in (pad + " " + line, line + " " + pad):
            if len(split_text(text, 2)[0]) == text.index(SECRET) + k:
                return text
    raise AssertionError(k)


def test_a_secret_split_across_deltas_is_never_shown(spawn: Spawn) -> None:
    """Split into two deltas at every point, and into one delta per character: the live
    stream (every prefix a client can have seen) never holds the secret or a piece of it."""
    child = spawn()
    sid = attach(child)
    # Words around the secret, longer than the redactor's look-ahead: text before it shows
    # while the stream runs, not only when the message ends.
    line = "words before it " * 6 + f"the key is {SECRET} and that is all" + " after it" * 10
    texts = [(line, len(line))]  # one character per delta
    texts += [(halved_inside_the_secret(line, k), 2) for k in range(1, len(SECRET))]
    for text, deltas in texts:
        _, events = run(child, sid, script({"text": text, "deltas": deltas}))
        shown, reconcile = shown_and_reconciled(events)
        assert shown == reconcile == redact(text)
        assert SECRET[8:16] not in shown and SECRET[-8:] not in shown
