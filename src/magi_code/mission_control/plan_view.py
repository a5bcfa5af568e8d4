"""The plan checklist above the prompt: the latest plan `update_plan` set (tools/plan.py),
redrawn in place at each update and hidden while there is none.

Marks: ✓ completed (dim), ◐ in progress (bold), ○ pending. A long step wraps under its own
text, so the checklist fits a narrow terminal; a plan of more than UI_PLAN_STEPS steps shows
that many around the first step not yet completed, and counts the rest above and below. It
never takes more than half the screen from the conversation (a short terminal cuts its end).
"""

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from magi_code.limits import UI_PLAN_STEPS
from magi_code.tools.plan import PlanStep, PlanUpdate

MARKS = {"completed": ("✓", "dim"), "in_progress": ("◐", "bold"), "pending": ("○", "")}


def window(plan: tuple[PlanStep, ...], rows: int) -> tuple[int, int]:
    """The steps shown, [start, end): all of them when they fit, else `rows` of them from
    the one before the first step not completed (the last `rows` when all are)."""
    if len(plan) <= rows:
        return 0, len(plan)
    focus = next((n for n, step in enumerate(plan) if step.status != "completed"), len(plan))
    start = max(0, min(focus - 1, len(plan) - rows))
    return start, start + rows


def checklist(update: PlanUpdate, rows: int = UI_PLAN_STEPS) -> RenderableType:
    done = sum(step.status == "completed" for step in update.plan)
    heading = Text(f"plan · {done} of {len(update.plan)} done", style="bold")
    if update.explanation:
        heading.append(f" · {' '.join(update.explanation.split())}", style="dim")
    heading.no_wrap, heading.overflow = True, "ellipsis"
    start, end = window(update.plan, rows)
    steps = Table.grid(padding=(0, 1))
    steps.add_column(no_wrap=True)
    steps.add_column(ratio=1, overflow="fold")
    if start:
        steps.add_row("", Text(f"… {start} earlier", style="dim"))
    for step in update.plan[start:end]:
        mark, style = MARKS[step.status]
        steps.add_row(Text(mark, style=style), Text(step.step, style=style))
    if end < len(update.plan):
        steps.add_row("", Text(f"… {len(update.plan) - end} more", style="dim"))
    return Group(heading, steps)


class PlanView(Static):
    DEFAULT_CSS = """
    PlanView { height: auto; max-height: 50%; padding: 0 1; border-top: solid $panel; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.plan: PlanUpdate | None = None
        self.display = False

    def show(self, update: PlanUpdate | None) -> None:
        """Draw this plan in place of the last one; none, or an empty one, hides the view."""
        self.plan = update if update is not None and update.plan else None
        self.display = self.plan is not None
        if self.plan is not None:
            self.update(checklist(self.plan))
