"""The running card's output tail (mission_control/live_tail.py) at its bounds."""

from magi_code.limits import UI_LIVE_OUTPUT_CHARS, UI_LIVE_OUTPUT_LINES
from magi_code.mission_control.live_tail import LiveTail


def printed(count: int) -> str:
    return "".join(f"L{n}.\n" for n in range(1, count + 1))


def test_exactly_the_bound_of_lines_all_show_one_more_drops_the_first() -> None:
    tail = LiveTail()
    tail.add(printed(UI_LIVE_OUTPUT_LINES))
    assert tail.lines() == [f"L{n}." for n in range(1, UI_LIVE_OUTPUT_LINES + 1)]
    tail.add(f"L{UI_LIVE_OUTPUT_LINES + 1}.\n")
    assert tail.lines() == [f"L{n}." for n in range(2, UI_LIVE_OUTPUT_LINES + 2)]


def test_at_most_the_bound_of_characters_is_kept() -> None:
    tail = LiveTail()
    tail.add("a" * UI_LIVE_OUTPUT_CHARS)
    assert tail.lines() == ["a" * UI_LIVE_OUTPUT_CHARS]
    tail.add("b")
    assert tail.lines() == ["a" * (UI_LIVE_OUTPUT_CHARS - 1) + "b"]


def test_a_carriage_return_writes_its_line_over_as_a_terminal_does() -> None:
    tail = LiveTail()
    tail.add("10%\r50%\r")
    assert tail.lines() == ["50%"]
    tail.add("100%\r\ndone\n")
    assert tail.lines() == ["100%", "done"]


def test_changed_says_whether_there_is_more_to_draw() -> None:
    tail = LiveTail()
    assert not tail.changed
    tail.add("x")
    assert tail.changed
    tail.lines()
    assert not tail.changed
    tail.add("")
    assert not tail.changed
