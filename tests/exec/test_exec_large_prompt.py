"""Large prompts through `magi-code exec -` (issue 29, item 3): a `git diff`-sized stdin reaches
the model whole; FACE_PROMPT_BYTES is the exact edge; the session a prompt of that size leaves
is paged over `serve --stdio` in parts within the spec's content-chunk bound, while the local
agent itself keeps the spec's PROMPT_BYTES."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from magi_code import limits
from magi_code.arguments import UsageError
from magi_code.client import ErrorResponse, LocalAgentClient, environment
from magi_code.exec import read_prompt
from providers.local_server import LocalServer, Reply, sse

EXEC = [str(Path(sys.executable).with_name("magi-code")), "exec"]
DIFF_BYTES = 200 * 1024  # what `git diff | magi-code exec -` pipes for a sizeable change
SSE = {"content-type": "text/event-stream"}


def exec_stdin(workspace: Path, home: Path, data: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*EXEC, "-"],
        input=data,
        capture_output=True,
        cwd=workspace,
        env=environment(home),
        timeout=60,
    )


def a_diff(size: int) -> str:
    """Unified-diff lines (quotes, tabs, non-ASCII included) cut to exactly `size` bytes."""
    hunk = '@@ -1,3 +1,3 @@\n-\told = "naïve"\n+\tnew = "näive — 😀"\n context line\n'
    text = hunk * (size // len(hunk.encode()) + 1)
    cut = text.encode()[:size].decode("utf-8", "ignore")
    return cut + "x" * (size - len(cut.encode()))


def test_a_diff_sized_prompt_on_stdin_reaches_the_model_whole(workspace: Path, home: Path) -> None:
    prompt = "Review this change:\n" + a_diff(DIFF_BYTES)
    assert len(prompt.encode()) > limits.PROMPT_BYTES * 10
    home.mkdir()
    with LocalServer() as server:
        (home / "settings.toml").write_text(
            'provider = "local"\nmodel = "m"\n[providers.local]\nwire_api = "openai-chat"\n'
            f'base_url = "{server.url}/v1"\n'
        )
        said = {"index": 0, "delta": {"content": "looks fine"}, "finish_reason": "stop"}
        body = sse((None, {"choices": [said]}), (None, "[DONE]"))
        server.script("/v1/chat/completions", Reply(chunks=[body], headers=SSE))
        done = exec_stdin(workspace, home, prompt.encode())
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"looks fine\n"
    (request,) = server.requests
    sent = json.loads(request.body)["messages"][-1]
    assert sent["role"] == "user" and sent["content"] == prompt


def test_the_face_prompt_bound_is_exact_and_its_session_pages_in_spec_chunks(
    workspace: Path, home: Path
) -> None:
    over = exec_stdin(workspace, home, b"x" * (limits.FACE_PROMPT_BYTES + 1))
    assert over.returncode == 2 and over.stdout == b""
    said = f"the prompt is over {limits.FACE_PROMPT_BYTES:,} bytes: shorten it (nothing was run)"
    assert said in over.stderr.decode()
    assert not list((home / "sessions").glob("*.jsonl"))  # refused before anything is stored

    prompt = a_diff(limits.FACE_PROMPT_BYTES)
    assert len(prompt.encode()) == limits.FACE_PROMPT_BYTES
    done = exec_stdin(workspace, home, prompt.encode())
    assert done.returncode == 0, done.stderr
    (stored,) = (home / "sessions").glob("*.jsonl")

    with LocalAgentClient.spawn(cwd=workspace, env=environment(home)) as agent:
        agent.request("initialize", {"required_capabilities": ["history.page"]})
        opened = agent.request("session.open", {"session_id": stored.stem})
        page = {"session_id": stored.stem, "revision": opened["revision"]}
        parts: list[dict[str, object]] = []
        while True:
            result = agent.request("history.page", page)
            assert len(json.dumps(result, ensure_ascii=False).encode()) <= limits.HISTORY_PAGE_BYTES
            parts += result["entries"]
            if result["complete"]:
                break
            page["cursor"] = result["next_cursor"]
        user = [p for p in parts if p["kind"] == "user"]
        assert "".join(str(p["text"]) for p in user) == prompt
        assert [p["part"] for p in user] == list(range(len(user)))
        assert user[-1]["last_part"] and not any(p["last_part"] for p in user[:-1])
        assert all(len(str(p["text"]).encode()) <= limits.HISTORY_CHUNK_BYTES for p in user)
        assert len(user) > limits.FACE_PROMPT_BYTES // limits.HISTORY_CHUNK_BYTES  # really cut

        # the local agent keeps the spec's bound for its own turns
        too_long = {"session_id": stored.stem, "prompt": "x" * (limits.PROMPT_BYTES + 1)}
        with pytest.raises(ErrorResponse) as refused:
            agent.request("turn.start", too_long)
        assert refused.value.code == "invalid_params"
        agent.request("shutdown")


def test_a_prompt_argument_has_the_same_bound() -> None:
    """In process: one byte over the bound is more than execve passes in one argument."""
    at_bound = "x" * (limits.FACE_PROMPT_BYTES - 2) + "é"  # é is two bytes
    assert read_prompt(at_bound) == at_bound
    with pytest.raises(UsageError, match=f"over {limits.FACE_PROMPT_BYTES:,} bytes"):
        read_prompt(at_bound + "x")
