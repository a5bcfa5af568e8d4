"""When a screen draws (frame_timer.py, issue 29): at most once a frame, counted from its last
draw (Textual's own timer could wait two frames after a draw off its grid), and a key for the
focused widget at once, never behind that cap. The frame is stretched to PERIOD so that each
bound leaves a loaded machine a margin of half a frame (100 ms)."""

import asyncio
import time
from collections.abc import Iterator
from itertools import pairwise

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.reactive import reactive
from textual.widgets import Input, Static

from magi_code.mission_control import frame_timer
from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver
from magi_code.mission_control.frame_timer import FrameTimer, draw_promptly

pytestmark = pytest.mark.anyio

PERIOD = 0.2
STREAM_S = 0.02  # the streamed text changes much more often than a frame
KEYS = "abcd"


class Composer(Input):
    cursor_blink = reactive(False, init=False)  # a blink would draw too


class Streaming(App[None]):
    """A composer, and a text that changes every STREAM_S while it is on."""

    def compose(self) -> ComposeResult:
        yield Composer(id="composer")
        yield Static("", id="stream")

    def stream(self) -> None:
        count = iter(range(1_000_000))
        stream = self.query_one("#stream", Static)
        self.set_interval(STREAM_S, lambda: stream.update(f"frame {next(count)}"))


Draw = tuple[float, str]  # when, and what the composer held


@pytest.fixture
def draws(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Draw]]:
    monkeypatch.setattr(frame_timer, "UPDATE_PERIOD", PERIOD)
    draw_promptly()
    made: list[Draw] = []
    tick = FrameTimer._tick

    async def counted(timer: FrameTimer, *, next_timer: float, count: int) -> None:
        composer = timer.screen.query("#composer")
        made.append((time.monotonic(), composer.first(Input).value if composer else ""))
        await tick(timer, next_timer=next_timer, count=count)

    monkeypatch.setattr(FrameTimer, "_tick", counted)
    yield made


async def drawn_after(draws: list[Draw], seen: int, seconds: float = 5.0) -> Draw:
    """The first draw after the first `seen` (awaited on the app's own loop, not a pilot's
    pause: that draws by itself)."""
    deadline = time.monotonic() + seconds
    while len(draws) <= seen:
        assert time.monotonic() < deadline, "the screen never drew"
        await asyncio.sleep(0.002)
    return draws[seen]


async def test_streamed_frames_keep_the_cap_counted_from_the_last_draw(
    draws: list[Draw],
) -> None:
    app = Streaming()
    async with app.run_test():
        assert isinstance(app.screen._update_timer, FrameTimer)
        app.stream()
        seen = len(draws)
        for _ in range(5):
            await drawn_after(draws, seen)
            seen = len(draws)
    gaps = [later - earlier for (earlier, _), (later, _) in pairwise(draws)]
    streamed = gaps[-4:]
    assert all(gap >= PERIOD * 0.95 for gap in streamed), streamed  # the cap holds
    assert all(gap < PERIOD * 1.5 for gap in streamed), streamed  # one frame, not two


async def test_a_key_is_drawn_at_once_while_the_stream_waits_for_its_frame(
    draws: list[Draw],
) -> None:
    app = Streaming()
    async with app.run_test():
        app.stream()
        for key in KEYS:
            posted = (await drawn_after(draws, len(draws)))[0]  # right after a streamed frame
            app.post_message(events.Key(key, key))
            shown = None
            while shown is None:
                at, composer = await drawn_after(draws, len(draws))
                shown = at if composer.endswith(key) else None
            assert shown - posted < PERIOD / 2, f"{key!r} waited {shown - posted:.3f} s"
        assert app.query_one("#composer", Input).value == KEYS


async def test_mission_control_draws_through_frame_timers(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=(80, 20)):
        assert isinstance(app.screen._update_timer, FrameTimer)
