"""The `update_plan` tool: the model's checklist for the task, each step pending, in progress
or completed, which the faces show a person (Mission Control's checklist, `exec --json`'s
`plan.updated`, ACP's `plan` update; the local agent sees a tool activity like any other).

Rules:
- Codex's shape: `{"explanation"?: string, "plan": [{"step": string, "status": "pending" |
  "in_progress" | "completed"}]}`. Each call sends the whole plan, which replaces the last;
  an empty plan clears it.
- Bounded (tools/limits.py): at most PLAN_STEPS steps, each one line of at most
  PLAN_STEP_CHARS characters, not blank; an explanation of at most PLAN_EXPLANATION_CHARS; at
  most one step in progress. A bad call is refused with a sentence saying what is wrong and
  what to send instead, never echoing the input.
- No side effect: it touches nothing (its access is a read of the workspace, which the
  policy allows unasked in every approval mode) and the model is told only PLAN_TOLD.
- What a face is shown is redacted (the steps are model output). The session keeps the plan
  as the call's stored arguments, so a reopened session reads its last plan back
  (`stored_plan`).
"""

import re
from typing import Literal

from magi_code.records import record
from magi_code.redact import redact
from magi_code.tools import args as A
from magi_code.tools.base import Access, ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.limits import PLAN_EXPLANATION_CHARS, PLAN_STEP_CHARS, PLAN_STEPS

PlanStatus = Literal["pending", "in_progress", "completed"]
STATUSES: tuple[PlanStatus, ...] = ("pending", "in_progress", "completed")
PLAN_TOLD = "Plan updated"
SHAPE = (
    'update_plan takes {"explanation"?: string, "plan": [{"step": string, "status": '
    '"pending" | "in_progress" | "completed"}, ...]}: send the whole plan again in that shape'
)
_NOT_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@record
class PlanStep:
    step: str
    status: PlanStatus


@record
class PlanUpdate:
    """One `update_plan` call: the whole plan, which replaces the last (its explanation, if
    the model gave one, says why it changed)."""

    explanation: str | None
    plan: tuple[PlanStep, ...]


def read_plan(arguments: str) -> PlanUpdate:
    """The model's arguments as a plan; raises ToolInputError saying what to fix."""
    fields = A.load_any_object(arguments)
    if "plan" not in fields or not set(fields) <= {"plan", "explanation"}:
        raise ToolInputError("invalid_arguments", SHAPE)
    explanation, steps = fields.get("explanation"), fields["plan"]
    if not isinstance(steps, list) or not isinstance(explanation, str | None):
        raise ToolInputError("invalid_arguments", SHAPE)
    if explanation is not None and len(explanation) > PLAN_EXPLANATION_CHARS:
        raise refused(f"the explanation is longer than {PLAN_EXPLANATION_CHARS} characters")
    if len(steps) > PLAN_STEPS:
        raise refused(f"the plan has {len(steps)} steps, more than {PLAN_STEPS}: merge steps")
    plan = tuple(_step(number, given) for number, given in enumerate(steps, 1))
    working = [number for number, step in enumerate(plan, 1) if step.status == "in_progress"]
    if len(working) > 1:
        numbers = ", ".join(map(str, working))
        raise refused(
            f"steps {numbers} are in_progress: at most one step is in_progress at a "
            "time; mark the others pending or completed"
        )
    return PlanUpdate(explanation or None, plan)


def _step(number: int, given: object) -> PlanStep:
    if not isinstance(given, dict) or set(given) != {"step", "status"}:
        raise refused(f'step {number} is not {{"step": string, "status": string}}')
    text, status = given["step"], given["status"]
    if type(status) is not str or status not in STATUSES:
        raise refused(f"step {number}'s status is not pending, in_progress or completed")
    if not isinstance(text, str) or not text.strip():
        raise refused(f"step {number} has no text: say in a few words what the step does")
    if len(text) > PLAN_STEP_CHARS:
        raise refused(f"step {number} is longer than {PLAN_STEP_CHARS} characters: shorten it")
    if _NOT_ONE_LINE.search(text):
        raise refused(f"step {number} holds a line break or a control character: one line")
    return PlanStep(text.strip(), status)


def refused(why: str) -> ToolInputError:
    return ToolInputError("invalid_arguments", f"{why}; nothing changed: call update_plan again")


def summary(update: PlanUpdate) -> str:
    """The call's activity summary: counts only, never a step's text."""
    if not update.plan:
        return "plan cleared"
    done = sum(step.status == "completed" for step in update.plan)
    said = f"plan: {done} of {len(update.plan)} done"
    working = [n for n, step in enumerate(update.plan, 1) if step.status == "in_progress"]
    return said + (f", step {working[0]} in progress" if working else "")


def shown(update: PlanUpdate) -> PlanUpdate:
    """The plan as a face shows it: its text redacted (the steps are model output)."""
    plan = tuple(PlanStep(redact(step.step), step.status) for step in update.plan)
    return PlanUpdate(redact(update.explanation) if update.explanation else None, plan)


def stored_plan(arguments: str) -> PlanUpdate | None:
    """The plan a stored `update_plan` call set, as a face shows it; None if it set none."""
    try:
        return shown(read_plan(arguments))
    except ToolInputError:
        return None


class UpdatePlan:
    name = "update_plan"
    description = (
        "Keep a plan of the task as a checklist the user sees: each call sends the whole plan "
        "(it replaces the last), each step one short line with its status: pending, "
        "in_progress or completed. At most one step is in_progress at a time; mark a step "
        "completed as soon as it is done. Use it for work of several steps; skip it for a "
        "simple question."
    )

    def __init__(self) -> None:
        step: dict[str, object] = {
            "type": "object",
            "properties": {
                "step": {"type": "string", "maxLength": PLAN_STEP_CHARS},
                "status": {"type": "string", "enum": list(STATUSES)},
            },
            "required": ["step", "status"],
            "additionalProperties": False,
        }
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {
                "explanation": {"type": "string", "maxLength": PLAN_EXPLANATION_CHARS},
                "plan": {"type": "array", "items": step, "maxItems": PLAN_STEPS},
            },
            "required": ["plan"],
            "additionalProperties": False,
        }

    def parse(self, arguments: str) -> PlanUpdate:
        return read_plan(arguments)

    def access(self, args: PlanUpdate, ctx: ToolContext) -> Access:
        return Access("read", (ctx.workspace,))  # touches nothing: a read allowed in here

    def describe(self, args: PlanUpdate, ctx: ToolContext) -> str:
        return summary(args)

    async def run(self, args: PlanUpdate, ctx: ToolContext) -> ToolOutcome:
        if ctx.detail is not None:
            await ctx.detail(shown(args))
        return ToolOutcome(True, PLAN_TOLD, summary(args))
