"""LiveCall: what a server says to us during one of our tool calls, handed from the manager's
loop (which writes) to the caller's loop (which reads and answers): its progress and its
questions (elicitation forms).

Rules:
- The two loops meet through one threading event (`changed`), waited for in a worker thread
  (`changes`): a wakeup, never a polling sleep. `end` wakes a waiter for good.
- Progress: the last report counts (`Progress`, for the activity's summary); `latest` takes
  the report not yet forwarded, if any, so a face is shown the newest and never a backlog.
- A question waits for its answer in a future the caller's loop fulfils (`answer`); one left
  unanswered when the call ends is answered `cancel`.
- Notes (why a question was declined, elicitation.py) end up in the call's result.
"""

import concurrent.futures
import contextlib
import threading
from collections import deque

import anyio

from magi_code.mcp.elicitation import Answer, Form
from magi_code.mcp.limits import PROGRESS_MESSAGE_CHARS
from magi_code.mcp.progress import Progress
from magi_code.records import field, record
from magi_code.redact import redact
from magi_code.tools.summaries import clip_utf8, one_line


@record
class Report:
    progress: float
    total: float | None
    message: str  # the server's, one line, redacted, cut at PROGRESS_MESSAGE_CHARS


@record
class Question:
    form: Form
    future: "concurrent.futures.Future[Answer]" = field(default_factory=concurrent.futures.Future)


class LiveCall:
    def __init__(self, answers: bool) -> None:
        self.answers = answers  # a person can answer the call's questions
        self.progress = Progress()
        self.notes: list[str] = []
        self.changed = threading.Event()
        self._report: Report | None = None
        self._questions: deque[Question] = deque()
        self._ended = False

    # ---- the manager's loop ------------------------------------------------------------------

    async def update(self, progress: float, total: float | None, message: str | None) -> None:
        """The SDK's progress callback."""
        await self.progress.update(progress, total, message)
        said = clip_utf8(redact(one_line(message or "")), PROGRESS_MESSAGE_CHARS)
        self._report = Report(progress, total, said)
        self.changed.set()

    async def ask(self, form: Form) -> Answer:
        """The person's answer to `form` (cancel once the call ended unanswered)."""
        question = Question(form)
        self._questions.append(question)
        self.changed.set()
        if self._ended:
            question.future.cancel()
        try:
            return await anyio.to_thread.run_sync(question.future.result, abandon_on_cancel=True)
        except concurrent.futures.CancelledError:
            return Answer("cancel")
        finally:
            question.future.cancel()  # a no-op once answered

    def note(self, said: str) -> None:
        self.notes.append(said)

    # ---- the caller's loop -------------------------------------------------------------------

    async def changes(self) -> None:
        """Wait until something new came (or the call ended), then take the wakeup."""
        await anyio.to_thread.run_sync(self.changed.wait, abandon_on_cancel=True)
        self.changed.clear()

    def latest(self) -> Report | None:
        report, self._report = self._report, None
        return report

    def questions(self) -> list[Question]:
        taken = []
        while self._questions:  # popleft, not clear: one may be added meanwhile
            taken.append(self._questions.popleft())
        return taken

    @staticmethod
    def answer(question: Question, answer: Answer) -> None:
        """Hand the person's answer over; one the server no longer waits for is dropped."""
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            question.future.set_result(answer)

    def end(self) -> None:
        """The call is over: unanswered questions are cancelled, a waiter woken."""
        self._ended = True
        for question in self.questions():
            question.future.cancel()
        self.changed.set()

    def told(self) -> str:
        """The notes, for the start of the call's result."""
        return "".join(f"[{note}]\n" for note in self.notes)
