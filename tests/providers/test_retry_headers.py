"""Retries as the provider asks, against a real local server: `retry-after-ms`, `retry-after`
in seconds and as an HTTP date, `x-should-retry: true|false`, full jitter on the backoff (an
injected random), and a wait asked for past the cap (RETRY_MAX_DELAY_S) that fails at once
with `rate_limited`, saying how long the provider asked to wait, at the cap's exact edge."""

import email.utils
import time
from collections.abc import Iterator

import pytest

from magi_code.providers.base import ProviderError, failure_summary
from magi_code.providers.limits import RETRY_MAX_DELAY_S
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.requests import backoff_s, retry_after_s, should_retry
from providers.local_server import LocalServer, Reply
from providers.test_http_bounds import OK, PATH, Sleeps, provider
from providers.test_wire_apis import collect

pytestmark = pytest.mark.anyio

CAP = int(RETRY_MAX_DELAY_S)


def shares(*values: float) -> "Iterator[float]":
    yield from values


async def delays_before_success(server: LocalServer, headers: dict[str, str]) -> list[float]:
    """The waits before the request that follows a 429 carrying `headers`."""
    server.script(PATH, Reply(429, [b"{}"], headers), Reply(chunks=[OK]))
    sleeps = Sleeps()
    await collect(provider(server, HttpPolicy(attempts=2, sleep=sleeps, jitter=lambda: 0.5)))
    assert len(server.requests) == 2
    return sleeps.delays


@pytest.mark.parametrize(
    ("headers", "waited"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # the milliseconds win
        ({"retry-after-ms": "nan", "retry-after": "9"}, 9.0),  # no number: the seconds
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "2.5"}, 2.5),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "soon"}, 0.25),  # nothing asked: full jitter, 0.5 of 0.5 s
        ({}, 0.25),
    ],
)
async def test_the_wait_the_answer_asks_for(
    server: LocalServer, headers: dict[str, str], waited: float
) -> None:
    assert await delays_before_success(server, headers) == [waited]


async def test_a_retry_after_date_is_waited_until(server: LocalServer) -> None:
    when = email.utils.formatdate(time.time() + 12, usegmt=True)
    (waited,) = await delays_before_success(server, {"retry-after": when})
    assert 10.0 <= waited <= 12.0


async def test_x_should_retry_false_stops_a_retryable_status(server: LocalServer) -> None:
    server.script(PATH, Reply(429, [b"{}"], {"x-should-retry": "false"}), Reply(chunks=[OK]))
    sleeps = Sleeps()
    with pytest.raises(ProviderError) as failed:
        await collect(provider(server, HttpPolicy(attempts=3, sleep=sleeps)))
    assert (failed.value.code, failed.value.retryable) == ("rate_limited", False)
    assert (len(server.requests), sleeps.delays) == (1, [])


@pytest.mark.parametrize("status", [400, 409])
async def test_x_should_retry_true_retries_a_status_otherwise_final(
    server: LocalServer, status: int
) -> None:
    asked = {"x-should-retry": "True", "retry-after-ms": "10"}
    server.script(PATH, Reply(status, [b"{}"], asked), Reply(chunks=[OK]))
    sleeps = Sleeps()
    await collect(provider(server, HttpPolicy(attempts=2, sleep=sleeps)))
    assert (len(server.requests), sleeps.delays) == (2, [0.01])


async def test_a_refusal_without_the_header_is_still_final(server: LocalServer) -> None:
    server.script(PATH, Reply(409, [b"{}"], {"x-should-retry": "maybe"}), Reply(chunks=[OK]))
    with pytest.raises(ProviderError):
        await collect(provider(server, HttpPolicy(attempts=2, sleep=Sleeps())))
    assert len(server.requests) == 1


async def test_full_jitter_takes_a_random_share_of_the_doubling_delay(
    server: LocalServer,
) -> None:
    server.script(PATH, *[Reply(500, [b"busy"]) for _ in range(4)])
    sleeps = Sleeps()
    randoms = shares(0.25, 0.5, 0.75)
    policy = HttpPolicy(attempts=4, base_delay_s=1.0, sleep=sleeps, jitter=lambda: next(randoms))
    with pytest.raises(ProviderError):
        await collect(provider(server, policy))
    assert sleeps.delays == [0.25 * 1, 0.5 * 2, 0.75 * 4]
    capped = HttpPolicy(base_delay_s=1.0, max_delay_s=5.0, jitter=lambda: 0.999)
    assert backoff_s(4, capped, None) == pytest.approx(0.999 * 5.0)  # 8 s, capped at 5
    assert backoff_s(1, HttpPolicy(jitter=lambda: 0.0), None) == 0.0


@pytest.mark.parametrize(
    ("headers", "asked"),
    [
        ({"retry-after": str(CAP + 1)}, f"{CAP + 1} s"),
        ({"retry-after-ms": str(CAP * 1000 + 1)}, f"{CAP + 1} s"),
        ({"retry-after": "600"}, "10 min"),
        ({"retry-after": email.utils.formatdate(time.time() + 3 * 3600, usegmt=True)}, "3 h"),
    ],
)
async def test_a_wait_past_the_cap_fails_at_once_saying_how_long(
    server: LocalServer, headers: dict[str, str], asked: str
) -> None:
    server.script(PATH, Reply(429, [b"{}"], headers), Reply(chunks=[OK]))
    sleeps = Sleeps()
    with pytest.raises(ProviderError) as failed:
        await collect(provider(server, HttpPolicy(attempts=4, sleep=sleeps)))
    error = failed.value
    assert (error.code, error.status, error.retryable) == ("rate_limited", 429, False)
    assert (len(server.requests), sleeps.delays) == (1, [])
    assert failure_summary(error) == (
        f"The provider asked to wait {asked} before the next request, longer than magi-code "
        f"waits ({CAP} s): try again then. (HTTP 429)"
    )


@pytest.mark.parametrize("headers", [{"retry-after": str(CAP)}, {"retry-after-ms": f"{CAP}000"}])
async def test_a_wait_of_the_cap_itself_is_waited_for(
    server: LocalServer, headers: dict[str, str]
) -> None:
    assert await delays_before_success(server, headers) == [float(CAP)]


def test_header_values_that_are_no_finite_number_or_date_ask_for_nothing() -> None:
    for value in ("inf", "1e999", "nan", "", "Tomorrow", "Sun, 99 Nov 2026 10:00:10 GMT"):
        assert retry_after_s({"retry-after": value}) is None
        assert retry_after_s({"retry-after-ms": value}) is None
    assert should_retry({}) is None and should_retry({"x-should-retry": " FALSE "}) is False
