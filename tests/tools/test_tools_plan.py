"""update_plan: Codex's argument shape, each bound at its exact edge, a refusal that tells the
model what to fix (never echoing the input), no side effect and no question, and what a face
is shown (redacted)."""

import json
from pathlib import Path
from typing import Any

import pytest

from magi_code.redact import REDACTED
from magi_code.runner.turn import rejected
from magi_code.tools.base import ToolContext, ToolInputError
from magi_code.tools.limits import PLAN_EXPLANATION_CHARS, PLAN_STEP_CHARS, PLAN_STEPS
from magi_code.tools.paths import Protected
from magi_code.tools.plan import PLAN_TOLD, PlanStep, PlanUpdate, UpdatePlan, stored_plan
from magi_code.tools.policy import Policy

pytestmark = pytest.mark.anyio

TOOL = UpdatePlan()


def arguments(*steps: tuple[str, str], **more: Any) -> str:
    plan = [{"step": step, "status": status} for step, status in steps]
    return json.dumps({"plan": plan, **more})


def fix(given: str) -> str:
    """The sentence the model is told for refused arguments."""
    with pytest.raises(ToolInputError) as refused:
        TOOL.parse(given)
    assert refused.value.code == "invalid_arguments"
    return refused.value.fix


def test_codex_shape_is_read_whole() -> None:
    given = arguments(
        ("Read the code", "completed"),
        ("  Fix the greeting ", "in_progress"),
        ("Run the tests", "pending"),
        explanation="the test names the greeting",
    )
    assert TOOL.parse(given) == PlanUpdate(
        "the test names the greeting",
        (
            PlanStep("Read the code", "completed"),
            PlanStep("Fix the greeting", "in_progress"),
            PlanStep("Run the tests", "pending"),
        ),
    )
    assert TOOL.parse('{"plan": []}') == PlanUpdate(None, ())  # an empty plan clears it
    assert TOOL.parse(arguments(("a", "pending"), explanation="")).explanation is None


def test_steps_are_bounded_at_the_exact_edge() -> None:
    at = [(f"step {n}", "pending") for n in range(PLAN_STEPS)]
    assert len(TOOL.parse(arguments(*at)).plan) == PLAN_STEPS
    said = fix(arguments(*at, ("one more", "pending")))
    assert f"{PLAN_STEPS + 1} steps, more than {PLAN_STEPS}: merge steps" in said


def test_a_step_is_bounded_at_the_exact_edge() -> None:
    longest = "x" * PLAN_STEP_CHARS
    assert TOOL.parse(arguments(("a", "completed"), (longest, "pending"))).plan[1].step == longest
    said = fix(arguments(("a", "completed"), (longest + "x", "pending")))
    assert said.startswith(f"step 2 is longer than {PLAN_STEP_CHARS} characters: shorten it")
    assert longest not in said


def test_the_explanation_is_bounded_at_the_exact_edge() -> None:
    at = "e" * PLAN_EXPLANATION_CHARS
    assert TOOL.parse(arguments(explanation=at)).explanation == at
    said = fix(arguments(explanation=at + "e"))
    assert f"longer than {PLAN_EXPLANATION_CHARS} characters" in said


def test_at_most_one_step_is_in_progress() -> None:
    one = arguments(("a", "completed"), ("b", "in_progress"), ("c", "pending"))
    assert TOOL.parse(one).plan[1].status == "in_progress"
    said = fix(arguments(("a", "in_progress"), ("b", "pending"), ("c", "in_progress")))
    assert said.startswith("steps 1, 3 are in_progress: at most one step is in_progress")
    assert "call update_plan again" in said


@pytest.mark.parametrize(
    ("given", "told"),
    [
        ("{}", "update_plan takes"),
        ('{"plan": "do it"}', "update_plan takes"),
        ('{"plan": [], "steps": []}', "update_plan takes"),
        ('{"plan": [], "explanation": 3}', "update_plan takes"),
        ('{"plan": ["do it"]}', 'step 1 is not {"step": string, "status": string}'),
        ('{"plan": [{"step": "a"}]}', 'step 1 is not {"step": string'),
        ('{"plan": [{"step": "a", "status": "done"}]}', "step 1's status is not pending,"),
        ('{"plan": [{"step": "a", "status": ["pending"]}]}', "step 1's status is not"),
        ('{"plan": [{"step": " ", "status": "pending"}]}', "step 1 has no text"),
        ('{"plan": [{"step": 7, "status": "pending"}]}', "step 1 has no text"),
        ('{"plan": [{"step": "a\\nb", "status": "pending"}]}', "step 1 holds a line break"),
        ('{"plan": [{"step": "a\\u2028b", "status": "pending"}]}', "step 1 holds a line break"),
    ],
)
def test_a_bad_call_is_told_what_to_fix(given: str, told: str) -> None:
    assert told in fix(given)


def test_the_model_reads_the_fix_beside_the_code() -> None:
    with pytest.raises(ToolInputError) as refused:
        TOOL.parse(arguments(("a", "in_progress"), ("b", "in_progress")))
    outcome = rejected(refused.value)
    assert not outcome.ok and outcome.summary == "rejected: invalid_arguments"
    told = json.loads(outcome.output)
    assert told == {"error": "rejected: invalid_arguments", "fix": refused.value.fix}
    with pytest.raises(ToolInputError) as not_json:
        TOOL.parse("{plan")
    assert json.loads(rejected(not_json.value).output) == {"error": "rejected: invalid_json"}


async def test_it_tells_the_face_and_the_model_only_that_it_changed(
    ctx: ToolContext, ws: Path
) -> None:
    secret = "sk-" + "a" * 40
    update = TOOL.parse(arguments(("use " + secret, "in_progress"), ("b", "pending")))
    handed: list[object] = []

    async def detail(event: object) -> None:
        handed.append(event)

    before = sorted(ws.iterdir())
    outcome = await TOOL.run(update, ToolContext(ws, ctx.env, detail=detail))
    assert (outcome.ok, outcome.output) == (True, PLAN_TOLD)
    assert outcome.summary == "plan: 0 of 2 done, step 1 in progress"
    [shown] = handed
    assert shown == PlanUpdate(
        None, (PlanStep(f"use {REDACTED}", "in_progress"), PlanStep("b", "pending"))
    )
    assert sorted(ws.iterdir()) == before
    assert (await TOOL.run(update, ctx)).output == PLAN_TOLD  # a face that takes no details


def test_summaries_count_and_never_show_a_step(ctx: ToolContext) -> None:
    done = TOOL.parse(arguments(("secret plan", "completed"), ("other", "completed")))
    assert TOOL.describe(done, ctx) == "plan: 2 of 2 done"
    assert TOOL.describe(TOOL.parse('{"plan": []}'), ctx) == "plan cleared"


def test_it_is_allowed_unasked_by_the_default_policy(ctx: ToolContext, tmp_path: Path) -> None:
    """Every approval mode only widens what the policy asks about: a call the policy allows is
    never a question in any of them."""
    protected = Protected.for_homes(str(tmp_path / "mc-home"), str(tmp_path / "home"))
    policy = Policy.from_settings(None, protected)
    update = TOOL.parse(arguments(("a", "pending")))
    access = TOOL.access(update, ctx)
    assert (access.kind, access.paths) == ("read", (ctx.workspace,))
    assert policy.decide(TOOL.name, access, ctx.workspace) == "allow"


def test_a_stored_call_gives_its_plan_back_redacted() -> None:
    secret = "ghp_" + "b" * 36
    stored = stored_plan(arguments((secret, "pending"), explanation=f"with {secret}"))
    assert stored == PlanUpdate(f"with {REDACTED}", (PlanStep(REDACTED, "pending"),))
    assert stored_plan("{}") is None and stored_plan("not json") is None
