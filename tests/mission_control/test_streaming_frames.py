"""Rendering keeps up with the model: a streamed reply is drawn once a frame (UI_FRAME_MS),
never once a delta, and a frame redraws only the reply's last page, however many pages it
already has. Counted on the real app, driver, runner and fixture provider, headless."""

import statistics
import time

import pytest
from textual.strip import Strip

from magi_code.limits import UI_FRAME_MS, UI_PAGE_CHARS
from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver
from magi_code.mission_control.widgets import AssistantMessage, MarkdownPage, PromptArea
from magi_code.runner.events import MessageDelta
from mission_control.helpers import until
from support.sessions import script

pytestmark = pytest.mark.anyio

DELTAS = 150
DELAY_MS = 1  # a fast model: deltas come faster than frames
PARAGRAPH = "a paragraph of a long reply, one of the many the model writes in a row.\n\n"


async def test_a_reply_is_drawn_once_a_frame_and_only_its_last_page(
    driver: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: list[MarkdownPage] = []
    show = MarkdownPage.show

    def counted(page: MarkdownPage, source: str) -> None:
        if source != page.source:
            drawn.append(page)
        show(page, source)

    monkeypatch.setattr(MarkdownPage, "show", counted)
    app = MissionControl(driver)
    async with app.run_test(size=(100, 30)) as pilot:
        app.query_one(PromptArea).insert(
            script({"text": PARAGRAPH, "repeat": DELTAS, "delay_ms": DELAY_MS})
        )
        started = time.monotonic()
        await pilot.press("enter")
        await until(pilot, lambda: app.control is None and app.query(AssistantMessage), 20)
        took = time.monotonic() - started
        [message] = app.query(AssistantMessage)
        pages = list(message.query(MarkdownPage))
    assert message.shown == PARAGRAPH * DELTAS
    assert len(pages) >= len(message.shown) // (UI_PAGE_CHARS + len(PARAGRAPH))
    frames = took * 1000 / UI_FRAME_MS + 2
    assert len(drawn) <= frames  # one page redrawn a frame: not one per delta, nor per page
    assert len(drawn) < DELTAS / 2 and len(pages) > 10  # deltas were coalesced


FRAMES = 160  # about 45 pages of Markdown by the end
MEASURED = 20  # frames measured at each end


async def test_a_frames_markdown_costs_no_more_however_long_the_reply_grew(
    driver: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CPU time a streamed frame spends making Markdown lines (parsing and rendering),
    early in a long reply and again some forty pages on, in the same process: at most twice
    as much (a reply parsed and drawn whole each frame costs more with every frame)."""
    spent = [0.0]
    lines = MarkdownPage.lines

    def timed(page: MarkdownPage, width: int) -> list[Strip]:
        started = time.thread_time()
        try:
            return lines(page, width)
        finally:
            spent[0] += time.thread_time() - started

    monkeypatch.setattr(MarkdownPage, "lines", timed)
    app = MissionControl(driver)
    said = "".join(f"({n}) {PARAGRAPH}" for n in range(3 * FRAMES))
    async with app.run_test(size=(100, 30)) as pilot:
        costs: list[float] = []
        for frame in range(FRAMES):
            part = said[frame * len(said) // FRAMES : (frame + 1) * len(said) // FRAMES]
            app.delta(MessageDelta("m", 0, part))
            spent[0] = 0.0
            await app.flush()
            await pilot.pause()
            costs.append(spent[0])
        [message] = app.query(AssistantMessage)
        pages = len(message.query(MarkdownPage))
    early = statistics.median(costs[MEASURED // 2 : MEASURED * 3 // 2])
    late = statistics.median(costs[-MEASURED:])
    assert late <= 2 * early, f"a frame took {early * 1000:.2f} ms early, {late * 1000:.2f} ms late"
    assert message.shown == said and pages > 40
