"""When a screen draws: at most once a frame (Textual's MAX_FPS), counted from its last draw,
and at once for the focused widget: a key typed while a reply streams is echoed on the next
turn of the loop, never behind the streamed frames' cap (issue 29).

Textual draws a screen from one paused interval timer (`Screen._update_timer`): a refresh
resumes it, and its tick draws and pauses it again. Its skip rule (textual/timer.py: `count =
int((now - start) / interval + 1)`, then a tick at `start + (count + 1) * interval`) puts the
tick after a draw that came off its grid (any draw after a quiet spell) one to two frames
later, and a key is held by the cap like any other refresh: a key typed just after a streamed
frame waited up to 33 ms before its echo was even drawn. `FrameTimer` counts the cap from the
last draw (a refresh waits at most one frame, none when the last draw is older) and lets the
focused widget's refresh through it (a person types far below the frame rate).

Textual's internals are touched here only (the timer's loop, the screen's timer slot and dirty
set), the way terminal_keys.py touches its key map; written against Textual 8.2.
"""

import asyncio
import contextlib

from textual._time import get_time
from textual.screen import UPDATE_PERIOD, Screen
from textual.timer import EventTargetGone, Timer


class FrameTimer(Timer):
    """A screen's update timer: once resumed, it ticks a frame after its last tick, or at once
    when that has passed or when the focused widget (the composer, as a key is typed) waits to
    be drawn."""

    def __init__(self, screen: Screen[object]) -> None:
        super().__init__(
            screen,
            UPDATE_PERIOD,
            name="screen_update",
            callback=screen._on_timer_update,
            pause=True,
        )
        self.screen = screen
        self.urgent = asyncio.Event()

    def resume(self) -> None:
        super().resume()
        focused = self.screen.focused
        if focused is not None and focused in self.screen._dirty_widgets:
            self.urgent.set()

    async def _run(self) -> None:
        drawn = float("-inf")
        while True:
            await self._active.wait()
            wait = drawn + self._interval - get_time()
            if wait > 0 and not self.urgent.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self.urgent.wait()
                continue  # paused meanwhile (a layout drew it all): wait to be resumed again
            self.urgent.clear()
            drawn = get_time()
            try:
                await self._tick(next_timer=drawn, count=0)
            except EventTargetGone:
                return


def frame_timer(screen: Screen[object]) -> Timer:
    """The screen's update timer, made on first use as Textual makes its own (and kept, as
    Textual keeps its own, in the screen)."""
    kept = vars(screen)
    timer = kept.get("_frame_timer")
    if not isinstance(timer, FrameTimer):
        timer = kept["_frame_timer"] = FrameTimer(screen)
        timer._start()
        screen._timers.add(timer)
    return timer


def draw_promptly() -> None:
    """Every screen draws through a FrameTimer (idempotent)."""
    type.__setattr__(Screen, "_update_timer", property(frame_timer))
