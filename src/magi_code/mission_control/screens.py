"""Modal screens: an approval, and a picker (models, sessions, approval modes).

Approval rules: it shows what will happen (the preview) and the time left; `y` allows once,
`a` allows this exact call for the rest of the process, `n` or Esc denies. A key typed before
the modal opened, or within APPROVAL_ARM_MS of it, never answers it (text typed ahead for the
next prompt must not approve a command). At expiry it closes itself: the broker has denied.
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
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from magi_code.limits import APPROVAL_ARM_MS
from magi_code.mission_control.driver import Approval
from magi_code.mission_control.widgets import diff_text

EXPIRY_SLACK_S = 0.1  # the broker's clock and ours are read a moment apart
ANSWERS = {"y": "once", "a": "session", "n": "deny", "escape": "deny"}


class ApprovalScreen(ModalScreen[str]):
    """Dismissed with "once", "session", "deny" or "expired"."""

    def __init__(self, approval: Approval, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(classes="approval")
        self.approval, self.clock = approval, clock
        self.deadline = clock() + approval.expires_in_ms / 1000
        self.opened = get_time()

    def compose(self) -> ComposeResult:
        preview = self.approval.preview
        with Vertical(id="approval-box"):
            title = preview.title if preview else self.approval.summary
            yield Static(Text(f"Allow: {title}?", style="bold"), id="approval-title")
            if preview is not None:
                body = diff_text(preview.body) if preview.kind == "diff" else Text(preview.body)
                with VerticalScroll(id="approval-preview"):
                    yield Static(body)
            yield Static("", id="approval-countdown")
            yield Static(
                Text.assemble(
                    ("y", "bold green"),
                    " allow once   ",
                    ("a", "bold green"),
                    " allow for this session   ",
                    ("n", "bold red"),
                    "/Esc deny",
                ),
                id="approval-keys",
            )

    def on_mount(self) -> None:
        self.tick()
        self.set_interval(0.25, self.tick)

    def seconds_left(self) -> int:
        return max(0, math.ceil(self.deadline - self.clock()))

    def tick(self) -> None:
        if self.clock() >= self.deadline:
            self.close_decided()
            return
        self.query_one("#approval-countdown", Static).update(
            Text(f"denied automatically in {self.seconds_left()} s", style="dim")
        )

    def close_decided(self) -> None:
        """Close without answering: the broker decided (expired, or the run was stopped)."""
        if not self.is_dismissed:
            self.is_dismissed = True
            expired = self.clock() >= self.deadline - EXPIRY_SLACK_S
            self.dismiss("expired" if expired else "closed")

    def on_key(self, event: events.Key) -> None:
        answer = ANSWERS.get(event.key)
        event.stop()
        if answer is None or self.is_dismissed:
            return
        if event.time < self.opened + APPROVAL_ARM_MS / 1000:
            return  # typed ahead: not an answer to this question
        self.is_dismissed = True
        self.dismiss(answer)

    is_dismissed = False


class PickerScreen(ModalScreen[str | None]):
    """A list to choose from; dismissed with the chosen option's id, or None on Esc."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, options: list[tuple[str, str]]) -> None:
        super().__init__(classes="picker")
        self.heading, self.options = title, options

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-box"):
            yield Label(Text(self.heading, style="bold"))
            yield OptionList(*(Option(label, id=key) for key, label in self.options))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
