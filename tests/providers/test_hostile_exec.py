"""Hostile provider servers seen end to end, through the real `magi-code exec` process and a
local OpenAI Responses provider: an answer nobody asked for, left on the idle connection,
never becomes the next model call's; an HTTP/2 stream reset in the middle of its body is
retried while nothing was handed on, and otherwise ends the run with a `transport_failed`
diagnostic, its session durable; a 200 answer in JSON says so."""

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from providers.hostile_server import H2Peer, HostileServer, Peer
from support.exec import exec_run, json_lines
from support.settings import local_provider_settings, places

SECRET = "sk-test-HOSTILE0123456789"


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def delta(text: str) -> dict[str, Any]:
    return {"type": "response.output_text.delta", "delta": text}


COMPLETED = {"type": "response.completed", "response": {}}


def reply(text: str) -> bytes:
    return sse(delta(text), COMPLETED)


def shell_call(command: str) -> bytes:
    item = {
        "type": "function_call",
        "id": "fc1",
        "call_id": "call1",
        "name": "shell",
        "arguments": json.dumps({"command": command}),
    }
    return sse({"type": "response.output_item.done", "item": item}, COMPLETED)


def answer(body: bytes, content_type: bytes = b"text/event-stream") -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: " + content_type + b"\r\n"
        b"content-length: %d\r\n\r\n" % len(body) + body
    )


def exec_against(
    server: HostileServer, tmp_path: Path, *args: str, **env: str
) -> subprocess.CompletedProcess[bytes]:
    keyed = 'api_key_env = "LOCAL_KEY"\nmodels = ["m"]\n'
    settings = local_provider_settings(server, "openai-responses", table=keyed)
    home, workspace = places(tmp_path, settings)
    return exec_run([*args, "look around"], workspace, home, LOCAL_KEY=SECRET, **env)


def trusting(certificate: tuple[Path, Path]) -> dict[str, str]:
    """The child's environment: the test's certificate as the trust roots' file
    (SSL_CERT_FILE), in that process only."""
    return {"SSL_CERT_FILE": str(certificate[0]), "SSL_CERT_DIR": ""}


def test_the_next_model_call_gets_its_own_answer_not_one_left_on_the_connection(
    tmp_path: Path,
) -> None:
    """The first model call asks for a shell command that takes 0.5 s; 0.1 s after its
    answer, the server sends an answer nobody asked for on the same connection."""

    def handler(peer: Peer) -> None:
        peer.request()
        if peer.index > 0:
            peer.send(answer(reply("FRESH")))
            return
        peer.send(answer(shell_call("sleep 0.5")))
        time.sleep(0.1)
        peer.send(answer(reply("STALE")))
        while peer.request() is not None:
            pass

    with HostileServer(handler) as server:
        done = exec_against(server, tmp_path, "--approval-mode", "full")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"FRESH\n"
    assert server.connections == 2 and not server.errors


@pytest.fixture
def h2_exec(certificate: tuple[Path, Path]) -> dict[str, str]:
    return trusting(certificate)


def resetting(sent: bytes) -> Any:
    def handler(peer: H2Peer) -> None:
        while (stream_id := peer.request()) is not None:
            peer.respond(stream_id)
            if peer.server.requests > 1:
                peer.data(stream_id, reply("RETRIED"), end=True)
                continue
            peer.data(stream_id, sent)
            time.sleep(0.3)  # handed on before the reset
            peer.reset(stream_id)
        peer.drain()

    return handler


def test_an_http2_reset_before_any_event_is_retried(
    certificate: tuple[Path, Path], h2_exec: dict[str, str], tmp_path: Path
) -> None:
    first_half = reply("LOST")[:20]
    with HostileServer(resetting(first_half), certificate, h2=True) as server:
        done = exec_against(server, tmp_path, "--json", **h2_exec)
    assert done.returncode == 0, done.stderr
    finished = json_lines(done.stdout)[-1]
    assert finished["event"] == "run.finished"
    assert (finished["data"]["outcome"], finished["data"]["persistence"]) == (
        "completed",
        "durable",
    )
    assert b"RETRIED" in done.stdout and b"LOST" not in done.stdout
    assert (server.connections, server.requests) == (1, 2) and not server.errors


def test_an_http2_reset_after_an_event_is_a_transport_failure_told_and_durable(
    certificate: tuple[Path, Path], h2_exec: dict[str, str], tmp_path: Path
) -> None:
    with HostileServer(resetting(sse(delta("PARTIAL"))), certificate, h2=True) as server:
        done = exec_against(server, tmp_path, "--json", MC_DEBUG_STDERR="1", **h2_exec)
    assert done.returncode == 1
    assert b"Traceback" not in done.stderr, "no exception was absorbed on the way"
    assert SECRET.encode() not in done.stdout + done.stderr
    said = json_lines(done.stdout)
    events = [line["event"] for line in said]
    assert events[-2:] == ["diagnostic", "run.finished"], events
    diagnostic, finished = said[-2]["data"], said[-1]["data"]
    assert diagnostic["code"] == "transport_failed"
    assert (finished["outcome"], finished["persistence"]) == ("failed", "durable")
    assert b"PARTIAL" in done.stdout
    assert server.requests == 1, "output was handed on: no retry would repeat it"


def test_a_json_answer_is_told_as_json_at_once(tmp_path: Path) -> None:
    def handler(peer: Peer) -> None:
        while peer.request() is not None:
            peer.send(answer(b'{"object": "list", "data": []}', b"application/json"))

    with HostileServer(handler) as server:
        started = time.monotonic()
        done = exec_against(server, tmp_path, "--json")
        elapsed = time.monotonic() - started
    said = json_lines(done.stdout)
    (diagnostic,) = [line["data"] for line in said if line["event"] == "diagnostic"]
    assert diagnostic == {
        **diagnostic,
        "code": "malformed_stream",
        "summary": "The provider answered with JSON, not an event stream: "
        "check the base URL. (HTTP 200)",
    }
    assert b'"object"' not in done.stdout + done.stderr
    assert server.requests == 1 and elapsed < 20
