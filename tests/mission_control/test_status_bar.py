"""The status bar keeps whole parts only: at its exact width every part shows, one cell less
leaves out the least needed; the state and the approval mode stay at 60 columns; a resize
fits the line again. `fitted` alone, then the real app through Textual's Pilot."""

from pathlib import Path

import pytest
from textual.widgets import Static

from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver
from magi_code.mission_control.status_bar import SEPARATOR, fitted
from mission_control.helpers import make_driver

PARTS = [("idle", 0), ("model", 3), ("context 5%", 4), ("tokens 9 in", 5), ("approvals: ask", 1)]
WHOLE = SEPARATOR.join(text for text, _ in PARTS)


def test_a_line_of_exactly_the_width_keeps_every_part() -> None:
    assert fitted(PARTS, len(WHOLE)) == WHOLE


def test_one_cell_less_leaves_out_the_highest_rank_whole() -> None:
    assert fitted(PARTS, len(WHOLE) - 1) == "idle · model · context 5% · approvals: ask"


def test_parts_go_by_rank_and_the_later_first_among_equals() -> None:
    parts = [("state", 0), ("a", 2), ("b", 2), ("c", 1)]
    assert fitted(parts, len("state · a · c")) == "state · a · c"
    assert fitted(parts, len("state · c")) == "state · c"


def test_rank_zero_stays_even_when_nothing_fits() -> None:
    assert fitted(PARTS, 2) == "idle"
    assert fitted([("a wide state", 0)], 3) == "a wide state"


def test_wide_characters_count_as_two_cells() -> None:
    parts = [("idle", 0), ("模型", 1)]
    assert fitted(parts, len("idle · ") + 4) == "idle · 模型"
    assert fitted(parts, len("idle · ") + 3) == "idle"


@pytest.fixture
def driver(tmp_path: Path, workspace: Path) -> Driver:
    return make_driver(tmp_path, workspace)


def shown(app: MissionControl) -> str:
    return str(app.query_one("#status", Static).render())


@pytest.mark.anyio
async def test_the_bar_fits_its_width_and_again_after_a_resize(driver: Driver) -> None:
    app = MissionControl(driver)
    try:
        async with app.run_test(size=(200, 30)) as pilot:
            await pilot.pause()
            wide = shown(app)
            assert wide.startswith("idle · fixture/fixture-model · context 0% of")
            assert wide.endswith("out · approvals: ask · sandbox: workspace-write")
            await pilot.resize_terminal(60, 15)
            await pilot.pause()
            narrow = shown(app)
            assert narrow == "idle · approvals: ask · sandbox: workspace-write"
            assert len(narrow) <= 58
            await pilot.resize_terminal(200, 30)
            await pilot.pause()
            assert shown(app) == wide
    finally:
        driver.close()
