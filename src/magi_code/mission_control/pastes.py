"""Collapsed pastes: a large paste stands in the editor as one token, its text kept here. Pure.

A paste of more than PASTE_INLINE_LINES lines or PASTE_INLINE_CHARS characters is shown as
`[Pasted text #N, L lines]` (N counts the pastes of one message); what is sent has every token
still in the editor replaced by its text, in one pass, so a pasted text that itself reads like
a token is never expanded again. A token is edited whole (the editor asks `span_at`), and one
that is no longer in the editor is forgotten (`keep_only`).
"""

import re

from magi_code.limits import PASTE_INLINE_CHARS, PASTE_INLINE_LINES


def line_count(text: str) -> int:
    return text.count("\n") + (not text.endswith("\n"))


def collapses(text: str) -> bool:
    """Whether a paste of `text` is shown as a token."""
    return len(text) > PASTE_INLINE_CHARS or line_count(text) > PASTE_INLINE_LINES


def normalized(text: str) -> str:
    """A terminal's paste with LF newlines (terminals send CR, or CR LF, for Enter)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


class Pastes:
    def __init__(self) -> None:
        self.texts: dict[str, str] = {}  # token -> the pasted text
        self.made = 0

    def token_for(self, text: str) -> str:
        self.made += 1
        lines = line_count(text)
        token = f"[Pasted text #{self.made}, {lines} line{'' if lines == 1 else 's'}]"
        self.texts[token] = text
        return token

    def expand(self, shown: str) -> str:
        """What `shown` (the editor's text) sends: each kept token replaced by its text."""
        if not self.texts:
            return shown
        tokens = re.compile("|".join(map(re.escape, self.texts)))
        return tokens.sub(lambda found: self.texts[found.group()], shown)

    def span_at(self, line: str, column: int) -> tuple[int, int] | None:
        """The columns (start, end) of the kept token on `line` that holds `column` (its two
        edges included), if any."""
        for token in self.texts:
            start = line.find(token)
            while start >= 0:
                if start <= column <= start + len(token):
                    return start, start + len(token)
                start = line.find(token, start + 1)
        return None

    def keep_only(self, shown: str) -> None:
        """Forget the pastes whose tokens `shown` no longer holds; with none left, the next
        paste is #1 again."""
        for token in [token for token in self.texts if token not in shown]:
            del self.texts[token]
        if not self.texts:
            self.made = 0

    def clear(self) -> None:
        self.texts.clear()
        self.made = 0
