"""Mission Control: the Textual app a person drives the runner from.

The app is the face: it implements the runner's emitter (deltas into per-message buffers
drawn once a frame, critical events drawn at once) and answers approvals through a modal.
Turns run as a worker in the app's own event loop, so Esc and Ctrl-C reach `TurnControl`
directly. Everything about sessions, selection and the runner goes through `Driver`.

Queue: while a turn runs, what is sent waits in the queue (shown above the status line; Up
at an empty editor takes the last one back) and is acted on in order when the turn ends; the
read-only commands (commands.AT_ONCE) answer at once. The editor empties as Enter is read, so
keys typed right after it start the next message.

Outcomes: a turn ends with one line saying how (`completed` is silent, `cancelled` and
`failed` say so, and a partial reply stays on screen as it was); a session drawn again
(resume, --continue, /rewind) shows that line where it stood. `--prompt` runs one turn and
exits 0 (completed), 1 (failed) or 130 (cancelled).
"""

import time
from pathlib import Path
from typing import ClassVar

import anyio
from rich.console import RenderableType
from rich.markdown import Markdown as RichMarkdown
from rich.text import Text
from textual import work
from textual._time import get_time
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from magi_code.context.loader import ordered_sources
from magi_code.limits import FACE_PROMPT_BYTES, QUIT_CONFIRM_MS, REWIND_KEYS_MS, UI_FRAME_MS
from magi_code.mcp.elicitation import Answer, Form
from magi_code.mcp.errors import NotSent
from magi_code.mcp.mentions import mentioned
from magi_code.mission_control import commands
from magi_code.mission_control.attachments import attached_images
from magi_code.mission_control.driver import (
    Approval,
    Driver,
    LaunchError,
    StoredRow,
    Tally,
)
from magi_code.mission_control.form import FormScreen
from magi_code.mission_control.frame_timer import draw_promptly
from magi_code.mission_control.mcp_servers import listing, status_line
from magi_code.mission_control.mentions import complete
from magi_code.mission_control.observe import APPROVAL_MODES
from magi_code.mission_control.plan_view import PlanView
from magi_code.mission_control.preview import Preview
from magi_code.mission_control.rewind import Rewinder, RewindPoint, describe, named
from magi_code.mission_control.screens import ApprovalScreen, PickerScreen
from magi_code.mission_control.status_bar import StatusBar
from magi_code.mission_control.suggestions import Suggestions
from magi_code.mission_control.terminal_keys import teach_alt_enter
from magi_code.mission_control.widgets import (
    AssistantMessage,
    Notice,
    PromptArea,
    QueuedMessage,
    Reasoning,
    ToolCard,
    UserMessage,
    diff_text,
    prompt_text,
    utf8_size,
)
from magi_code.runner.events import (
    Activity,
    Diagnostic,
    MessageDelta,
    MessageReconcile,
    RunEvent,
    RunFinished,
)
from magi_code.runner.turn import TurnControl
from magi_code.sessions import SessionError
from magi_code.tools.live_output import ToolOutputDelta
from magi_code.tools.plan import PlanUpdate
from magi_code.tools.progress import ToolProgress
from magi_code.tools.sandbox.settings import MODES as SANDBOX_MODES

NOTIFY_AFTER_S = 10  # a turn that ran longer notifies at its end when the terminal is unfocused
NOTIFY_CHARS = 120  # of a notification's text
PICKED_PROMPT_CHARS = 80  # of a prompt in a picker (a session's first in /resume, Ctrl+R's)
EXIT_CODES = {"completed": 0, "failed": 1, "cancelled": 130}

CSS = """
Screen { layout: vertical; }
Screen:inline { height: 100vh; border-top: none; border-bottom: none; }
#log { height: 1fr; padding: 0 1; scrollbar-size-vertical: 1; }
#log > * { margin: 0 0 1 0; }
.user { color: $text; background: $boost; padding: 0 1; }
.assistant { height: auto; margin: 0; padding: 0; }
.page { padding: 0 1; }
.page.closed { margin: 0 0 1 0; }
.assistant.partial { border-left: thick $warning; }
.notice { color: $text-muted; }
.notice.error { color: $error; }
.notice.warning { color: $warning; }
.reasoning { color: $text-muted; text-style: dim italic; border: none; padding: 0; }
.tool { border: none; padding: 0; background: $surface; }
.tool.failed CollapsibleTitle { color: $error; }
Collapsible > Contents { padding: 0 0 0 2; }
#queue { height: auto; max-height: 6; }
.queued { color: $text-muted; padding: 0 1; }
#status { height: 1; background: $panel; color: $text-muted; padding: 0 1; }
#prompt { height: auto; min-height: 3; max-height: 12; border: round $accent; }
#prompt:focus { border: round $accent-lighten-1; }
ApprovalScreen { align: center middle; }
#approval-box { width: 100%; max-width: 120; height: auto; max-height: 90%;
    border: thick $warning; background: $surface; padding: 0 1; }
#approval-preview { height: auto; max-height: 24; }
PickerScreen { align: center middle; }
#picker-box { width: 100%; max-width: 110; height: auto; max-height: 80%;
    border: round $accent; background: $surface; }
"""


class MissionControl(App[int]):
    CSS = CSS
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "interrupt", "stop / quit", priority=True, show=False),
        Binding("ctrl+d", "eof", "quit", priority=True, show=False),
        Binding("escape", "stop", "stop", show=False),
    ]

    def __init__(
        self,
        driver: Driver,
        prompt: str | None = None,
        banner: str = "",
        *,
        pick_session: bool = False,
        first_prompt: str | None = None,
    ) -> None:
        super().__init__()
        teach_alt_enter()
        draw_promptly()
        self.driver, self.one_shot, self.banner = driver, prompt, banner
        self.pick_at_start = pick_session
        self.first_prompt = first_prompt  # sent at start, as if typed; the app stays open
        self.leaving: int | None = None  # the exit code once the running turn has ended
        self.control: TurnControl | None = None
        self.streaming: dict[str, AssistantMessage] = {}
        self.reconciling: dict[str, list[str]] = {}
        self.cards: dict[str, ToolCard] = {}
        self.last_card: ToolCard | None = None
        self.approvals: list[ApprovalScreen] = []
        self.quit_armed_at: float | None = None
        self.recall: list[str] | None = None  # read from the sessions on the first Up
        self.recall_at = 0
        self.state = "idle"
        self.hint = ""  # a passing word in the status line
        self.transcript: list[RenderableType] = []
        self.turn_started = 0.0
        self.escaped_at: float | None = None  # the last Esc with no turn running

    # ---- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="log")
        yield PlanView(id="plan")
        yield Vertical(id="queue")
        yield StatusBar(id="status")
        admitted = self.driver.admitted
        menu = Suggestions(Path(admitted.cwd), admitted.env, id="suggestions")
        yield menu
        yield PromptArea(menu=menu, id="prompt", soft_wrap=True, show_line_numbers=False)

    async def on_mount(self) -> None:
        self.set_interval(UI_FRAME_MS / 1000, self.flush)
        if self.banner:
            await self.say(Text(self.banner, style="bold"))
        for notice in self.driver.notices:
            await self.say(notice, "warning")
        self.driver.notices.clear()
        self.register_prompt_commands()
        await self.hydrate()
        self.refresh_status()
        self.query_one(PromptArea).focus()
        if self.one_shot is not None:
            self.start_turn(self.one_shot)
        elif self.first_prompt is not None:
            self.start_turn(self.first_prompt)
        elif self.pick_at_start:
            self.pick_session("")

    @property
    def log_view(self) -> VerticalScroll:
        return self.query_one("#log", VerticalScroll)

    async def add(self, widget: Static | AssistantMessage | ToolCard | Reasoning) -> None:
        log = self.log_view
        await log.mount(widget)
        log.scroll_end(animate=False)

    async def say(self, text: str | Text, kind: str = "info") -> None:
        await self.add(Notice(text, kind))

    def refresh_status(self) -> None:
        tally, window = self.driver.tally, self.driver.context_window()
        share = min(100, round(100 * tally.context / window)) if window else 0
        mode = self.driver.grants.mode
        waiting = len(self.queued)
        state = self.hint or self.state + (f" · {waiting} queued" if waiting else "")
        parts = (  # with the rank of each: the least needed (highest) go first when narrow
            (state, 0),
            (f"{self.driver.provider}/{self.driver.model}", 3),
            (f"context {share}% of {window:,}", 4),
            (f"tokens {tally.session_input:,} in {tally.session_output:,} out", 5),
            (f"approvals: {mode}", 1),
            (f"sandbox: {self.driver.sandbox.mode}", 2),
        )
        self.query_one("#status", StatusBar).show(parts)

    async def hydrate(self) -> None:
        """Draw the attached session's stored history (after --continue, resume, /resume)."""
        self.plan(self.driver.latest_plan())
        try:
            entries = self.driver.history()
        except SessionError as failed:
            await self.say(f"The history cannot be shown: {failed.code}", "warning")
            return
        for entry in entries:
            if entry.kind == "user":
                await self.add(UserMessage(entry.text))
            elif entry.kind == "assistant":
                message = AssistantMessage()
                await self.add(message)
                await message.settle(entry.text, entry.partial)
            elif entry.kind == "reasoning_summary":
                await self.add(Reasoning(entry.text))
            elif entry.kind == "ended":
                await self.say(*ended_line(entry.text, entry.error_code))
            else:
                await self.say(entry.text, "warning" if entry.kind == "diagnostic" else "info")
        self.call_after_refresh(self.log_view.scroll_end, animate=False)  # where it was left

    # ---- the runner's emitter --------------------------------------------------------------

    def delta(self, event: MessageDelta) -> None:
        message = self.streaming.get(event.message_id)
        if message is None:
            message = self.streaming[event.message_id] = AssistantMessage()
            message.mounting = self.log_view.mount(message)
        message.take(event.text)

    async def critical(self, event: RunEvent) -> None:
        if isinstance(event, MessageReconcile):
            await self.reconcile(event)
        elif isinstance(event, Activity):
            await self.activity(event)
        elif isinstance(event, Diagnostic):
            await self.say(event.detail or event.summary, "warning")

    async def reconcile(self, event: MessageReconcile) -> None:
        parts = self.reconciling.setdefault(event.message_id, [])
        parts.append(event.text)
        if not event.last_part:
            return
        text = "".join(self.reconciling.pop(event.message_id))
        message = self.streaming.pop(event.message_id, None)
        if message is None:
            message = AssistantMessage()
            await self.add(message)
        await message.settle(text, event.partial)
        self.log_view.scroll_end(animate=False)

    async def activity(self, event: Activity) -> None:
        if event.kind == "compaction":
            if event.state != "started":
                await self.say(f"compaction {event.state}: {event.summary}")
            return
        if event.state != "started":
            self.close_approvals()
        card = self.cards.get(event.activity_id)
        if card is None:
            card = self.cards[event.activity_id] = ToolCard(event.name, event.summary)
            await self.add(card)
        else:
            card.update_state(event.state, event.summary)
        self.last_card = card

    def tool_output(self, output: str | None, preview: Preview | None) -> None:
        card = self.last_card
        if card is None:
            return
        ran = output is not None
        diff = preview.body if ran and preview is not None and preview.kind == "diff" else None
        card.show_output(output, diff)

    def usage(self, tally: Tally) -> None:
        self.refresh_status()

    def plan(self, update: PlanUpdate | None) -> None:
        self.query_one(PlanView).show(update)

    def progress(self, event: ToolProgress) -> None:
        card = self.cards.get(event.activity_id)
        if card is not None:
            card.show_progress(event.text())

    def live_output(self, event: ToolOutputDelta) -> None:
        card = self.cards.get(event.activity_id)
        if card is not None:
            card.take_live(event.text)

    def on_tool_card_chosen(self, message: ToolCard.Chosen) -> None:
        """A card was expanded or collapsed: the composer has the keys again."""
        self.query_one(PromptArea).focus()

    async def elicit(self, form: Form) -> Answer:
        """An MCP server's question as a modal form, until the person answers (a stopped
        run closes it: cancel)."""
        screen = FormScreen(form)
        answered = anyio.Event()
        answers: list[Answer | None] = []

        def closed(answer: Answer | None) -> None:
            answers.append(answer)
            answered.set()

        self.push_screen(screen, closed)
        self.notify_person(f"{form.server} asks: {form.message}")
        try:
            await answered.wait()
        finally:
            if not answered.is_set():
                screen.close(None)
        self.set_focus(self.query_one(PromptArea))
        return answers[0] or Answer("cancel")

    def reasoning(self, text: str) -> None:
        self.log_view.mount(Reasoning(text))

    async def approval(self, approval: Approval) -> None:
        screen = ApprovalScreen(approval)
        self.approvals.append(screen)
        card = self.cards.get(approval.activity_id)
        if card is not None:
            card.await_approval()  # its time stands still while the person decides

        def answered(answer: str | None) -> None:
            if card is not None:
                card.go_on()
            if screen in self.approvals:
                self.approvals.remove(screen)
            if answer == "once":
                approval.answer(True)
            elif answer == "session":
                approval.allow_session()
            elif answer == "deny":
                approval.answer(False)
            elif answer == "note":
                approval.deny_with(screen.note or "")
            if answer in ("once", "session", "deny", "note"):
                self.set_focus(self.query_one(PromptArea))
            if answer == "expired":
                self.call_later(self.say, "The approval expired: denied.", "warning")

        self.push_screen(screen, answered)
        self.notify_person(f"magi-code asks: {approval.summary}")

    def notify_person(self, said: str) -> None:
        """A bell and a desktop notification (OSC 9, OSC 777) where the terminal shows them,
        unless `[ui] notify = false`."""
        ui = self.driver.admitted.settings.get("ui", {})
        if isinstance(ui, dict) and ui.get("notify") is False:
            return
        self.bell()
        said = "".join(c for c in said if c.isprintable() and c != ";")[:NOTIFY_CHARS]
        if self._driver is not None:
            self._driver.write(f"\x1b]9;{said}\x07\x1b]777;notify;magi-code;{said}\x07")

    async def flush(self) -> None:
        streamed = False
        for message in list(self.streaming.values()):
            if message.pending:
                await message.flush()
                streamed = True
        if streamed:
            self.log_view.scroll_end(animate=False)

    # ---- turns -----------------------------------------------------------------------------

    def start_turn(self, prompt: str, command: commands.Command | None = None) -> None:
        """Send `prompt`; for an MCP prompt `command`, what its server says it is."""
        self.turn_started = get_time()
        self.control = TurnControl()
        self.state = "running"
        self.refresh_status()
        self.run_turn(prompt, self.control, command)

    def start_shell(self, command: str) -> None:
        self.control = TurnControl()  # Esc and Ctrl-C stop it like a turn
        self.state = "running"
        self.refresh_status()
        self.run_shell(command, self.control)

    @work(group="turn", exit_on_error=False)
    async def run_shell(self, command: str, control: TurnControl) -> None:
        await self.add(UserMessage(f"!{command}"))
        card = self.last_card = ToolCard("shell", command)
        await self.add(card)
        try:
            with anyio.CancelScope() as control.scope:
                outcome = await self.driver.shell(command, card.take_live)
                card.update_state("completed" if outcome.ok else "failed", outcome.summary)
                card.show_output(outcome.output, None)
                card.collapsed = False
            if control.scope.cancelled_caught:
                card.update_state("failed", "interrupted")
        except Exception:  # noqa: BLE001 - shown on the card, never a traceback on screen
            card.update_state("failed", "the command could not be run")
        finally:
            self.close_approvals()
            self.control = None
            self.state = "idle"
            self.refresh_status()
        if self.leaving is not None:
            self.exit(self.leaving)
        else:
            await self.send_queued()

    @work(group="turn", exit_on_error=False)
    async def run_turn(
        self, prompt: str, control: TurnControl, command: commands.Command | None = None
    ) -> None:
        cwd = Path(self.driver.admitted.cwd)
        images, notes = await anyio.to_thread.run_sync(attached_images, prompt, cwd)
        try:  # an MCP prompt's messages, or the MCP resources the prompt mentions
            with control.enter() as preparing:
                if command is not None:
                    sent, more = await self.driver.expand_prompt(command.name, command.argument)
                else:
                    sent, more = await self.driver.with_mentions(prompt, len(images))
        except NotSent as refused:
            await self.not_sent(prompt, refused.why)
            return
        if preparing.cancelled_caught:  # Esc while the MCP server was asked
            await self.not_sent(prompt, "stopped before it was sent.")
            return
        await self.add(UserMessage(prompt))
        for note in notes:
            await self.say(note, "warning")
        resources = len(mentioned(prompt)) if command is None else 0
        if resources:
            await self.say(f"Attached {resources} MCP resource{'s' if resources > 1 else ''}.")
        images += more
        if images:
            await self.say(f"Attached {len(images)} image{'s' if len(images) > 1 else ''}.")
        finished = await self.driver.turn(sent, self, control, images)
        await self.flush()
        await self.end_turn(finished)

    async def not_sent(self, text: str, why: str) -> None:
        """A prompt that could not be made ready: said why, its text back in the editor
        (ahead of anything typed since); then the queue goes on."""
        prompt = self.query_one(PromptArea)
        prompt.text = text + prompt.text
        lines = text.split("\n")
        prompt.move_cursor((len(lines) - 1, len(lines[-1])))  # where it was left
        await self.say(Text(f"Not sent: {why}"), "error")  # a server's words: no markup
        self.control = None
        self.state = "idle"
        self.refresh_status()
        if self.leaving is not None or self.one_shot is not None:
            self.exit(1 if self.leaving is None else self.leaving)
        else:
            await self.send_queued()

    def close_approvals(self) -> None:
        """The runner moved on: whatever approval is still on screen was decided (expired,
        or denied by a cancel); close it without answering."""
        for screen in self.approvals:
            screen.close_decided()
        self.approvals.clear()

    async def end_turn(self, finished: RunFinished) -> None:
        self.close_approvals()
        for message in self.streaming.values():  # never reconciled: keep what was shown
            await message.settle(message.shown, True)
        self.streaming.clear()
        self.reconciling.clear()
        if get_time() - self.turn_started > NOTIFY_AFTER_S and not self.app_focus:
            self.notify_person(f"magi-code: the turn {finished.outcome}")  # before idle is seen
        self.control = None
        self.state = "idle"
        for notice in self.driver.notices:
            await self.say(notice, "error")
        self.driver.notices.clear()
        if finished.outcome != "completed":
            await self.say(*ended_line(finished.outcome, finished.error_code))
        if finished.persistence != "durable":
            await self.say(f"history {finished.persistence}: not all of this turn was saved")
        tally = self.driver.tally
        if tally.turn_input or tally.turn_output:
            await self.say(f"tokens this turn: {tally.turn_input:,} in, {tally.turn_output:,} out")
        self.refresh_status()
        if self.leaving is not None:
            self.exit(self.leaving)
        elif self.one_shot is not None:
            self.exit(EXIT_CODES.get(finished.outcome, 1))
        else:
            await self.send_queued()

    # ---- leaving ---------------------------------------------------------------------------

    def exit(
        self, result: int | None = None, return_code: int = 0, message: RenderableType | None = None
    ) -> None:
        self.transcript = self.scrollback()
        attachment = self.driver.attachment
        if attachment is not None and attachment.durable:
            said = f"session {attachment.session_id} · continue it: magi-code resume "
            self.transcript.append(Text(said + attachment.session_id, style="bold"))
        super().exit(result, return_code, message)

    def scrollback(self) -> list[RenderableType]:
        """The conversation as plain renderables, printed after the inline app is gone so it
        stays in the terminal's scrollback."""
        shown: list[RenderableType] = []
        for widget in self.log_view.children:
            if isinstance(widget, UserMessage):
                shown.append(prompt_text(widget.text))
            elif isinstance(widget, AssistantMessage):
                shown.append(RichMarkdown(widget.shown))
            elif isinstance(widget, ToolCard):
                shown.append(Text(widget.heading(), style="dim"))
                if widget.diff:
                    shown.append(diff_text(widget.diff))
            elif isinstance(widget, Notice):
                shown.append(widget.visual_text())
        return shown

    # ---- keys ------------------------------------------------------------------------------

    def leave(self, code: int = 0) -> None:
        """Quit; a running turn is stopped first and ends truthfully in its session."""
        if self.control is None:
            self.exit(code)
            return
        self.leaving = code
        self.control.cancel()

    def action_stop(self) -> None:
        """Esc stops the running turn; with none running, Esc twice opens the rewind list."""
        if self.control is not None:
            self.control.cancel()
            return
        now = get_time()
        if self.escaped_at is not None and now - self.escaped_at <= REWIND_KEYS_MS / 1000:
            self.escaped_at = None
            self.rewind()
        else:
            self.escaped_at = now

    def action_interrupt(self) -> None:
        prompt = self.query_one(PromptArea)
        if self.control is not None:
            self.control.cancel()
            return
        if prompt.text:
            prompt.clear()
            self.quit_armed_at = None
            return
        now = get_time()
        if self.quit_armed_at is not None and now - self.quit_armed_at <= QUIT_CONFIRM_MS / 1000:
            self.leave(0)
            return
        self.quit_armed_at = now
        self.hint = "press Ctrl+C again to quit"
        self.refresh_status()
        self.set_timer(QUIT_CONFIRM_MS / 1000, self.clear_hint)

    def clear_hint(self) -> None:
        self.hint = ""
        self.refresh_status()

    def action_eof(self) -> None:
        prompt = self.query_one(PromptArea)
        if prompt.text:
            prompt.action_delete_right()
        elif self.control is None:
            self.leave(0)

    async def on_prompt_area_refused(self, message: PromptArea.Refused) -> None:
        await self.say(
            f"Paste refused: the prompt would be {message.size:,} bytes; "
            f"the limit is {FACE_PROMPT_BYTES:,}. Nothing was inserted.",
            "error",
        )

    async def on_prompt_area_recall(self, message: PromptArea.Recall) -> None:
        if message.step < 0 and await self.unqueue_last():
            return
        recall = self.prompt_history()
        if not recall:
            return
        self.recall_at = max(0, min(len(recall), self.recall_at + message.step))
        self.query_one(PromptArea).load(
            recall[self.recall_at] if self.recall_at < len(recall) else ""
        )

    def prompt_history(self) -> list[str]:
        """The prompts Up/Down and Ctrl+R recall, oldest first, read from the sessions once."""
        if self.recall is None:
            self.recall = self.driver.prompt_history()  # what this process sent is stored too
            self.recall_at = len(self.recall)
        return self.recall

    def on_prompt_area_search(self, message: PromptArea.Search) -> None:
        """Ctrl+R: the prompt history, newest first and each prompt once, searched as typed;
        the chosen one replaces the editor's text."""
        history = self.prompt_history()
        newest: dict[str, str] = {}
        for index in reversed(range(len(history))):
            newest.setdefault(history[index], str(index))
        if not newest:
            self.notify("No earlier prompts in this workspace.")
            return
        options = [(index, one_line(text)) for text, index in newest.items()]

        def chosen(index: str | None) -> None:
            if index is not None:
                self.query_one(PromptArea).load(history[int(index)])

        picker = PickerScreen(
            "Search prompt history", options, current=options[0][0], searchable=True
        )
        self.push_screen(picker, chosen)

    def on_prompt_area_complete(self, message: PromptArea.Complete) -> None:
        prompt = self.query_one(PromptArea)
        row, column = prompt.cursor_location
        line = prompt.document[row]
        completed = complete(line[:column], Path(self.driver.admitted.cwd))
        if completed is not None:
            prompt.insert(completed)

    async def on_prompt_area_submitted(self, message: PromptArea.Submitted) -> None:
        """The editor is already empty: a refused text goes back into it, ahead of anything
        typed since; while a turn runs, all but the read-only commands wait in the queue."""
        text = message.text
        self.quit_armed_at = None
        size = utf8_size(text)
        if size > FACE_PROMPT_BYTES:
            prompt = self.query_one(PromptArea)
            prompt.text = text + prompt.text
            await self.say(
                f"Not sent: the prompt is {size:,} bytes; the limit is {FACE_PROMPT_BYTES:,}.",
                "error",
            )
            return
        command = commands.parse(text)
        if self.control is None and not self.queued:
            await self.dispatch(text)
        elif command is not None and command.name in commands.AT_ONCE:
            await self.command(command)
        else:
            await self.query_one("#queue", Vertical).mount(QueuedMessage(text))
            self.refresh_status()

    @property
    def queued(self) -> list[QueuedMessage]:
        return list(self.query_one("#queue", Vertical).query(QueuedMessage))

    async def dispatch(self, text: str) -> None:
        """Act on one submitted text: a command, `!command` or a prompt."""
        command = commands.parse(text)
        if command is not None:
            await self.command(command)
            return
        if self.recall is not None:
            self.recall.append(text)
            self.recall_at = len(self.recall)
        if text.startswith("!") and text[1:].strip():
            self.start_shell(text[1:].strip())
            return
        self.start_turn(text)

    async def send_queued(self) -> None:
        """The turn ended: queued messages are acted on in order until one starts a turn."""
        while self.control is None and self.leaving is None and self.queued:
            first = self.queued[0]
            await first.remove()
            self.refresh_status()
            await self.dispatch(first.text)

    async def unqueue_last(self) -> bool:
        """Up at an empty editor: the last queued message comes back to be edited or removed."""
        prompt, waiting = self.query_one(PromptArea), self.queued
        if prompt.text or not waiting:
            return False
        await waiting[-1].remove()
        prompt.load(waiting[-1].text)
        self.refresh_status()
        return True

    # ---- commands --------------------------------------------------------------------------

    async def command(self, command: commands.Command) -> None:
        name = command.name
        if not name:
            await self.say(f"Unknown command /{command.word}: /help lists them.", "error")
        elif name == "help":
            await self.say(Text(commands.help_text()))  # MCP prompts' words: no markup
        elif name in ("quit", "exit"):
            self.leave(0)
        elif name in ("clear", "new"):  # the old conversation stays resumable
            await self.log_view.remove_children()
            self.plan(None)
            session_id = self.driver.new_session()
            await self.say(f"New session {session_id}")
        elif name == "fork":
            await self.fork()
        elif name == "rewind":
            self.rewind()
        elif name == "mcp":
            await self.mcp_command(command.argument)
        elif name.startswith(commands.PROMPT_PREFIX):
            self.start_turn(f"/{command.word} {command.argument}".rstrip(), command)
        elif name == "status":
            await self.say(self.status_text())
        elif name == "init":
            self.start_turn(commands.INIT_PROMPT)
        elif name == "diff":
            await self.show_diff()
        elif name == "compact":
            self.state = "compacting"
            self.refresh_status()
            await self.say(await self.driver.compact(self, command.argument))
            self.state = "idle"
        elif name == "model":
            self.pick_model(command.argument)
        elif name == "resume":
            self.pick_session(command.argument)
        elif name == "permissions":
            self.pick_mode(command.argument)
        self.refresh_status()

    async def mcp_command(self, argument: str) -> None:
        """`/mcp` lists the servers; `/mcp reconnect NAME` connects one afresh."""
        verb, _, name = argument.partition(" ")
        if not argument:
            usages = [command.usage() for command in self.driver.prompt_commands().values()]
            await self.say(Text(listing(self.driver.mcp_states(), usages)))  # no markup
        elif verb == "reconnect" and name.strip():
            self.reconnect(name.strip())
        else:
            await self.say("Usage: /mcp lists the MCP servers; /mcp reconnect NAME", "error")

    @work(group="mcp", exit_on_error=False)
    async def reconnect(self, name: str) -> None:
        await self.say(f"Reconnecting {name}...")
        said = await self.driver.reconnect_mcp(name)
        self.register_prompt_commands()
        await self.say(Text(said), "info" if said.startswith("Reconnected") else "error")

    def register_prompt_commands(self) -> None:
        """The connected MCP servers' prompts as commands (commands.py's registry)."""
        found = self.driver.prompt_commands()
        commands.set_prompt_commands({n: c.description() for n, c in found.items()})

    @work(group="rewind", exit_on_error=False)
    async def rewind(self) -> None:
        """`/rewind`, Esc Esc: pick a turn, then what goes back to before it (rewind.py); a
        change made outside magi-code since is named and asked about before it is overwritten.
        What is sent meanwhile waits in the queue, as during a turn."""
        if self.control is not None:  # a turn, or another rewind, is under way
            return
        rewinder = self.driver.rewinder()
        if rewinder is None:
            await self.say("Nothing to rewind yet: no turn in this conversation.", "warning")
            return
        self.control, self.state = TurnControl(), "rewinding"
        self.refresh_status()
        try:
            await self.rewind_chosen(rewinder)
        finally:
            self.control, self.state = None, "idle"
            self.refresh_status()
        if self.leaving is not None:
            self.exit(self.leaving)
        else:
            await self.send_queued()

    async def rewind_chosen(self, rewinder: Rewinder) -> None:
        points = await anyio.to_thread.run_sync(rewinder.points)
        if not points:
            await self.say("Nothing to rewind yet: no turn in this conversation.", "warning")
            return
        listed = [(str(point.number), point.label()) for point in points]
        chosen = await self.push_screen_wait(
            PickerScreen("Rewind to before which turn?", listed, current=listed[-1][0])
        )
        if chosen is None:
            return
        point = points[int(chosen) - 1]
        options = [("conversation", "the conversation only"), ("cancel", "cancel")]
        if point.target is not None:
            options[:0] = [("both", "code and conversation"), ("code", "the code only")]
        what = await self.push_screen_wait(
            PickerScreen(f"Rewind to before turn {point.number}: what goes back?", options)
        )
        if what not in ("both", "code", "conversation"):
            return
        if what != "conversation" and not await self.rewind_code(rewinder, point):
            return
        if what != "code":
            try:
                rewinder.rewind_conversation(point)
            except (OSError, SessionError, ValueError):
                await self.say("The conversation could not be rewound: nothing changed.", "error")
                return
            await self.log_view.remove_children()
            await self.hydrate()
            if self.driver.attachment is not None:
                self.driver.tally.context = self.driver.history_tokens(self.driver.attachment)
            said = f"The conversation goes on from before turn {point.number}"
            await self.say(said + " (the later turns stay in the session file).")

    async def rewind_code(self, rewinder: Rewinder, point: RewindPoint) -> bool:
        """Put the workspace back to what turn `point` met; False when the person cancelled
        over changes made outside magi-code, or nothing could be read."""
        try:
            code = await anyio.to_thread.run_sync(rewinder.plan_code, point)
        except (OSError, ValueError):
            await self.say("The checkpoint cannot be read: nothing changed.", "error")
            return False
        if code is None:
            return True
        plan = code.plan
        if plan.outside:
            question = (
                f"Changed outside magi-code since turn {point.number}, and would be "
                f"overwritten: {named(plan.outside)}"
            )
            options = [("overwrite", "overwrite them: rewind anyway"), ("cancel", "cancel")]
            if await self.push_screen_wait(PickerScreen(question, options)) != "overwrite":
                await self.say("Rewind cancelled: nothing changed.", "warning")
                return False
        failed = await anyio.to_thread.run_sync(rewinder.rewind_code, code)
        await self.say(f"Code back to before turn {point.number}: {describe(plan)}.")
        if plan.unrestorable:
            await self.say(
                f"Not restorable (too large to keep): {named(plan.unrestorable)}", "warning"
            )
        if failed:
            await self.say(f"Could not be put back: {named(failed)}", "error")
        return True

    async def fork(self) -> None:
        before = self.driver.attachment.session_id if self.driver.attachment else ""
        try:
            forked = self.driver.fork()
        except (OSError, SessionError, ValueError):
            await self.say("The conversation could not be copied: nothing changed.", "error")
            return
        if forked is None:
            await self.say("Nothing to fork yet: send a prompt first.", "warning")
            return
        await self.say(f"Forked into session {forked}; {before} stays as it was.")

    async def show_diff(self) -> None:
        found = await self.driver.diff()
        if found is None:
            await self.say("No git diff here: not a git work tree, or git failed.", "warning")
            return
        tracked, untracked = found
        if tracked:
            await self.say(diff_text(tracked))
        if untracked:
            shown = ", ".join(untracked[:20]) + (" …" if len(untracked) > 20 else "")
            await self.say(f"untracked: {shown}")
        if not tracked and not untracked:
            await self.say("No changes.")

    def status_text(self) -> str:
        driver, tally = self.driver, self.driver.tally
        window = driver.context_window()
        session = driver.attachment.session_id if driver.attachment else "(none yet)"
        servers = status_line(driver.mcp_states())

        told = [
            f"  {kind:<9} {origin} ({size:,} bytes)"
            for kind, origin, size in ordered_sources(driver.admitted.context)
        ]
        return "\n".join(
            [
                f"provider      {driver.provider}",
                f"model         {driver.model}",
                f"context       {tally.context:,} of {window:,} tokens",
                f"this turn     {tally.turn_input:,} in, {tally.turn_output:,} out",
                f"this session  {tally.session_input:,} in, {tally.session_output:,} out"
                " (cost: no prices in the catalog)",
                f"session       {session}",
                f"workspace     {driver.admitted.cwd}",
                f"trust         {trust_word(driver.admitted.trusted)}",
                f"MCP servers   {servers}",
                f"approvals     {driver.grants.mode}",
                f"sandbox       {driver.sandbox.describe()}",
                f"agent         {driver.admitted.context.profile.name}",
                "instructions, in the order the model reads them:",
                *told,
            ]
        )

    def pick_model(self, argument: str) -> None:
        options = [
            (f"{provider}\t{model}", f"{provider} / {model}")
            for provider, models in self.driver.models().items()
            for model in models
        ]

        async def chosen(key: str | None) -> None:
            if key is None:
                return
            provider, _, model = key.partition("\t")
            try:
                self.driver.select(provider, model)
            except LaunchError as failed:
                await self.say(f"The model was not changed: {failed.reason()}", "error")
                return
            await self.say(f"Model: {provider} / {model}")
            self.refresh_status()
            if self.driver.efforts() and not argument:
                self.pick_effort()

        if argument:
            match = [key for key, _ in options if key.endswith("\t" + argument)]
            self.call_later(chosen, match[0] if match else "\t" + argument)
            return
        current = f"{self.driver.provider}\t{self.driver.model}"
        self.push_screen(PickerScreen("Model", options, current=current), chosen)

    def pick_effort(self) -> None:
        """The reasoning effort, for a model whose wire carries one; it opens on the current."""
        options = [("", "the provider's default")]
        options += [(level, f"reasoning effort: {level}") for level in self.driver.efforts()]

        async def chosen(level: str | None) -> None:
            if level is None:
                return
            self.driver.set_thinking(level or None)
            await self.say(f"Reasoning effort: {level or 'the default'}")

        current = self.driver.thinking or ""
        self.push_screen(PickerScreen("Reasoning effort", options, current=current), chosen)

    def pick_session(self, argument: str) -> None:
        async def chosen(session_id: str | None) -> None:
            if session_id is None:
                return
            await self.resume(session_id)

        if argument:
            self.call_later(chosen, argument)
            return
        rows = self.driver.sessions()
        if not rows:
            self.notify("No stored sessions.")
            return
        now = time.time()
        listed = [session_row(row, now) for row in rows]
        self.push_screen(PickerScreen("Resume a session", listed, searchable=True), chosen)

    async def resume(self, session_id: str) -> None:
        try:
            notices = self.driver.open_session(session_id)
        except SessionError as failed:
            await self.say(f"Cannot open session {session_id}: {failed.code}", "error")
            return
        await self.log_view.remove_children()
        await self.say(f"Resumed session {session_id}")
        for notice in notices:
            await self.say(notice, "warning")
        await self.hydrate()
        self.refresh_status()

    def pick_mode(self, argument: str) -> None:
        async def chosen(mode: str | None) -> None:
            if mode in APPROVAL_MODES:
                self.driver.set_approval_mode(mode)
                await self.say(f"Approval mode: {mode}")
                self.refresh_status()
            elif mode in SANDBOX_MODES:
                self.driver.sandbox.mode = mode
                await self.say(f"Sandbox: {self.driver.sandbox.describe()}")
                self.refresh_status()
            elif mode is not None:
                await self.say(
                    "Approval modes: ask, edits, full, auto; sandbox modes: read-only, "
                    "workspace-write, full-access",
                    "error",
                )

        if argument:
            self.call_later(chosen, argument)
            return
        options = [
            ("ask", "ask: every write and command asks"),
            ("edits", "edits: edits inside the workspace are allowed; commands ask"),
            ("full", "full: everything the settings do not deny is allowed"),
            ("auto", "auto: what the sandbox contains runs unasked; the rest asks"),
            ("read-only", "sandbox read-only: commands read, and write only a temp folder"),
            ("workspace-write", "sandbox workspace-write: commands also write the workspace"),
            ("full-access", "sandbox full-access: commands run unconfined"),
        ]
        self.push_screen(PickerScreen("Approval or sandbox mode", options), chosen)


def ended_line(outcome: str, error_code: str | None) -> tuple[str, str]:
    """The line (and its kind) saying how a turn that did not complete ended: live at its
    end, and where it stands when the session is drawn again."""
    kind = "warning" if outcome == "cancelled" else "error"
    return f"{outcome} ({error_code or 'stopped'}); what was said so far is kept", kind


def session_row(row: StoredRow, now: float) -> tuple[str, str]:
    where = "" if row.here else "  (other workspace)"
    first = one_line(row.first_prompt or "-")
    age, size = human_age(now - row.mtime_ns / 1e9), human_size(row.size)
    return row.session_id, f"{age:>8}  {size:>7}  {row.model or '?':<16} {first}{where}"


def one_line(prompt: str) -> str:
    """A prompt as one line of a picker: its runs of white space as one space, clipped."""
    return " ".join(prompt.split())[:PICKED_PROMPT_CHARS]


def human_age(seconds: float) -> str:
    """`just now`, `5 min ago`, `3 h ago`, `2 d ago`."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


def human_size(size: int) -> str:
    """`812 B`, `3.4 KB`, `1.2 MB`."""
    if size < 1000:
        return f"{size} B"
    if size < 1_000_000:
        return f"{size / 1000:.1f} KB"
    return f"{size / 1_000_000:.1f} MB"


def trust_word(trusted: bool) -> str:
    if trusted:
        return "trusted (project settings, hooks, skills and agents apply)"
    return "not trusted (`magi-code trust` lets this folder's own definitions apply)"
