"""Where a Markdown reply is cut into pages, so that a streaming frame redraws only its last one.

Sans-I/O: text in, pages out. A page ends where a top-level Markdown block begins (markdown-it's
own block map, with the parser rich draws with, so a list, a table or a fence is never split)
once the page holds at least UI_PAGE_CHARS. A single block that outgrows UI_PAGE_MAX_CHARS (a
long code fence, most often) is cut at a line start, or mid-line when one line alone is that
long; a fence cut so is closed on the page before and opened again, info string and all, on
the page after, so both pages draw as code. Only complete lines decide a cut: the last line
may still change what it starts.

The pages' `text` put together is the input, always; the last page is the open one, which
the next delta extends (`paginate(last.text + delta, last.opens)`).
"""

import re
from bisect import bisect_left
from functools import cache
from itertools import accumulate

from markdown_it import MarkdownIt

from magi_code.limits import UI_PAGE_CHARS, UI_PAGE_MAX_CHARS
from magi_code.records import record


@record
class Page:
    text: str  # what the page holds of the reply
    opens: str = ""  # a fence's opening line drawn before it: its code began on a page before
    closes: str = ""  # a fence's closing line drawn after it: its code goes on after

    def markdown(self) -> str:
        return self.opens + self.text + self.closes


# Where markdown-it ends a line (after \n, \r\n or a lone \r), so that its line numbers and
# ours agree (str.splitlines would also end one at U+2028 and friends).
LINE_END = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


@cache
def parser() -> MarkdownIt:
    return MarkdownIt().enable("strikethrough").enable("table")


def paginate(text: str, opens: str = "") -> list[Page]:
    """`text` (which follows the fence line `opens`, if any) as pages; never empty."""
    if len(text) < UI_PAGE_CHARS:
        return [Page(text, opens)]
    source = opens + text
    lines = [line for line in LINE_END.split(source) if line]
    starts = [0, *accumulate(len(line) for line in lines)]  # of each line, in `source`
    complete = len(lines) - (0 if source.endswith(("\n", "\r")) else 1)  # that can decide
    fences: list[Fence] = []
    blocks: list[int] = []  # where top-level blocks begin, in `text`
    for token in parser().parse(source):
        if token.level != 0 or token.map is None or token.nesting < 0:
            continue
        first, end = token.map
        if first < complete and starts[first] >= len(opens):
            blocks.append(starts[first] - len(opens))
        if token.type == "fence" and first + 1 < len(starts):
            code = (starts[first + 1] - len(opens), starts[min(end, len(lines))] - len(opens))
            fences.append(Fence(*code, lines[first].rstrip("\n") + "\n", token.markup + "\n"))
    pages: list[Page] = []
    begin, carried = 0, opens
    while True:
        at = bisect_left(blocks, begin + UI_PAGE_CHARS)
        cut = blocks[at] if at < len(blocks) else None
        if (len(text) if cut is None else cut) - begin > UI_PAGE_MAX_CHARS:
            # One block outgrew a page: cut it at a line start (or mid-line, as a last resort).
            limit = begin + UI_PAGE_MAX_CHARS
            cut = text.rfind("\n", begin, limit) + 1
            cut = cut if cut > begin else limit
            fence = next((f for f in fences if f.code_begins <= cut < f.code_ends), None)
            closes = fence.closer if fence else ""
            pages.append(Page(text[begin:cut], carried, closes))
            begin, carried = cut, fence.opener if fence else ""
        elif cut is None:
            pages.append(Page(text[begin:], carried))
            return pages
        else:
            pages.append(Page(text[begin:cut], carried))
            begin, carried = cut, ""


@record
class Fence:
    """A fenced code block as `paginate` sees it: where its code lines lie in the text, and
    the lines that open and close it."""

    code_begins: int
    code_ends: int
    opener: str
    closer: str
