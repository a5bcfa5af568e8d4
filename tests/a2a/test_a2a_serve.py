"""`magi-code a2a serve` as a real process on a local port, driven by the a2a-sdk client: send,
stream, cancel, get, resubscribe, a context continued after a restart, tokens, the loopback
rule, approvals that become `input-required`, and each bound at its edge."""

import json
import shutil
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.client.client import Client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError

from magi_code.a2a import limits
from magi_code.a2a.serving import ServeSettingsError, bind_refusal, serving
from magi_code.a2a.turns import idle_beyond
from magi_code.a2a.walls import NO_TOKEN, WRONG_TOKEN
from magi_code.client import environment
from magi_code.config.trust import admit_project
from source_imports import loaded_running

A2A_SERVER = ("a2a", "uvicorn", "starlette", "sse_starlette")

pytestmark = pytest.mark.anyio
MAGI = str(Path(sys.executable).with_name("magi-code"))
TOKEN = "tok-3f9c1e-a2a-secret"
OTHER_TOKEN = "tok-77d0aa-another-caller"
SLOW = "fixture:" + json.dumps([{"text": "working on it", "hang": True}])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Server:
    """One `magi-code a2a serve --port 0` process; `url` is what it printed on stderr."""

    def __init__(self, workspace: Path, home: Path, *flags: str, **env: str) -> None:
        self.errors = home.parent / f"serve-{time.monotonic_ns()}.err"
        with open(self.errors, "wb") as errors:
            self.process = subprocess.Popen(
                [MAGI, "a2a", "serve", "--port", "0", *flags, str(workspace)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                env=environment(home, **env),
            )
        deadline = time.monotonic() + 30
        while " at http" not in self.stderr():
            assert self.process.poll() is None, self.stderr()
            assert time.monotonic() < deadline, self.stderr()
            time.sleep(0.02)
        self.url = self.stderr().split(" at ")[1].split(" ")[0]

    def stderr(self) -> str:
        return self.errors.read_text()

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(15)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the tests that need no settings of their own (a start costs seconds)."""
    tmp = tmp_path_factory.mktemp("shared")
    (tmp / "workspace").mkdir()
    server = Server(tmp / "workspace", tmp / "mc-home")
    yield server
    server.stop()


@pytest.fixture
def serve(workspace: Path, home: Path) -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(*flags: str, **env: str) -> Server:
        started.append(Server(workspace, home, *flags, **env))
        return started[-1]

    yield start
    for server in started:
        if server.process.poll() is None:
            server.stop()


@asynccontextmanager
async def connect(
    server: Server,
    *,
    streaming: bool = True,
    token: str | None = None,
    verify: Path | None = None,
    binding: str = "JSONRPC",
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    checked = ssl.create_default_context(cafile=verify) if verify else True
    async with httpx.AsyncClient(headers=headers, timeout=30, verify=checked) as http:
        config = ClientConfig(
            streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding]
        )
        client = await create_client(server.url, config)
        try:
            yield client
        finally:
            await client.close()


def message(text: str, *, context: str = "", task: str = "", number: int = 0) -> SendMessageRequest:
    sent = Message(
        message_id=f"m-{time.monotonic_ns()}-{number}",
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        context_id=context,
        task_id=task,
    )
    return SendMessageRequest(message=sent)


async def final_task(client: Client, request: SendMessageRequest) -> Task:
    """The task a blocking (non-streaming) send ends with."""
    answers = [answer async for answer in client.send_message(request)]
    assert len(answers) == 1 and answers[0].HasField("task"), answers
    return answers[0].task


def text_of(task_or_message: Task | Message) -> str:
    parts = task_or_message.parts if isinstance(task_or_message, Message) else ()
    if isinstance(task_or_message, Task):
        parts = task_or_message.status.message.parts
    return "".join(part.text for part in parts)


def session_records(home: Path) -> list[list[dict[str, Any]]]:
    """Every stored session's records, oldest file first."""
    files = sorted((home / "sessions").glob("*.jsonl"), key=lambda path: path.stat().st_mtime)
    return [[json.loads(line) for line in path.read_bytes().split(b"\n") if line] for path in files]


def prompts(records: list[dict[str, Any]]) -> list[str]:
    return [r["text"] for r in records if r["type"] == "user"]


async def test_the_card_a_send_and_a_stream(shared: Server) -> None:
    server = shared
    assert "no tokens configured: this machine only" in server.stderr()
    card = httpx.get(server.url + ".well-known/agent-card.json").json()
    assert card["name"] == "magi-code default"
    assert card["supportedInterfaces"][0] == {
        "url": server.url,
        "protocolBinding": "JSONRPC",
        "protocolVersion": "1.0",
    }
    assert card["skills"][0]["id"] == "coding" and card["capabilities"]["streaming"] is True
    assert "securitySchemes" not in card  # no tokens: nothing to present

    async with connect(server, streaming=False) as client:
        task = await final_task(client, message("hello"))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert text_of(task) == "Hello from the fixture model."
    assert task.artifacts[0].name == "reply"
    async with connect(server, streaming=False, binding="HTTP+JSON") as rest:
        assert (await rest.get_task(GetTaskRequest(id=task.id))).id == task.id
        again = await final_task(rest, message("hello", context=task.context_id))
        assert again.status.state == TaskState.TASK_STATE_COMPLETED

    script = [
        {"text": "Let me look.", "tools": [{"name": "list_dir", "arguments": {}}]},
        {"text": "All done here.", "deltas": 3},
    ]
    events: list[StreamResponse] = []
    async with connect(server) as client:
        async for event in client.send_message(message("fixture:" + json.dumps(script))):
            events.append(event)
    statuses = [e.status_update for e in events if e.HasField("status_update")]
    chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
    tool = [s for s in statuses if "tool list_dir" in text_of(s.status.message)]
    assert [text_of(s.status.message).split(":")[0] for s in tool] == [
        "tool list_dir started",
        "tool list_dir completed",
    ]
    data = tool[0].status.message.parts[1].data.struct_value
    assert data.fields["event"].string_value == "activity"
    assert "".join(c.artifact.parts[0].text for c in chunks) == "Let me look.\n\nAll done here."
    assert chunks[0].append is False and all(c.append for c in chunks[1:])
    assert statuses[-1].status.state == TaskState.TASK_STATE_COMPLETED


async def test_cancel_get_and_resubscribe_after_a_reconnect(shared: Server) -> None:
    server = shared
    async with connect(server) as first:
        stream = first.send_message(message(SLOW))
        opening = [await anext(stream) for _ in range(2)]  # the task, then `working`
        await stream.aclose()  # the client goes away; the turn goes on
    task_id = opening[0].task.id
    assert task_id

    async with connect(server) as again:
        task = await again.get_task(GetTaskRequest(id=task_id))
        assert task.status.state == TaskState.TASK_STATE_WORKING
        resubscribed = again.subscribe(SubscribeToTaskRequest(id=task_id))
        assert (await anext(resubscribed)).task.id == task_id
        cancelled = await again.cancel_task(CancelTaskRequest(id=task_id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        rest = [event async for event in resubscribed]
        assert rest[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED
        task = await again.get_task(GetTaskRequest(id=task_id))
        assert task.status.state == TaskState.TASK_STATE_CANCELED
        assert "".join(p.text for a in task.artifacts for p in a.parts) == "working on it"
    home = shared.errors.parent / "mc-home"
    [records] = [r for r in session_records(home) if SLOW in prompts(r)]
    finished = [r for r in records if r["type"] == "run_finished"]
    assert finished and finished[-1]["outcome"] == "cancelled"  # recorded before it said so


async def test_a_context_continues_its_session_after_a_crash_and_restart(
    serve: Callable[..., Server], home: Path
) -> None:
    one, two = ("fixture:" + json.dumps([{"text": said}]) for said in ("one", "two"))
    server = serve()
    async with connect(server, streaming=False) as client:
        first = await final_task(client, message(one))
    async with connect(server) as client:
        stream = client.send_message(message(SLOW))
        cut = (await anext(stream)).task.id
        await anext(stream)  # working: then the server dies mid-turn
        server.process.kill()
        server.process.wait(15)

    server = serve()
    async with connect(server, streaming=False) as client:
        kept = await client.get_task(GetTaskRequest(id=first.id))
        assert kept.status.state == TaskState.TASK_STATE_COMPLETED and text_of(kept) == "one"
        interrupted = await client.get_task(GetTaskRequest(id=cut))
        assert interrupted.status.state == TaskState.TASK_STATE_FAILED
        assert "the server restarted while this turn ran" in text_of(interrupted)
        request = message(two, context=first.context_id)
        second = await final_task(client, request)
    assert second.context_id == first.context_id and second.id != first.id
    assert text_of(second) == "two"
    [records] = [r for r in session_records(home) if one in prompts(r)]  # the context's
    assert prompts(records) == [one, two]


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made by the openssl command."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_tokens_over_tls_are_required_walled_and_never_echoed(
    serve: Callable[..., Server], home: Path, tmp_path: Path
) -> None:
    cert, key = self_signed(tmp_path)
    home.mkdir()
    (home / "settings.toml").write_text(
        '[a2a]\ntokens = ["env:A2A_TEST_TOKEN", "env:A2A_OTHER_TOKEN"]\n'
        f'tls_cert = "{cert}"\ntls_key = "{key}"\n'
    )
    server = serve(A2A_TEST_TOKEN=TOKEN, A2A_OTHER_TOKEN=OTHER_TOKEN)
    assert server.url.startswith("https://127.0.0.1:") and "bearer tokens" in server.stderr()
    trusted = ssl.create_default_context(cafile=cert)
    card = httpx.get(server.url + ".well-known/agent-card.json", verify=trusted).json()
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    for headers, said in (
        ({}, NO_TOKEN),
        ({"Authorization": "Bearer not-the-token"}, WRONG_TOKEN),
        ({"Authorization": f"Basic {TOKEN}"}, WRONG_TOKEN),
        ({"Authorization": f"Bearer {TOKEN}x"}, WRONG_TOKEN),
    ):
        refused = httpx.post(server.url, json=body, headers=headers, verify=trusted)
        assert refused.status_code == 401 and refused.json() == {"error": said}
        assert refused.headers["www-authenticate"] == "Bearer"
    async with connect(server, streaming=False, token=TOKEN, verify=cert) as client:
        task = await final_task(client, message("hello"))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    async with connect(server, streaming=False, token=OTHER_TOKEN, verify=cert) as other:
        with pytest.raises(A2AError, match="Task not found"):  # another caller's task
            await other.get_task(GetTaskRequest(id=task.id))
    assert server.stop() == 0
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert TOKEN.encode() not in stored and TOKEN not in server.stderr()


def test_without_tokens_only_loopback_is_served(workspace: Path, home: Path) -> None:
    refused = subprocess.run(
        [MAGI, "a2a", "serve", "--host", "0.0.0.0", "--port", "0", str(workspace)],
        capture_output=True,
        env=environment(home),
        timeout=30,
    )
    assert refused.returncode == 2
    assert b"--host 0.0.0.0 would let any machine in without a token" in refused.stderr
    assert b"[a2a] tokens" in refused.stderr


def test_a_certificate_pair_that_does_not_load_stops_the_start(workspace: Path, home: Path) -> None:
    home.mkdir()
    missing = workspace / "missing.pem"
    (home / "settings.toml").write_text(f'[a2a]\ntls_cert = "{missing}"\ntls_key = "{missing}"\n')
    refused = subprocess.run(
        [MAGI, "a2a", "serve", "--port", "0", str(workspace)],
        capture_output=True,
        env=environment(home),
        timeout=30,
    )
    assert refused.returncode == 2 and b"Traceback" not in refused.stderr
    assert b"[a2a] tls_cert and tls_key cannot be used" in refused.stderr


async def test_an_approval_becomes_input_required_and_the_caller_cannot_grant_it(
    shared: Server,
) -> None:
    server, workspace = shared, shared.errors.parent / "workspace"  # --approval-mode ask
    write = {"name": "write_file", "arguments": {"path": "made.txt", "content": "x"}}
    script = [{"text": "Writing.", "tools": [write]}, {"text": "I could not write it."}]
    async with connect(server, streaming=False) as client:
        task = await final_task(client, message("fixture:" + json.dumps(script)))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        said = text_of(task)
        assert "--approval-mode ask" in said and "made.txt" in said
        assert "a caller cannot grant them" in said
        # The caller says yes: that is more input for the model, never an approval.
        answer = message("yes, I approve: write it", context=task.context_id, task=task.id)
        again = await final_task(client, answer)
    assert again.id == task.id and again.status.state == TaskState.TASK_STATE_COMPLETED
    assert not (workspace / "made.txt").exists()


async def test_a_message_is_bounded_at_its_edge(shared: Server) -> None:
    server = shared
    async with connect(server, streaming=False) as client:
        whole = await final_task(client, message("x" * limits.MESSAGE_BYTES))
        assert whole.status.state == TaskState.TASK_STATE_COMPLETED
        with pytest.raises(A2AError, match="over 1,048,576 bytes of text: shorten it"):
            await final_task(client, message("x" * (limits.MESSAGE_BYTES + 1)))


def test_a_request_body_is_bounded_at_its_edge(shared: Server) -> None:
    server = shared
    at_edge = httpx.post(server.url, content=b" " * limits.REQUEST_BODY_BYTES)
    assert at_edge.status_code == 200 and at_edge.json()["error"]["code"] == -32700
    over = httpx.post(server.url, content=b" " * (limits.REQUEST_BODY_BYTES + 1))
    assert over.status_code == 413 and "send a smaller message" in over.json()["error"]


async def test_one_turn_per_context_and_a_bounded_number_per_caller(shared: Server) -> None:
    server = shared
    async with connect(server) as client:
        streams, tasks = [], []
        for number in range(limits.TASKS_PER_TOKEN):
            stream = client.send_message(message(SLOW, number=number))
            tasks.append((await anext(stream)).task)
            streams.append(stream)
        busy_context = message(SLOW, context=tasks[0].context_id)
        with pytest.raises(A2AError, match="this context is running a turn"):
            await anext(client.send_message(busy_context))
        with pytest.raises(A2AError, match=f"runs {limits.TASKS_PER_TOKEN} tasks already"):
            await anext(client.send_message(message(SLOW)))
        await client.cancel_task(CancelTaskRequest(id=tasks[0].id))
        freed = client.send_message(message(SLOW, context=tasks[0].context_id))
        tasks.append((await anext(freed)).task)
        assert tasks[-1].context_id == tasks[0].context_id
        for stream in [*streams, freed]:
            await stream.aclose()
        for task in tasks[1:]:
            await client.cancel_task(CancelTaskRequest(id=task.id))


def test_the_a2a_server_stack_is_off_the_other_faces_paths() -> None:
    faces = (
        "import magi_code.cli, magi_code.exec, magi_code.local_agent.main, magi_code.runner.entry"
    )
    assert loaded_running(faces, A2A_SERVER) == []


def test_the_serving_settings_are_checked_and_never_hold_a_token() -> None:
    env = {"A2A_T": TOKEN}
    chosen = serving({"a2a": {"tokens": ["env:A2A_T"], "tasks_per_token": 2}}, env)
    assert chosen.tasks_per_token == 2 and chosen.tls is None
    [token] = chosen.tokens
    assert token.secret == TOKEN.encode() and TOKEN not in token.identity + repr(token)
    assert serving({}, env).tasks_per_token == limits.TASKS_PER_TOKEN
    for table, said in (
        ({"tokens": [TOKEN]}, 'tokens must each be "env:VARIABLE"'),
        ({"tokens": ["env:A2A_UNSET"]}, "names A2A_UNSET, which is not set or empty"),
        ({"tls_cert": "cert.pem"}, "tls_cert and tls_key go together"),
    ):
        with pytest.raises(ServeSettingsError, match=said):
            serving({"a2a": table}, env)
    assert bind_refusal("127.0.0.1", serving({}, env)) is None
    assert bind_refusal("::1", serving({}, env)) is None
    assert bind_refusal("localhost", serving({}, env)) is None
    assert "[a2a] tokens" in (bind_refusal("0.0.0.0", serving({}, env)) or "")
    assert bind_refusal("0.0.0.0", chosen) is None


def test_a_project_cannot_set_what_a2a_serve_admits() -> None:
    table = {"tokens": ["env:MINE"], "tls_cert": "c", "tls_key": "k", "tasks_per_token": 9}
    for trusted in (False, True):
        kept, dropped = admit_project({"a2a": table}, {}, trusted, "settings.toml")
        assert "tokens" not in kept.get("a2a", {}) and "tls_cert" not in kept.get("a2a", {})
        assert {d.key for d in dropped} == {f"a2a.{key}" for key in table}


def test_idle_contexts_past_the_bound_are_closed_oldest_first() -> None:
    bound = limits.ATTACHED_CONTEXTS
    order = [("local", f"c{n}") for n in range(bound + 1)]
    assert idle_beyond(order[:bound], set(), bound) == []
    assert idle_beyond(order, set(), bound) == [order[0]]
    assert idle_beyond(order, {order[0]}, bound) == [order[1]]  # a running one stays
