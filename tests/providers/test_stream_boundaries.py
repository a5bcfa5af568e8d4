"""Stream boundaries every wire API meets over real local HTTP: a slow drip, a BOM and CRLF,
a connection that ends in the middle of an event, error bodies cut short, and 5xx retries.

The streams are the recorded-shape ones of `test_wire_apis`; each is first replayed whole so
every other delivery of the same bytes is compared with what the whole stream gives.
"""

import time
from pathlib import Path
from typing import Literal

import anyio
import pytest

from magi_code.providers.base import ProviderError, ProviderEvent, TextDelta, coalesced
from magi_code.providers.policy import HttpPolicy
from providers.local_server import LocalServer, Reply, split_every
from providers.test_http_bounds import OVERFLOW, Sleeps
from providers.test_wire_apis import (
    ANTHROPIC_STREAM,
    CHAT_STREAM,
    REQUEST,
    RESPONSES_STREAM,
    collect,
)
from providers.test_wire_errors import WIRES, Build, ends_well

pytestmark = pytest.mark.anyio

# wire -> (a recorded-shape stream, text of a delta event that comes after others were delivered)
RICH: dict[str, tuple[bytes, str]] = {
    "openai-chat": (CHAT_STREAM, "dich"),
    "openai-responses": (RESPONSES_STREAM, "Voilà"),
    "anthropic": (ANTHROPIC_STREAM, "Ça marche"),
    "codex": (RESPONSES_STREAM, "Voilà"),
}
NO_HANG_S = 10.0  # far below any bound a test leaves long, far above any honest run


@pytest.fixture(params=sorted(RICH))
def rich(request: pytest.FixtureRequest) -> tuple[str, Build, bytes, str]:
    path, build, _ = WIRES[request.param]
    stream, marker = RICH[request.param]
    return path, build, stream, marker


async def whole_events(
    server: LocalServer, tmp_path: Path, path: str, build: Build, stream: bytes
) -> list[ProviderEvent]:
    server.script(path, Reply(chunks=[stream]))
    events = await collect(build(server, tmp_path, HttpPolicy(attempts=1)))
    assert events, "the whole stream yields events"
    return events


def same_events(got: list[ProviderEvent], whole: list[ProviderEvent]) -> bool:
    """The same events in the same order, however the text was cut into deltas (each read of
    the body hands on its text as one delta, so the cut follows the reads)."""
    return coalesced(got) == coalesced(whole)


def a_prefix(got: list[ProviderEvent], whole: list[ProviderEvent]) -> bool:
    """`got` is how `whole` begins, however the text was cut into deltas."""
    g, w = coalesced(got), coalesced(whole)
    if not g or len(g) > len(w) or g[:-1] != w[: len(g) - 1]:
        return False
    last, there = g[-1], w[len(g) - 1]
    if isinstance(last, TextDelta) and isinstance(there, TextDelta):
        return there.text.startswith(last.text)
    return last == there


def texts(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def cut_before_dispatch(stream: bytes, marker: str) -> int:
    """Where the event holding `marker` has all its field lines but not its blank line: a
    client that delivered the unterminated tail would hand on a whole, valid event."""
    start = stream.index(marker.encode())
    return stream.index(b"\n\n", start) + 1


# ---- a slow drip ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["openai-chat", "openai-responses", "anthropic"])
async def test_slow_drip_gives_the_same_events_as_the_whole_stream(
    server: LocalServer, tmp_path: Path, name: str
) -> None:
    path, build, _ = WIRES[name]
    stream, _ = RICH[name]
    whole = await whole_events(server, tmp_path, path, build, stream)
    pause, inactivity = 0.001, 0.25
    assert len(stream) * pause > inactivity  # the drip as a whole outlasts the inactivity bound
    server.script(path, Reply(chunks=split_every(stream, 1), delay_s=pause))
    started = time.monotonic()
    with anyio.fail_after(NO_HANG_S):
        dripped = await collect(build(server, tmp_path, HttpPolicy(attempts=1, inactivity_s=0.25)))
    assert same_events(dripped, whole)
    # no total-duration cap: only the pause between bytes counts against inactivity
    assert time.monotonic() - started > inactivity


# ---- BOM and CRLF ---------------------------------------------------------------------------


async def test_bom_and_crlf_give_the_same_events(
    server: LocalServer, tmp_path: Path, rich: tuple[str, Build, bytes, str]
) -> None:
    path, build, stream, _ = rich
    whole = await whole_events(server, tmp_path, path, build, stream)
    framed = b"\xef\xbb\xbf" + stream.replace(b"\n", b"\r\n")
    # two-byte chunks split the BOM, CRLF pairs and multi-byte characters
    server.script(path, Reply(chunks=split_every(framed, 2), chunked=True))
    assert same_events(await collect(build(server, tmp_path, HttpPolicy(attempts=1))), whole)


# ---- the final event's blank line never comes -----------------------------------------------


@pytest.mark.parametrize("chunked", [False, True])
async def test_final_event_without_its_blank_line_is_delivered_at_eof(
    server: LocalServer, tmp_path: Path, rich: tuple[str, Build, bytes, str], chunked: bool
) -> None:
    path, build, stream, _ = rich
    whole = await whole_events(server, tmp_path, path, build, stream)
    assert stream.endswith(b"\n\n")
    server.script(path, Reply(chunks=split_every(stream[:-1], 7), chunked=chunked))
    with anyio.fail_after(NO_HANG_S):
        assert same_events(await collect(build(server, tmp_path, HttpPolicy(attempts=1))), whole)
    assert len(server.requests) == 2


# ---- the connection ends in the middle of an event ------------------------------------------

Ending = Literal["dropped", "stalled", "closed"]
# How each ending fails the attempt. A chunked body that stops before its last chunk is a
# transport failure; so is silence past the inactivity bound. A close-delimited body cannot
# tell a dropped connection from its end: the missing final event shows the stream was cut.
FAILS_AS = {
    "dropped": "transport_failed",
    "stalled": "transport_failed",
    "closed": "malformed_stream",
}


def ending_reply(ending: Ending, body: bytes) -> Reply:
    if ending == "dropped":
        return Reply(chunks=[body], chunked=True, drop=True)
    if ending == "stalled":
        return Reply(chunks=[body], chunked=True, hang=True)
    return Reply(chunks=[body])


@pytest.mark.parametrize("ending", sorted(FAILS_AS))
async def test_mid_event_end_after_delivered_events_fails_cleanly(
    server: LocalServer, tmp_path: Path, rich: tuple[str, Build, bytes, str], ending: Ending
) -> None:
    path, build, stream, marker = rich
    whole = await whole_events(server, tmp_path, path, build, stream)
    server.script(path, ending_reply(ending, stream[: cut_before_dispatch(stream, marker)]))
    inactivity = 0.3 if ending == "stalled" else 60.0
    policy = HttpPolicy(attempts=3, inactivity_s=inactivity, sleep=Sleeps())
    got: list[ProviderEvent] = []
    with anyio.fail_after(NO_HANG_S), pytest.raises(ProviderError) as err:
        async for event in build(server, tmp_path, policy).stream(REQUEST):
            got.append(event)
    assert (err.value.code, err.value.retryable) == (FAILS_AS[ending], True)
    assert a_prefix(got, whole), "only whole events, in order"
    # A clean close ends the stream: the event whose lines all arrived is handed on (EOF-tail
    # delivery). A dropped or stalled body is broken: its pending event never is.
    assert (marker in texts(got)) == (ending == "closed")
    assert len(server.requests) == 2, "output was delivered: no retry would repeat it"
    if ending == "stalled":
        assert await anyio.to_thread.run_sync(server.client_closed.wait, 5.0)


@pytest.mark.parametrize("ending", sorted(FAILS_AS))
async def test_cut_before_any_event_is_retried(
    server: LocalServer, tmp_path: Path, rich: tuple[str, Build, bytes, str], ending: Ending
) -> None:
    path, build, stream, _ = rich
    whole = await whole_events(server, tmp_path, path, build, stream)
    first_event_half = stream[: stream.index(b"\n\n") // 2]
    server.script(path, ending_reply(ending, first_event_half), Reply(chunks=[stream]))
    sleeps = Sleeps()
    policy = HttpPolicy(attempts=2, sleep=sleeps, inactivity_s=0.3)
    with anyio.fail_after(NO_HANG_S):
        again = await collect(build(server, tmp_path, policy))
    assert same_events(again, whole)
    assert len(server.requests) == 3 and len(sleeps.delays) == 1


# ---- error bodies cut short, and 5xx --------------------------------------------------------

CHAT_PATH, CHAT_BUILD, CHAT_OK = WIRES["openai-chat"]


async def test_a_dropped_error_body_cannot_prove_context_overflow(
    server: LocalServer, tmp_path: Path
) -> None:
    cut = OVERFLOW[: OVERFLOW.index(b"maximum")]
    assert b"context_length_exceeded" in cut  # the marker arrived, the body did not end
    server.script(
        CHAT_PATH,
        Reply(400, [OVERFLOW], chunked=True),
        Reply(400, [cut], chunked=True, drop=True),
    )
    policy = HttpPolicy(attempts=2, sleep=Sleeps())
    codes = []
    for _ in range(2):
        with anyio.fail_after(NO_HANG_S), pytest.raises(ProviderError) as err:
            await collect(CHAT_BUILD(server, tmp_path, policy))
        codes.append((err.value.code, err.value.status, err.value.retryable))
    assert codes == [("context_overflow", 400, False), ("refused", 400, False)]
    assert len(server.requests) == 2


async def test_a_dropped_5xx_body_stays_retryable(server: LocalServer, tmp_path: Path) -> None:
    server.script(
        CHAT_PATH, Reply(503, [b'{"error": "ov'], chunked=True, drop=True), Reply(chunks=[CHAT_OK])
    )
    sleeps = Sleeps()
    with anyio.fail_after(NO_HANG_S):
        events = await collect(CHAT_BUILD(server, tmp_path, HttpPolicy(attempts=2, sleep=sleeps)))
    assert ends_well(events) and len(sleeps.delays) == 1


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_5xx_then_success_on_every_wire(
    server: LocalServer, tmp_path: Path, status: int
) -> None:
    for path, build, ok in WIRES.values():
        sleeps = Sleeps()
        server.script(path, Reply(status, [b"busy"]), Reply(chunks=[ok]))
        policy = HttpPolicy(attempts=2, base_delay_s=0.5, sleep=sleeps, jitter=lambda: 1.0)
        assert ends_well(await collect(build(server, tmp_path, policy)))
        assert sleeps.delays == [0.5]
