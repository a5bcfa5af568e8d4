"""The status bar's line: as many of its parts as the bar's width holds, each whole. A part
is never cut (`sandbox:` without its mode misleads more than no word of the sandbox at all);
the least needed go first, the rest keep their places."""

from collections.abc import Sequence

from rich.cells import cell_len
from textual.widgets import Static

SEPARATOR = " · "


def fitted(parts: Sequence[tuple[str, int]], width: int) -> str:
    """`parts` are (text, rank) in the order shown; rank 0 is always kept, and the others
    are left out from the highest rank down (the later shown first among equals) until the
    line fits `width` cells."""
    order = sorted((i for i, (_, rank) in enumerate(parts) if rank), key=lambda i: (parts[i][1], i))
    kept = set(range(len(parts)))
    line = SEPARATOR.join(text for text, _ in parts)
    while cell_len(line) > width and order:
        kept.discard(order.pop())
        line = SEPARATOR.join(text for i, (text, _) in enumerate(parts) if i in kept)
    return line


class StatusBar(Static):
    """The bar itself: fits its parts to the width it has each time it is drawn, so a
    resized terminal gets a line made for its width."""

    def __init__(self, *, id: str) -> None:
        super().__init__("", id=id)
        self.parts: Sequence[tuple[str, int]] = ()

    def show(self, parts: Sequence[tuple[str, int]]) -> None:
        self.parts = parts
        self.refresh()

    def render(self) -> str:
        return fitted(self.parts, self.content_size.width)
