"""The pages a streamed reply is drawn in (mission_control/pages.py): cut only where a
top-level block begins past UI_PAGE_CHARS, a too-long block cut between its lines (a fence
closed and opened again), and nothing of the text ever lost, however the deltas split it."""

from hypothesis import given, settings
from hypothesis import strategies as st

from magi_code.limits import UI_PAGE_CHARS, UI_PAGE_MAX_CHARS
from magi_code.mission_control.pages import Page, paginate


def paragraph(size: int) -> str:
    """A paragraph of exactly `size` characters with its blank line."""
    return ("word " * size)[: size - 3] + ".\n\n"


def test_a_short_reply_is_one_open_page() -> None:
    text = paragraph(UI_PAGE_CHARS - 1)[:-1]
    assert paginate(text) == [Page(text)]


def test_a_block_beginning_exactly_at_the_bound_starts_a_page_one_sooner_does_not() -> None:
    at_bound = paragraph(UI_PAGE_CHARS) + "next block\n"
    assert [p.text for p in paginate(at_bound)] == [paragraph(UI_PAGE_CHARS), "next block\n"]
    sooner = paragraph(UI_PAGE_CHARS - 1) + "next block\n"
    assert paginate(sooner) == [Page(sooner)]


def test_a_cut_lands_on_its_block_whatever_line_ends_came_before() -> None:
    for odd in ("\u2028", "\x0c", "\r"):  # not line ends to markdown-it, or a lone one
        first = odd + paragraph(UI_PAGE_CHARS)[1:]
        pages = paginate(first + "next block\n")
        assert [p.text for p in pages] == [first, "next block\n"], repr(odd)


def test_a_list_or_a_fence_is_never_split_at_its_blank_lines() -> None:
    items = "".join(f"- item {n}\n\n" for n in range(UI_PAGE_CHARS // 8))  # one loose list
    fence = "```py\n" + "x = 1\n\n" * (UI_PAGE_CHARS // 6) + "```\n"
    for block in (items, fence):
        text = paragraph(UI_PAGE_CHARS) + block + "after\n"
        pages = paginate(text)
        assert [p.text for p in pages] == [paragraph(UI_PAGE_CHARS), block, "after\n"]


def test_a_fence_longer_than_a_page_is_cut_at_a_line_and_drawn_as_code_on_both_sides() -> None:
    opener, line = "```python\n", "print('a line of code')\n"
    code = line * (UI_PAGE_MAX_CHARS // len(line) + 5)
    pages = paginate(opener + code + "```\n")
    assert "".join(p.text for p in pages) == opener + code + "```\n"
    first, second = pages[0], pages[1]
    assert len(first.text) <= UI_PAGE_MAX_CHARS and first.text.endswith("\n")
    assert first.closes == "```\n" and second.opens == opener
    assert second.markdown().startswith(opener) and first.markdown().endswith("```\n")


def test_one_line_longer_than_a_page_is_cut_at_the_bound() -> None:
    text = "x" * (UI_PAGE_MAX_CHARS + 1)
    assert [len(p.text) for p in paginate(text)] == [UI_PAGE_MAX_CHARS, 1]


def test_the_last_line_unfinished_never_decides_a_cut() -> None:
    text = paragraph(UI_PAGE_CHARS) + "- a list that may"
    assert len(paginate(text)) == 1  # "- a list" could still become anything
    assert len(paginate(text + " go on\n")) == 2


REPLY = st.lists(
    st.sampled_from(
        [
            "word ",
            "\n",
            "\n\n",
            "- item\n",
            "```\n",
            "```py\n",
            "| a | b |\n",
            "# title\n",
            "x" * 700,
            *("\r", "\r\n", "\u2028", "\x0c"),  # line ends markdown-it and splitlines differ on
        ]
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(REPLY, st.lists(st.integers(1, 900), min_size=1, max_size=30))
def test_pages_fed_in_any_deltas_hold_the_whole_text(parts: list[str], cuts: list[int]) -> None:
    text = "".join(parts)
    closed: list[Page] = []
    open_page = Page("")
    at = 0
    for size in cuts * (len(text) // max(1, sum(cuts)) + 1):
        if at >= len(text):
            break
        pages = paginate(open_page.text + text[at : at + size], open_page.opens)
        closed += pages[:-1]
        open_page, at = pages[-1], at + size
    assert "".join(p.text for p in [*closed, open_page]) == text
    assert all(len(p.text) <= UI_PAGE_MAX_CHARS or "\n" in p.text for p in closed)
