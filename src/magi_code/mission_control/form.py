"""FormScreen: an MCP server's question (mcp/elicitation.py `Form`) as a modal form.

Rules:
- One row per field: its label (`*` when required), its description, and an input by kind:
  a line of text (text, number, integer; its default filled in), a checkbox (boolean), a
  list to pick one from (choice) or several (choices), their defaults chosen.
- Ctrl+S accepts: the answer is checked against the form first (elicitation.checked); what
  does not fit is listed in the form, naming each field, and nothing typed is lost. Ctrl+N
  declines, Esc cancels (the server is told which). A key within APPROVAL_ARM_MS of the
  form opening never answers it (typed ahead for the prompt).
- It decides nothing: it is dismissed with the person's `Answer`, or None when the run
  closed it (the question is then cancelled).
"""

from typing import ClassVar

from rich.text import Text
from textual import events
from textual._time import get_time
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Checkbox, Input, Label, Select, SelectionList, Static

from magi_code.limits import APPROVAL_ARM_MS
from magi_code.mcp.elicitation import Action, Answer, Field, Form, Raw, checked, initial
from magi_code.mcp.limits import ANSWER_CHARS

KEYS: dict[str, Action] = {"ctrl+s": "accept", "ctrl+n": "decline", "escape": "cancel"}


class FormScreen(ModalScreen[Answer | None]):
    DEFAULT_CSS: ClassVar[str] = """
    FormScreen { align: center middle; }
    #form-box { width: 100%; max-width: 100; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 0 1; }
    #form-fields { height: auto; max-height: 30; }
    #form-fields SelectionList { height: auto; max-height: 8; }
    #form-problems { color: $error; }
    """

    def __init__(self, form: Form) -> None:
        super().__init__(classes="form")
        self.form = form
        self.opened = get_time()
        self.inputs: dict[str, Widget] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="form-box"):
            yield Static(Text(f"{self.form.server} asks:", style="bold"), id="form-title")
            yield Static(Text(self.form.message), id="form-message")
            yield Static(
                Text.assemble(
                    ("Ctrl+S", "bold green"),
                    " send  ",
                    ("Ctrl+N", "bold red"),
                    " decline  ",
                    ("Esc", "bold"),
                    " cancel",
                ),
                id="form-keys",
            )
            yield Static("", id="form-problems")
            with VerticalScroll(id="form-fields"):
                for item in self.form.fields:
                    yield Label(Text(item.label + (" *" if item.required else ""), style="bold"))
                    if item.description:
                        yield Static(Text(item.description, style="dim"))
                    widget = self.inputs[item.name] = field_input(item)
                    yield widget

    def on_mount(self) -> None:
        self.opened = get_time()  # shown now: the arming delay starts here
        first = next(iter(self.inputs.values()), None)
        if first is not None:
            first.focus()

    def on_key(self, event: events.Key) -> None:
        action = KEYS.get(event.key)
        if action is None:
            return
        event.stop()  # before the app's own keys (Esc would stop the turn)
        event.prevent_default()
        if self.is_dismissed or event.time < self.opened + APPROVAL_ARM_MS / 1000:
            return  # typed ahead: not an answer to this question
        if action != "accept":
            self.close(Answer(action))
            return
        values = self.values()
        problems = checked(self.form, values)
        if isinstance(problems, list):
            said = "\n".join(problems)
            self.query_one("#form-problems", Static).update(Text(said))
            return
        self.close(Answer("accept", values))

    def values(self) -> dict[str, Raw]:
        """What each field holds now, as elicitation.checked takes it."""
        found: dict[str, Raw] = {}
        for item in self.form.fields:
            widget = self.inputs[item.name]
            if isinstance(widget, (Input, Checkbox)):
                found[item.name] = widget.value
            elif isinstance(widget, SelectionList):
                found[item.name] = [str(value) for value in widget.selected]
            elif isinstance(widget, Select):
                found[item.name] = widget.value if isinstance(widget.value, str) else None
        return found

    def close(self, answer: Answer | None) -> None:
        if not self.is_dismissed:
            self.is_dismissed = True
            self.dismiss(answer)

    is_dismissed = False


def field_input(item: Field) -> Widget:
    """The input for one field, holding its default."""
    shown = initial(item)
    if item.kind == "boolean":
        return Checkbox(item.label, value=shown is True)
    if item.kind == "choices":
        chosen = shown if isinstance(shown, list) else []
        return SelectionList[str](
            *((label, value, value in chosen) for value, label in item.choices)
        )
    if item.kind == "choice":
        values = [value for value, _ in item.choices]
        start = shown if isinstance(shown, str) and shown in values else Select.NULL
        return Select([(label, value) for value, label in item.choices], value=start)
    kinds = {"number": "number", "integer": "integer"}
    return Input(
        value=shown if isinstance(shown, str) else "",
        type=kinds.get(item.kind, "text"),  # type: ignore[arg-type]
        max_length=ANSWER_CHARS,
        placeholder=item.format or "",
    )
