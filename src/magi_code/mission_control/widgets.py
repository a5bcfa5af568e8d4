"""The pieces of the conversation on screen: messages, tool cards, notices, the prompt editor.

Streaming rule: an assistant message takes deltas into a buffer (a list append, nothing
drawn) and the app flushes every buffer once a frame (UI_FRAME_MS), so the cost of drawing
follows the frame rate, not the delta rate. The reconciled text, which is authoritative,
replaces what was streamed only when it differs.
"""

import time
from collections.abc import Awaitable

from rich.text import Text
from textual import events
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Collapsible, Markdown, Static, TextArea

from magi_code.limits import PROMPT_BYTES, UI_PAGE_CHARS, UI_STREAM_MARKDOWN_CHARS

DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))


def diff_text(diff: str) -> Text:
    """A unified diff, coloured line by line (added green, removed red, hunks cyan)."""
    shown = Text()
    for line in diff.splitlines(keepends=True):
        style = next((s for prefix, s in DIFF_STYLES if line.startswith(prefix)), "")
        shown.append(line, style)
    return shown


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


class UserMessage(Static):
    def __init__(self, text: str) -> None:
        super().__init__(Text("› ", style="bold cyan") + Text(text), classes="user")
        self.text = text


class Notice(Static):
    """A line from the face itself: outcomes, diagnostics, command output."""

    def __init__(self, text: str | Text, kind: str = "info") -> None:
        super().__init__(text, classes=f"notice {kind}")
        self.text = text

    def visual_text(self) -> Text:
        return self.text if isinstance(self.text, Text) else Text(self.text, style="dim")


class AssistantMessage(Vertical):
    """One assistant segment. While it streams, its first UI_STREAM_MARKDOWN_CHARS are drawn
    as Markdown and the rest as plain pages of UI_PAGE_CHARS, so a frame rewraps at most one
    page however long the reply grows; the reconciled text is then drawn as Markdown once."""

    def __init__(self) -> None:
        self.markdown = Markdown("")
        super().__init__(self.markdown, classes="assistant")
        self.pending: list[str] = []
        self.shown = ""
        self.pages: list[Static] = []
        self.page_text = ""
        self.mounting: Awaitable[None] | None = None  # mounted from a sync delta: not yet

    async def mounted(self) -> None:
        if self.mounting is not None:
            await self.mounting
            self.mounting = None

    def take(self, text: str) -> None:
        self.pending.append(text)

    async def flush(self) -> None:
        if not self.pending or not self.is_mounted:
            return
        text = "".join(self.pending)
        self.pending.clear()
        self.shown += text
        if not self.pages and len(self.markdown.source) + len(text) <= UI_STREAM_MARKDOWN_CHARS:
            await self.markdown.append(text)
            return
        if not self.pages or len(self.page_text) >= UI_PAGE_CHARS:
            self.pages.append(Static("", classes="page"))
            self.page_text = ""
            await self.mount(self.pages[-1])
        self.page_text += text
        self.pages[-1].update(Text(self.page_text))

    async def settle(self, text: str, partial: bool) -> None:
        """The authoritative text: drawn only where it differs from what was drawn."""
        await self.mounted()
        self.pending.clear()
        self.shown = text
        if self.pages:
            await self.remove_children(self.pages)
            self.pages, self.page_text = [], ""
        if text != self.markdown.source:
            await self.markdown.update(text)
        if partial:
            self.add_class("partial")


class Reasoning(Collapsible):
    def __init__(self, text: str) -> None:
        super().__init__(Static(text, classes="reasoning-text"), title="thinking", collapsed=False)
        self.add_class("reasoning")


STATE_MARKS = {"started": "…", "completed": "✓", "failed": "✗"}


class ToolCard(Collapsible):
    """One tool call: name, summary, state and duration; expands to its output or diff."""

    def __init__(self, name: str, summary: str) -> None:
        self.body = Static("", classes="tool-body")
        super().__init__(self.body, title="", collapsed=True)
        self.add_class("tool")
        self.tool, self.summary, self.state = name, summary, "started"
        self.started = time.monotonic()
        self.seconds: float | None = None
        self.diff: str | None = None
        self.title = self.heading()

    def heading(self) -> str:
        mark = STATE_MARKS.get(self.state, "?")
        took = "" if self.seconds is None else f" · {self.seconds:.1f}s"
        return f"{mark} {self.tool} · {self.summary} · {self.state}{took}"

    def update_state(self, state: str, summary: str) -> None:
        self.state, self.summary = state, summary
        if state != "started":
            self.seconds = time.monotonic() - self.started
        self.set_class(state == "failed", "failed")
        self.title = self.heading()

    def show_output(self, output: str | None, diff: str | None) -> None:
        if diff:
            self.diff = diff
            self.body.update(diff_text(diff))
            self.collapsed = False  # an edit is shown as its diff
        elif output:
            self.body.update(Text(output))


class QueuedMessage(Static):
    """A message typed while a turn runs, waiting for it to end (Up takes it back to edit)."""

    def __init__(self, text: str) -> None:
        first = text.splitlines()[0] if text.strip() else text
        more = " …" if "\n" in text.strip() else ""
        super().__init__(Text("queued › ", style="bold yellow") + Text(first + more))
        self.add_class("queued")
        self.text = text


class PromptArea(TextArea):
    """The prompt editor: Enter sends (the editor empties at once); Shift+Enter, Alt+Enter or
    Ctrl+J add a line; a paste stays one message, refused whole when the prompt would outgrow
    PROMPT_BYTES."""

    NEWLINE_KEYS = frozenset({"shift+enter", "alt+enter", "ctrl+j", "ctrl+enter"})

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class Refused(Message):
        def __init__(self, size: int) -> None:
            super().__init__()
            self.size = size

    class Recall(Message):
        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

    class Complete(Message):
        """Tab: complete the `@path` under the cursor."""

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            if self.text.strip():  # taken at once: keys typed after Enter start the next one
                text = self.text
                self.clear()
                self.post_message(self.Submitted(text))
            return
        if event.key in self.NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        row = self.cursor_location[0]
        last = self.document.line_count - 1
        if (event.key, row) in (("up", 0), ("down", last)):
            event.stop()
            event.prevent_default()
            self.post_message(self.Recall(-1 if event.key == "up" else 1))
            return
        if event.key == "tab":
            event.stop()
            event.prevent_default()
            self.post_message(self.Complete())
        # other keys: TextArea's own handler runs next (Textual walks the class hierarchy)

    async def _on_paste(self, event: events.Paste) -> None:
        start, end = self.selection
        replaced = self.get_text_range(start, end) if start != end else ""
        size = utf8_size(self.text) - utf8_size(replaced) + utf8_size(event.text)
        if size > PROMPT_BYTES:
            event.stop()
            event.prevent_default()
            self.post_message(self.Refused(size))
        # within the bound: TextArea's own handler inserts the paste, whole
