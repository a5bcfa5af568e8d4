"""The pieces of the conversation on screen: messages, tool cards, notices, the prompt editor.

Streaming rule: an assistant message takes deltas into a buffer (a list append, nothing
drawn) and the app flushes every buffer once a frame (UI_FRAME_MS), so the cost of drawing
follows the frame rate, not the delta rate; a frame redraws the reply's last Markdown page
only (pages.py). The reconciled text, which is authoritative, replaces what was streamed only
when it differs.
"""

import time
from collections.abc import Awaitable
from typing import Any

from rich.console import RenderableType
from rich.markdown import Markdown as RichMarkdown
from rich.table import Table
from rich.text import Text
from textual import events
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Collapsible, Static, TextArea

from magi_code.limits import (
    FACE_PROMPT_BYTES,
    PASTE_INLINE_CHARS,
    UI_LIVE_OUTPUT_MS,
    UI_PROMPT_SHOWN_CHARS,
)
from magi_code.mission_control.completion import replacement
from magi_code.mission_control.live_tail import LiveTail
from magi_code.mission_control.pages import Page, paginate
from magi_code.mission_control.pastes import Pastes, collapses, normalized
from magi_code.mission_control.suggestions import Suggestions

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


def shown_prompt(text: str) -> Text:
    """What the conversation shows of a prompt: its first UI_PROMPT_SHOWN_CHARS, and how much
    more was sent."""
    shown = Text(text[:UI_PROMPT_SHOWN_CHARS])
    rest = len(text) - UI_PROMPT_SHOWN_CHARS
    if rest > 0:
        said = f"{rest:,} more character{'s' if rest > 1 else ''}"
        shown.append(f"\n… {said} sent, not shown", "dim")
    return shown


def prompt_text(text: str) -> RenderableType:
    """A prompt as the conversation shows it: the marker `›` beside its first line, and every
    later line (its own, or one wrapped) indented under the text. Side by side in a grid, not
    one Text: there a first word wider than the line would wrap away from the marker."""
    shown = Table.grid()
    shown.add_column(no_wrap=True)
    shown.add_column(ratio=1, overflow="fold")
    shown.add_row(Text("› ", style="bold cyan"), shown_prompt(text))
    return shown


class UserMessage(Static):
    def __init__(self, text: str) -> None:
        super().__init__(prompt_text(text), classes="user")
        self.text = text


class Notice(Static):
    """A line from the face itself: outcomes, diagnostics, command output."""

    def __init__(self, text: str | Text, kind: str = "info") -> None:
        super().__init__(text, classes=f"notice {kind}")
        self.text = text

    def visual_text(self) -> Text:
        return self.text if isinstance(self.text, Text) else Text(self.text, style="dim")


class MarkdownPage(Widget):
    """One page of a reply, drawn as Markdown once per change and width: the lines that size
    it are the lines it paints (a Static would render its Markdown twice a frame)."""

    DEFAULT_CSS = "MarkdownPage { height: auto; }"

    def __init__(self, source: str = "") -> None:
        super().__init__(classes="page")
        self.source = source
        self.drawn: tuple[int, list[Strip]] | None = None  # (width, lines)

    def show(self, source: str) -> None:
        """Draw `source` instead; a change that keeps the height only repaints (no layout)."""
        if source == self.source:
            return
        width, drawn = self.content_size.width, self.drawn
        self.source, self.drawn = source, None
        kept = drawn is not None and drawn[0] == width and len(self.lines(width)) == len(drawn[1])
        self.refresh(layout=not kept)

    def lines(self, width: int) -> list[Strip]:
        """The page's lines at `width`, in its style: made once per change, width or style."""
        if self.drawn is None or self.drawn[0] != width:
            options = self.app.console_options.update_width(width).update(highlight=False)
            markdown = RichMarkdown(self.source)
            rendered = self.app.console.render_lines(
                markdown, options, style=self.rich_style, pad=False
            )
            self.drawn = width, [Strip(line) for line in rendered]
        return self.drawn[1]

    def notify_style_update(self) -> None:
        self.drawn = None
        super().notify_style_update()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines(width))

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        lines = self.lines(width)
        return lines[y] if y < len(lines) else Strip.blank(width)


class AssistantMessage(Vertical):
    """One assistant segment, drawn as Markdown pages (pages.py): a frame redraws only the
    last, open page, so its cost follows a page however long the reply grows. The reconciled
    text is drawn anew only where it differs from what streamed."""

    def __init__(self) -> None:
        super().__init__(classes="assistant")
        self.pending: list[str] = []
        self.shown = ""
        self.views: list[MarkdownPage] = []  # one per page; the last one is the open page's
        self.open_page = Page("")
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
        await self.draw(paginate(self.open_page.text + text, self.open_page.opens))

    async def draw(self, pages: list[Page]) -> None:
        """The open page's view takes the first of `pages`; the rest get views of their own."""
        if not self.views:
            self.views.append(MarkdownPage())
            await self.mount(self.views[-1])
        self.views[-1].show(pages[0].markdown())
        added = [MarkdownPage(page.markdown()) for page in pages[1:]]
        if added:
            for closed in self.views[-1:] + added[:-1]:
                closed.add_class("closed")  # a closed page keeps a line between it and the next
            self.views += added
            await self.mount_all(added)
        self.open_page = pages[-1]

    async def settle(self, text: str, partial: bool) -> None:
        """The authoritative text: drawn only where it differs from what was drawn."""
        await self.mounted()
        self.pending.clear()
        if text != self.shown:
            await self.remove_children(self.views)
            self.views, self.open_page, self.shown = [], Page(""), text
            await self.draw(paginate(text))
        if partial:
            self.add_class("partial")


class Reasoning(Collapsible):
    def __init__(self, text: str) -> None:
        super().__init__(Static(text, classes="reasoning-text"), title="thinking", collapsed=False)
        self.add_class("reasoning")


STATE_MARKS = {"started": "…", "completed": "✓", "failed": "✗"}


class ToolCard(Collapsible):
    """One tool call: name, summary, state and duration; expands to its output or diff.

    While the call runs, its elapsed time ticks and what it prints shows as a tail
    (live_tail.py), both redrawn at most every UI_LIVE_OUTPUT_MS; the time stands still while
    the call awaits an approval (`await_approval` until `go_on`), so it counts the call, not
    the person's thinking. The card opens on its first output and closes again when the call
    ends, unless the person chose otherwise. Enter on its focused title, or a click, expands
    or collapses it (`Chosen` follows, so the app can hand the focus back to the composer)."""

    class Chosen(Message):
        """The person expanded or collapsed the card."""

    def __init__(self, name: str, summary: str) -> None:
        self.body = Static("", classes="tool-body")
        super().__init__(self.body, title="", collapsed=True)
        self.add_class("tool")
        self.tool, self.summary, self.state = name, summary, "started"
        self.ran = 0.0  # seconds it ran before its last wait for an approval
        self.resumed: float | None = time.monotonic()  # None while it awaits an approval
        self.seconds: float | None = None
        self.diff: str | None = None
        self.progress = ""  # how far the running call is (`3/10 message`), while it runs
        self.live = LiveTail()
        self.ticker: Timer | None = None
        self.chosen = False  # the person expanded or collapsed it: it stays as they chose
        self.opened_live = False  # opened by its first live output, to close when it ends
        self.title = self.heading()

    def on_mount(self) -> None:
        if self.state == "started":
            self.ticker = self.set_interval(UI_LIVE_OUTPUT_MS / 1000, self.tick)

    def heading(self) -> str:
        mark = STATE_MARKS.get(self.state, "?")
        running = self.state == "started"
        if not running:
            took = "" if self.seconds is None else f" · {self.seconds:.1f}s"
        elif self.resumed is None:
            return f"{mark} {self.tool} · {self.summary} · awaiting approval"
        else:  # whole seconds: the title changes once a second, not every tick
            took = f" · {self.elapsed():.0f}s"
        going = f" · {self.progress}" if self.progress and running else ""
        state = "running" if running else self.state
        return f"{mark} {self.tool} · {self.summary}{going} · {state}{took}"

    def elapsed(self) -> float:
        """How long the call has run, its waits for approvals left out."""
        now = time.monotonic()
        return self.ran + (0.0 if self.resumed is None else now - self.resumed)

    def await_approval(self) -> None:
        """The call asks the person: its time stands still until `go_on`."""
        if self.state == "started" and self.resumed is not None:
            self.ran, self.resumed = self.elapsed(), None
            self.title = self.heading()

    def go_on(self) -> None:
        """The approval was answered (or decided): the call's time goes on."""
        if self.state == "started" and self.resumed is None:
            self.resumed = time.monotonic()
            self.title = self.heading()

    def tick(self) -> None:
        """The elapsed time, and the output's tail if more came since the last tick."""
        heading = self.heading()
        if heading != self.title:
            self.title = heading
        if self.live.changed:
            self.body.update(Text.from_ansi("\n".join(self.live.lines())))
            if not self.chosen and self.collapsed:
                self.collapsed, self.opened_live = False, True

    def take_live(self, text: str) -> None:
        """What the running call printed since it last said (cheap: drawn on the next tick)."""
        self.live.add(text)

    def show_progress(self, text: str) -> None:
        self.progress = text
        self.title = self.heading()

    def update_state(self, state: str, summary: str) -> None:
        self.state, self.summary = state, summary
        if state != "started":
            self.seconds = self.elapsed()
            if self.ticker is not None:
                self.ticker.stop()
            if self.opened_live and not self.chosen:
                self.collapsed = True  # the result stays inside, a click or Enter away
        self.set_class(state == "failed", "failed")
        self.title = self.heading()

    def show_output(self, output: str | None, diff: str | None) -> None:
        if diff:
            self.diff = diff
            self.body.update(diff_text(diff))
            self.collapsed = False  # an edit is shown as its diff
        elif output:
            self.body.update(Text(output))

    def on_collapsible_title_toggle(self, event: Message) -> None:
        self.chosen = True
        self.post_message(self.Chosen())


class QueuedMessage(Static):
    """A message typed while a turn runs, waiting for it to end (Up takes it back to edit)."""

    def __init__(self, text: str) -> None:
        first = text.splitlines()[0] if text.strip() else text
        more = " …" if "\n" in text.strip() else ""
        super().__init__(Text("queued › ", style="bold yellow") + Text(first + more))
        self.add_class("queued")
        self.text = text


class PromptArea(TextArea):
    """The prompt editor: Enter sends (the editor empties at once); Shift+Enter, Alt+Enter,
    Ctrl+J, or Enter right after a `\\`, add a line. A paste stays one message: a large one
    stands as a token (pastes.py), and one that would take the prompt past FACE_PROMPT_BYTES
    is refused whole. While the composer's list is open (suggestions.py), Up and Down move in
    it, Tab and Enter take its choice (Enter on a choice typed whole sends), Esc closes it.
    Ctrl+R asks for the prompt history search."""

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

    class Search(Message):
        """Ctrl+R: search the prompt history."""

    def __init__(self, *, menu: Suggestions | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.menu = menu
        self.pastes = Pastes()

    def load(self, text: str) -> None:
        """Put `text` in the editor to be edited (a recalled or taken-back prompt), the cursor
        at its end; one longer than PASTE_INLINE_CHARS stands as a token, as a paste would."""
        self.pastes.clear()
        self.text = self.pastes.token_for(text) if len(text) > PASTE_INLINE_CHARS else text
        self.move_cursor(self.document.end)

    def submit(self) -> None:
        """Send what the editor holds, its paste tokens expanded; the editor empties at once,
        so keys typed after Enter start the next message."""
        if self.text.strip():
            text = self.pastes.expand(self.text)
            self.clear()
            self.pastes.clear()
            self.post_message(self.Submitted(text))

    async def _on_key(self, event: events.Key) -> None:
        self.follow_cursor()  # keys typed in one burst outrun the Changed messages
        if self.menu is not None and self.menu.is_open and self.steer_menu(event.key):
            event.stop()
            event.prevent_default()
            return
        if self.edit_token(event):
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            if self.after_backslash():
                row, column = self.cursor_location
                self.replace("\n", (row, column - 1), (row, column))
            else:
                self.submit()
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
        if event.key in ("tab", "ctrl+r"):
            event.stop()
            event.prevent_default()
            self.post_message(self.Complete() if event.key == "tab" else self.Search())
        # other keys: TextArea's own handler runs next (Textual walks the class hierarchy)

    def steer_menu(self, key: str) -> bool:
        """Whether `key` was for the open list."""
        assert self.menu is not None
        if key in ("up", "down"):
            self.menu.move(-1 if key == "up" else 1)
        elif key == "escape":
            self.menu.close()
        elif key in ("tab", "enter") and (picked := self.menu.choice()) is not None:
            wanted, value = picked
            if key == "enter" and wanted.query == value:  # typed whole already: send it
                self.submit()
            else:
                done = self.replace(
                    replacement(wanted.kind, value),
                    (wanted.row, wanted.start),
                    (wanted.row, wanted.end),
                )
                self.move_cursor(done.end_location)
        else:
            return False
        return True

    def after_backslash(self) -> bool:
        row, column = self.cursor_location
        return self.selection.is_empty and self.document[row][:column].endswith("\\")

    def edit_token(self, event: events.Key) -> bool:
        """A paste token is edited whole: Backspace at its end or inside it, or Delete at its
        start or inside it, takes it all out (True: the key is spent); a character typed
        inside it takes its place."""
        deleting = event.key in ("backspace", "delete")
        if not (deleting or event.is_printable) or not self.selection.is_empty:
            return False
        row, column = self.cursor_location
        span = self.pastes.span_at(self.document[row], column)
        if span is None:
            return False
        start, end = span
        touched = {"backspace": start < column, "delete": column < end}
        if not touched.get(event.key, start < column < end):
            return False
        self.delete((row, start), (row, end))
        self.move_cursor((row, start))
        if deleting:
            event.stop()
            event.prevent_default()
        return deleting

    def on_text_area_changed(self) -> None:
        self.pastes.keep_only(self.text)
        self.follow_cursor()

    def on_text_area_selection_changed(self) -> None:
        self.follow_cursor()

    def follow_cursor(self) -> None:
        if self.menu is not None:
            row, column = self.cursor_location
            self.menu.follow(self.text, self.document[row], row, column)

    async def _on_paste(self, event: events.Paste) -> None:
        start, end = self.selection
        replaced = self.get_text_range(start, end) if start != end else ""
        pasted = normalized(event.text)
        expand = self.pastes.expand
        size = utf8_size(expand(self.text)) - utf8_size(expand(replaced)) + utf8_size(pasted)
        if size > FACE_PROMPT_BYTES:
            event.stop()
            event.prevent_default()
            self.post_message(self.Refused(size))
        elif collapses(pasted):
            event.stop()
            event.prevent_default()
            done = self.replace(self.pastes.token_for(pasted), start, end)
            self.move_cursor(done.end_location)
        # a small paste: TextArea's own handler inserts it, whole
