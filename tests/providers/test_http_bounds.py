"""The HTTP boundaries against a real local server: retries, bounded error bodies, deadlines,
inactivity, malformed bytes, cancellation, and diagnostics that never carry a secret."""

import logging
import socket
import time
from datetime import UTC, datetime

import anyio
import pytest

from magi_code.limits import ERROR_BODY_BYTES
from magi_code.providers.base import Completed, ProviderError, TextDelta
from magi_code.providers.openai_chat import OpenAIChatProvider
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.requests import backoff_s, control_request, retry_after_s
from providers.local_server import LocalServer, Reply, sse
from providers.test_wire_apis import REQUEST, collect

pytestmark = pytest.mark.anyio

PATH = "/v1/chat/completions"
OK = sse(
    (None, {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}),
    (None, "[DONE]"),
)
OVERFLOW = b'{"error": {"code": "context_length_exceeded", "message": "maximum context length"}}'


class Sleeps:
    """Injected backoff: records each delay instead of waiting it out."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def provider(server: LocalServer, policy: HttpPolicy, key: str = "sk-test") -> OpenAIChatProvider:
    return OpenAIChatProvider("p", server.url + "/v1", key, policy)


async def failure(server: LocalServer, policy: HttpPolicy, key: str = "sk-test") -> ProviderError:
    with pytest.raises(ProviderError) as err:
        await collect(provider(server, policy, key))
    return err.value


async def test_429_with_retry_after_then_success(server: LocalServer) -> None:
    sleeps = Sleeps()
    server.script(PATH, Reply(429, [b"slow down"], {"retry-after": "7"}), Reply(chunks=[OK]))
    events = await collect(provider(server, HttpPolicy(attempts=3, sleep=sleeps)))
    assert events == [TextDelta("ok"), Completed("end_turn")]
    assert sleeps.delays == [7.0]
    assert len(server.requests) == 2


async def test_500s_exhaust_the_bounded_retries(server: LocalServer) -> None:
    sleeps = Sleeps()
    server.script(PATH, *[Reply(500, [b"oops"]) for _ in range(3)])
    policy = HttpPolicy(attempts=3, base_delay_s=0.5, sleep=sleeps, jitter=lambda: 1.0)  # top
    err = await failure(server, policy)
    assert (err.code, err.status, err.retryable) == ("server_error", 500, True)
    assert len(server.requests) == 3
    assert sleeps.delays == [0.5, 1.0]


def test_backoff_and_retry_after_are_capped() -> None:
    policy = HttpPolicy(base_delay_s=1.0, max_delay_s=5.0, jitter=lambda: 1.0)  # jitter's top
    assert [backoff_s(n, policy, None) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    assert backoff_s(1, policy, 600.0) == 5.0
    now = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC).timestamp()
    assert retry_after_s({"retry-after": "Sun, 29 Nov 2026 10:00:10 GMT"}, now=now) == 10.0
    assert retry_after_s({"retry-after": "soon"}) is None


async def test_401_is_not_retried(server: LocalServer) -> None:
    server.script(PATH, Reply(401, [b"{}"]), Reply(chunks=[OK]))
    err = await failure(server, HttpPolicy(attempts=3, sleep=Sleeps()))
    assert (err.code, err.retryable) == ("auth_failed", False)
    assert len(server.requests) == 1


async def test_redirects_are_refused_not_followed(server: LocalServer) -> None:
    server.script(PATH, Reply(302, [OVERFLOW], {"location": server.url + "/elsewhere"}))
    err = await failure(server, HttpPolicy(attempts=2, sleep=Sleeps()))
    assert (err.code, err.status) == ("refused", 302)
    assert [r.path for r in server.requests] == [PATH]


async def test_an_unusable_url_is_refused() -> None:
    p = OpenAIChatProvider("p", "http://a:b:c/v1", "k", HttpPolicy(attempts=2))
    with pytest.raises(ProviderError) as err:
        await collect(p)
    assert (err.value.code, err.value.retryable) == ("refused", False)


async def test_complete_400_body_identifies_context_overflow(server: LocalServer) -> None:
    server.script(PATH, Reply(400, [OVERFLOW], content_length=True))
    err = await failure(server, HttpPolicy(attempts=1))
    assert (err.code, err.status) == ("context_overflow", 400)


async def test_error_body_bound_at_its_edge(server: LocalServer) -> None:
    exact = OVERFLOW + b" " * (ERROR_BODY_BYTES - len(OVERFLOW))
    assert len(exact) == ERROR_BODY_BYTES
    server.script(PATH, Reply(400, [exact]), Reply(400, [exact + b" "]))
    assert (await failure(server, HttpPolicy(attempts=1))).code == "context_overflow"
    # one byte more: the body is cut, so it can no longer prove an overflow
    assert (await failure(server, HttpPolicy(attempts=1))).code == "refused"


async def test_oversize_error_body_keeps_the_status_class(server: LocalServer) -> None:
    big = [b"x" * 65536 for _ in range(8)]  # 512 KiB
    server.script(PATH, Reply(503, big), Reply(413, [OVERFLOW, *big]))
    err = await failure(server, HttpPolicy(attempts=1))
    assert (err.code, err.status) == ("server_error", 503)
    err = await failure(server, HttpPolicy(attempts=1))
    assert (err.code, err.status) == ("refused", 413)


async def test_slow_error_body_hits_the_absolute_deadline(server: LocalServer) -> None:
    # the body trickles a byte at a time, well inside the inactivity bound, forever
    trickle = Reply(400, [OVERFLOW[:20]] + [b" "] * 1000, delay_s=0.01)
    server.script(PATH, trickle)
    policy = HttpPolicy(attempts=1, body_deadline_s=0.3, inactivity_s=5.0)
    started = time.monotonic()
    err = await failure(server, policy)
    elapsed = time.monotonic() - started
    assert err.code == "refused" and err.status == 400
    assert 0.3 <= elapsed < 2.0


async def test_slow_retryable_error_body_stays_retryable(server: LocalServer) -> None:
    server.script(PATH, Reply(502, [b"x"], hang=True))
    policy = HttpPolicy(attempts=1, body_deadline_s=0.2)
    err = await failure(server, policy)
    assert (err.code, err.retryable) == ("server_error", True)


async def test_inactivity_after_events_fails_without_retry(server: LocalServer) -> None:
    first = sse((None, {"choices": [{"index": 0, "delta": {"content": "part"}}]}))
    server.script(PATH, Reply(chunks=[first], hang=True), Reply(chunks=[OK]))
    policy = HttpPolicy(attempts=3, inactivity_s=0.3, sleep=Sleeps())
    got: list[object] = []
    with pytest.raises(ProviderError) as err:
        async for event in provider(server, policy).stream(REQUEST):
            got.append(event)
    assert got == [TextDelta("part")]
    assert (err.value.code, err.value.retryable) == ("transport_failed", True)
    assert len(server.requests) == 1  # output was delivered: a retry would repeat it


async def test_inactivity_before_any_event_is_retried(server: LocalServer) -> None:
    server.script(PATH, Reply(chunks=[b": hello\n\n"], hang=True), Reply(chunks=[OK]))
    policy = HttpPolicy(attempts=2, inactivity_s=0.3, sleep=Sleeps())
    assert await collect(provider(server, policy)) == [TextDelta("ok"), Completed("end_turn")]


async def test_malformed_utf8_fails_the_attempt_through_retries(server: LocalServer) -> None:
    bad = b'data: {"choices": [{"delta": {"content": "\xff"}}]}\n\n'
    server.script(PATH, Reply(chunks=[bad]), Reply(chunks=[bad[:30], bad[30:]]))
    sleeps = Sleeps()
    err = await failure(server, HttpPolicy(attempts=2, sleep=sleeps))
    assert err.code == "malformed_stream"
    assert len(server.requests) == 2 and len(sleeps.delays) == 1


async def test_malformed_utf8_then_success(server: LocalServer) -> None:
    server.script(PATH, Reply(chunks=[b"data: \xc3\x28\n\n"]), Reply(chunks=[OK]))
    events = await collect(provider(server, HttpPolicy(attempts=2, sleep=Sleeps())))
    assert events[-1] == Completed("end_turn")


async def test_connection_refused_is_transport_failed() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps = Sleeps()
    p = OpenAIChatProvider(
        "p", f"http://127.0.0.1:{port}/v1", "k", HttpPolicy(attempts=2, sleep=sleeps)
    )
    with pytest.raises(ProviderError) as err:
        await collect(p)
    assert (err.value.code, err.value.retryable) == ("transport_failed", True)
    assert len(sleeps.delays) == 1


async def test_cancellation_closes_the_active_request(server: LocalServer) -> None:
    first = sse((None, {"choices": [{"index": 0, "delta": {"content": "a"}}]}))
    server.script(PATH, Reply(chunks=[first], hang=True))
    with anyio.move_on_after(5):
        async with anyio.create_task_group() as tg:
            started = anyio.Event()

            async def consume() -> None:
                async for _ in provider(server, HttpPolicy(attempts=1)).stream(REQUEST):
                    started.set()

            tg.start_soon(consume)
            await started.wait()
            tg.cancel_scope.cancel()
    closed = await anyio.to_thread.run_sync(server.client_closed.wait, 5.0)
    assert closed


async def test_closing_the_stream_closes_the_request(server: LocalServer) -> None:
    first = sse((None, {"choices": [{"index": 0, "delta": {"content": "a"}}]}))
    server.script(PATH, Reply(chunks=[first], hang=True))
    stream = provider(server, HttpPolicy(attempts=1)).stream(REQUEST)
    assert await stream.__anext__() == TextDelta("a")
    await stream.aclose()  # type: ignore[attr-defined]
    assert await anyio.to_thread.run_sync(server.client_closed.wait, 5.0)


async def test_no_credential_in_errors_or_logs(
    server: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-SECRET-do-not-leak-1234"
    echo = f'{{"error": "bad key {secret}"}}'.encode()
    server.script(PATH, Reply(401, [echo]), Reply(500, [echo]), Reply(400, [echo]))
    caplog.set_level(logging.DEBUG)
    errors = [await failure(server, HttpPolicy(attempts=1), key=secret) for _ in range(3)]
    assert [e.code for e in errors] == ["auth_failed", "server_error", "refused"]
    leaked = [e for e in errors if secret in f"{e} {e!r} {e.detail} {e.args}"]
    assert leaked == []
    assert caplog.records, "failures are diagnosed"
    assert secret not in caplog.text and "bad key" not in caplog.text
    # a credential-bearing URL is logged without its user info or query
    caplog.clear()
    url = server.url.replace("http://", f"http://user:{secret}@") + f"/v1?key={secret}"
    with pytest.raises(ProviderError):
        await collect(OpenAIChatProvider("p", url, None, HttpPolicy(attempts=1)))
    assert caplog.text and secret not in caplog.text
    assert {r.name for r in caplog.records} == {"magi_code.providers"}, "no transport logs"


async def test_oauth_control_response_deadline_covers_headers(server: LocalServer) -> None:
    server.script("/token", Reply(200, [b"{}"], delay_s=1.5))  # headers come, body is late
    started = time.monotonic()
    answer = await control_request("POST", server.url + "/token", HttpPolicy(body_deadline_s=0.3))
    assert answer.status == 200 and not answer.body.complete
    assert time.monotonic() - started < 1.2


async def test_oauth_control_response_without_headers_in_time(server: LocalServer) -> None:
    with socket.socket() as listener:  # accepts, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/token"
        started = time.monotonic()
        with pytest.raises(ProviderError) as err:
            await control_request("POST", url, HttpPolicy(body_deadline_s=0.3), form={"a": "b"})
        assert err.value.code == "transport_failed"
        assert time.monotonic() - started < 1.5
