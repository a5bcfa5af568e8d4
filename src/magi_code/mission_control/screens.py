"""Modal screens: an approval, and a picker (models, sessions, approval modes).

Approval rules: it shows what will happen (the preview) and the time left; `y` allows once,
`a` allows this exact call for the rest of the process, `n` or Esc denies, `d` denies with a
note the model reads (typed in the modal, sent with Enter). A key typed before the modal
opened, or within APPROVAL_ARM_MS of it, never answers it (text typed ahead for the next prompt
must not approve a command). It waits for the person unless the broker has a deadline (then
it counts down, and closes itself at expiry: the broker has denied). The keys come before the
preview, so a short terminal shows them whatever the preview's length.
"""

import math
import time
from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import events
from textual._time import get_time
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from magi_code.limits import APPROVAL_ARM_MS
from magi_code.mission_control.driver import Approval
from magi_code.mission_control.widgets import diff_text

EXPIRY_SLACK_S = 0.1  # the broker's clock and ours are read a moment apart
ANSWERS = {"y": "once", "a": "session", "n": "deny", "escape": "deny", "d": "note"}


class ApprovalScreen(ModalScreen[str]):
    """Dismissed with "once", "session", "deny", "note" (a denial with `note`) or "expired"."""

    def __init__(self, approval: Approval, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(classes="approval")
        self.approval, self.clock = approval, clock
        waits = approval.expires_in_ms is None
        self.deadline = math.inf if waits else clock() + (approval.expires_in_ms or 0) / 1000
        self.opened = get_time()
        self.note: str | None = None  # being typed after `d`

    def compose(self) -> ComposeResult:
        preview = self.approval.preview
        with Vertical(id="approval-box"):
            title = preview.title if preview else self.approval.summary
            yield Static(Text(f"Allow: {title}?", style="bold"), id="approval-title")
            yield Static(
                Text.assemble(
                    ("y", "bold green"),
                    " allow once  ",
                    ("a", "bold green"),
                    " allow for this session  ",
                    ("n", "bold red"),
                    "/Esc deny  ",
                    ("d", "bold red"),
                    " deny and say why",
                ),
                id="approval-keys",
            )
            yield Static("", id="approval-countdown")
            if preview is not None:
                body = diff_text(preview.body) if preview.kind == "diff" else Text(preview.body)
                with VerticalScroll(id="approval-preview"):
                    yield Static(body)

    def on_mount(self) -> None:
        self.tick()
        self.set_interval(0.25, self.tick)

    def seconds_left(self) -> int:
        left = self.deadline - self.clock()
        return 0 if math.isinf(left) else max(0, math.ceil(left))

    def tick(self) -> None:
        if self.clock() >= self.deadline:
            self.close_decided()
            return
        waiting = "waiting for you" if math.isinf(self.deadline) else None
        said = waiting or f"denied automatically in {self.seconds_left()} s"
        self.query_one("#approval-countdown", Static).update(Text(said, style="dim"))

    def close_decided(self) -> None:
        """Close without answering: the broker decided (expired, or the run was stopped)."""
        if not self.is_dismissed:
            self.is_dismissed = True
            expired = self.clock() >= self.deadline - EXPIRY_SLACK_S
            self.dismiss("expired" if expired else "closed")

    def on_key(self, event: events.Key) -> None:
        if self.note is not None:
            if event.key == "escape":  # no note after all: back to the question
                event.stop()
                self.note = None
                self.query_one("#approval-note", Input).remove()
            return  # the note's editor takes the keys
        answer = ANSWERS.get(event.key)
        event.stop()
        if answer is None or self.is_dismissed:
            return
        if event.time < self.opened + APPROVAL_ARM_MS / 1000:
            return  # typed ahead: not an answer to this question
        if answer == "note":
            self.note = ""
            note = Input(placeholder="what it should do instead; Enter denies", id="approval-note")
            self.query_one("#approval-box").mount(note, after="#approval-keys")
            note.focus()
            return
        self.is_dismissed = True
        self.dismiss(answer)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.is_dismissed:
            return
        self.note = event.value
        self.is_dismissed = True
        self.dismiss("note")

    is_dismissed = False


class PickerScreen(ModalScreen[str | None]):
    """A list to choose from; dismissed with the chosen option's id, or None on Esc. It opens
    on `current`; a `searchable` one filters its options by what is typed (any order of
    words, case ignored), and Enter picks the highlighted one."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        title: str,
        options: list[tuple[str, str]],
        *,
        current: str | None = None,
        searchable: bool = False,
    ) -> None:
        super().__init__(classes="picker")
        self.heading, self.options = title, options
        self.current, self.searchable = current, searchable

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-box"):
            yield Label(Text(self.heading, style="bold"))
            if self.searchable:
                yield Input(placeholder="type to search", id="picker-search")
            yield OptionList(*(Option(label, id=key) for key, label in self.options))

    def on_mount(self) -> None:
        listed = self.query_one(OptionList)
        keys = [key for key, _ in self.options]
        if self.current in keys:
            listed.highlighted = keys.index(self.current)
        if not self.searchable:
            listed.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        words = event.value.lower().split()
        listed = self.query_one(OptionList)
        listed.clear_options()
        listed.add_options(
            Option(label, id=key)
            for key, label in self.options
            if all(word in label.lower() for word in words)
        )
        listed.highlighted = 0 if listed.option_count else None

    def on_input_submitted(self, event: Input.Submitted) -> None:
        listed = self.query_one(OptionList)
        if listed.highlighted is not None:
            self.dismiss(listed.get_option_at_index(listed.highlighted).id)

    def on_key(self, event: events.Key) -> None:
        if self.searchable and event.key in ("up", "down"):  # the list moves under the search
            event.stop()
            listed = self.query_one(OptionList)
            if event.key == "up":
                listed.action_cursor_up()
            else:
                listed.action_cursor_down()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
