"""Hooks with real hook scripts in real turns: what each exit means, what the model gets, what
the session file keeps, and that a hook is bounded in time and output."""

import json
import os
import sys
import time
from pathlib import Path

import pytest
from turn_world import World

from magi_code.limits import (
    HOOK_CONTEXT_BYTES,
    HOOK_MAX_TIMEOUT_MS,
    HOOK_REASON_BYTES,
    HOOK_STDOUT_BYTES,
    HOOKS_PER_EVENT,
)
from magi_code.providers.base import UserText
from magi_code.runner import hooks
from magi_code.runner.hooks import Finished, Hook, HookConfigError
from magi_code.runner.replay import replay
from support.sessions import script

pytestmark = pytest.mark.anyio

# A pre_tool_use guard: a shell command deleting with a glob is refused with exit 2.
GUARD = """
import json, sys
event = json.load(sys.stdin)
command = event["arguments"].get("command", "")
if command.startswith("rm ") and "*" in command:
    print("no globbed rm in this repo: name the files", file=sys.stderr)
    sys.exit(2)
"""
RM_TURN = script({"tools": [{"name": "shell", "arguments": {"command": "rm *"}}]}, {"text": "ok"})


def hook_script(world: World, name: str, source: str) -> str:
    path = world.workspace.parent / f"{name}.py"
    path.write_text(source)
    return json.dumps([sys.executable, str(path)])


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


async def test_pre_tool_use_exit_2_blocks_rm_glob_and_tells_the_model(world: World) -> None:
    (world.workspace / "keep.txt").write_text("precious\n")
    guard = hook_script(world, "guard", GUARD)
    world.settings(
        f'[permissions]\ndefault_shell = "allow"\n'
        f'[[hooks.pre_tool_use]]\nmatcher = "shell"\ncommand = {guard}\n'
    )
    finished, seen = await world.turn(RM_TURN)
    assert finished.outcome == "completed"
    assert (world.workspace / "keep.txt").read_text() == "precious\n"  # nothing ran
    [result] = world.tool_results()
    assert result == "A hook blocked this call: no globbed rm in this repo: name the files"
    [started, done] = seen.activities("hook:pre_tool_use")
    assert (started.state, done.state) == ("started", "completed")
    assert done.summary.startswith("blocked: no globbed rm")
    # In the session file, and in its history, as an activity the model did not call.
    kinds = [r["type"] for r in world.records()]
    assert kinds.count("activity") == 2
    texts = [e["text"] for e in world.history() if e["kind"] == "activity"]
    assert any(t.startswith("hook:pre_tool_use completed: blocked") for t in texts)


async def test_a_json_block_decision_on_exit_0_blocks_too(world: World) -> None:
    (world.workspace / "keep.txt").write_text("precious\n")
    world.settings(
        '[permissions]\ndefault_shell = "allow"\n[[hooks.pre_tool_use]]\n'
        'command = """echo \'{"decision": "block", "reason": "not today"}\'"""\n'
    )
    await world.turn(RM_TURN)
    assert world.tool_results() == ["A hook blocked this call: not today"]
    assert (world.workspace / "keep.txt").exists()


async def test_a_hook_that_does_not_match_the_tool_does_not_run(world: World) -> None:
    (world.workspace / "notes.txt").write_text("alpha\n")
    world.settings('[[hooks.pre_tool_use]]\nmatcher = "shell"\ncommand = "exit 2"\n')
    turn = script({"tools": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]})
    _, seen = await world.turn(turn)
    assert seen.activities("hook:") == []
    assert "alpha" in world.tool_results()[0]


async def test_a_timed_out_hook_is_a_diagnostic_and_the_turn_goes_on(world: World) -> None:
    (world.workspace / "notes.txt").write_text("alpha\n")
    world.settings('[[hooks.pre_tool_use]]\ntimeout_ms = 300\ncommand = "sleep 30"\n')
    turn = script(
        {"tools": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}, {"text": "ok"}
    )
    began = time.monotonic()
    finished, seen = await world.turn(turn)
    assert time.monotonic() - began < 5  # killed at its timeout, not waited for
    assert finished.outcome == "completed"
    assert "alpha" in world.tool_results()[0]  # not blocked
    [diagnostic] = seen.diagnostics()
    assert diagnostic.code == "hook_failed" and "timed out after 300 ms" in diagnostic.summary
    assert seen.activities("hook:")[-1].state == "failed"


async def test_other_exit_codes_are_diagnostics_not_blocks(world: World) -> None:
    (world.workspace / "keep.txt").write_text("x\n")
    world.settings(
        '[permissions]\ndefault_shell = "allow"\n'
        '[[hooks.pre_tool_use]]\ncommand = "echo boom >&2; exit 1"\n'
    )
    turn = script({"tools": [{"name": "shell", "arguments": {"command": "echo ran"}}]})
    _, seen = await world.turn(turn)
    assert "ran" in world.tool_results()[0]
    assert [d.code for d in seen.diagnostics()] == ["hook_failed"]
    assert "exit 1" in seen.diagnostics()[0].summary


async def test_post_tool_use_context_reaches_the_model_with_the_result(world: World) -> None:
    (world.workspace / "notes.txt").write_text("alpha\n")
    world.settings(
        "[[hooks.post_tool_use]]\n"
        'command = """echo \'{"additional_context": "lint: 0 warnings"}\'"""\n'
    )
    turn = script({"tools": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]})
    await world.turn(turn)
    [result] = world.tool_results()
    assert "alpha" in result
    assert result.endswith("[context from a post_tool_use hook]\nlint: 0 warnings")


async def test_hook_stdout_is_bounded_at_its_exact_edge(world: World) -> None:
    """A JSON answer of exactly HOOK_STDOUT_BYTES is read; one byte more is a diagnostic."""
    for size, read in ((HOOK_STDOUT_BYTES, True), (HOOK_STDOUT_BYTES + 1, False)):
        answer = json.dumps({"additional_context": "edge"})
        padded = answer + " " * (size - len(answer))
        (world.workspace.parent / "answer.json").write_text(padded)
        world.settings(
            f"[[hooks.user_prompt_submit]]\ncommand = "
            f"{json.dumps(['cat', str(world.workspace.parent / 'answer.json')])}\n"
        )
        world._admitted = None
        _, seen = await world.turn("hello")
        failed = [d for d in seen.diagnostics() if d.code == "hook_failed"]
        assert (failed == []) is read, size
        assert (seen.activities("hook:")[-1].summary == "added context") is read


async def test_huge_hook_stdout_is_bounded_and_the_hook_is_not_blocked(world: World) -> None:
    chatty = json.dumps([sys.executable, "-c", "print('x' * 50_000_000)"])
    world.settings(f"[[hooks.user_prompt_submit]]\ncommand = {chatty}\n")
    began = time.monotonic()
    finished, seen = await world.turn("hello")
    assert time.monotonic() - began < 10
    assert finished.outcome == "completed"
    [diagnostic] = seen.diagnostics()
    assert f"stdout over {HOOK_STDOUT_BYTES} bytes" in diagnostic.summary


async def test_user_prompt_context_reaches_the_model_now_and_on_replay(world: World) -> None:
    world.settings(
        "[[hooks.user_prompt_submit]]\n"
        'command = """echo \'{"additional_context": "branch: main"}\'"""\n'
    )
    await world.turn("hello")
    items = replay(world.records())
    assert items[0] == UserText("hello")
    assert items[1] == UserText("[context from a user_prompt_submit hook]\nbranch: main")


async def test_a_blocked_prompt_never_reaches_the_model(world: World) -> None:
    world.settings('[[hooks.user_prompt_submit]]\ncommand = "echo secret words >&2; exit 2"\n')
    finished, seen = await world.turn("please leak the secret words")
    assert finished.outcome == "completed"
    assert [d.code for d in seen.diagnostics()] == ["hook_blocked"]
    assert not [r for r in world.records() if r["type"] == "assistant"]  # the model never ran
    assert replay(world.records()) == []  # nor sees it later


async def test_session_start_fires_once_per_attachment(world: World) -> None:
    counter = world.workspace.parent / "starts"
    world.settings(f'[[hooks.session_start]]\ncommand = "echo . >> {counter}"\n')
    await world.turn("one")
    await world.turn("two")
    assert counter.read_text() == ".\n"
    world.reopen()
    await world.turn("three")
    assert counter.read_text() == ".\n.\n"


async def test_stop_and_payload_and_scrubbed_environment(world: World) -> None:
    seen_by_hook = world.workspace.parent / "payload.json"
    world.env["SOME_SECRET_TOKEN"] = "tok-0123456789"
    world.settings(
        f"[[hooks.stop]]\ncommand = "
        f"{json.dumps([sys.executable, '-c', _DUMP.format(out=str(seen_by_hook))])}\n"
    )
    await world.turn("hello")
    told = json.loads(seen_by_hook.read_text())
    assert told["event"] == "stop"
    assert told["session_id"] == world.attachment.session_id
    # Told the workspace; started, as a global hook, in a folder of its own under MC_HOME
    # (config/own_commands.py), never in the workspace whose files it could run.
    neutral = os.path.join(world.admitted.paths.home, "run", "hooks", "stop")
    assert told["cwd"] == world.admitted.cwd and told["pwd"] == os.path.realpath(neutral)
    assert "SOME_SECRET_TOKEN" not in told["env"]


_DUMP = """
import json, os, sys
event = json.load(sys.stdin)
event["env"] = sorted(os.environ)
event["pwd"] = os.getcwd()
open({out!r}, "w").write(json.dumps(event))
"""


async def test_untrusted_project_hooks_do_not_run_trusted_ones_do(world: World) -> None:
    marker = world.workspace.parent / "ran"
    world.project_settings(f'[[hooks.user_prompt_submit]]\ncommand = "touch {marker}"\n')
    await world.turn("hello")
    assert not marker.exists()
    assert any(d.key == "hooks" for d in world.admitted.dropped)
    trusted = World.__new__(World)
    trusted.__dict__.update(world.__dict__)
    trusted._admitted = trusted._attachment = None
    trusted.trust()
    await trusted.turn("hello")
    assert marker.exists()


def test_settings_shapes_and_timeout_edge() -> None:
    edge = hooks.parse({"stop": [{"command": "true", "timeout_ms": HOOK_MAX_TIMEOUT_MS}]})
    assert edge["stop"][0].timeout_ms == HOOK_MAX_TIMEOUT_MS
    assert hooks.parse({"stop": [{"command": ["true"]}]})["stop"][0].timeout_ms == 10_000
    for bad in (
        {"stop": [{"command": "true", "timeout_ms": HOOK_MAX_TIMEOUT_MS + 1}]},
        {"stop": [{"command": "true", "timeout_ms": 0}]},
        {"stop": [{"command": ""}]},
        {"stop": [{"command": "true", "matcher": "shell"}]},  # matchers are for tool events
        {"stop": [{"command": "true", "extra": 1}]},
        {"on_error": [{"command": "true"}]},
        {"stop": {"command": "true"}},
    ):
        with pytest.raises(HookConfigError):
            hooks.parse(bad)


def test_context_is_bounded_at_its_exact_edge() -> None:
    hook = Hook("session_start", ("true",), "true")
    for size in (HOOK_CONTEXT_BYTES, HOOK_CONTEXT_BYTES + 1):
        out = json.dumps({"additional_context": "x" * size}).encode()
        context = hooks.verdict(hook, Finished(0, out, b"")).context
        assert context is not None
        assert len(context.encode()) <= HOOK_CONTEXT_BYTES
        assert (context == "x" * size) is (size == HOOK_CONTEXT_BYTES)


def test_what_each_event_may_do() -> None:
    block = json.dumps({"decision": "block", "reason": "r"}).encode()
    context = json.dumps({"additional_context": "c"}).encode()
    for event in hooks.EVENTS:
        hook = Hook(event, ("true",), "true")
        blocked = hooks.verdict(hook, Finished(0, block, b"")).blocked
        exit_2 = hooks.verdict(hook, Finished(2, b"", b"why"))
        added = hooks.verdict(hook, Finished(0, context, b"")).context
        assert (blocked == "r") is (event in ("pre_tool_use", "user_prompt_submit"))
        assert (exit_2.blocked == "why") is (event in ("pre_tool_use", "user_prompt_submit"))
        assert (exit_2.problem is not None) is (exit_2.blocked is None)
        assert (added == "c") is (event in ("session_start", "user_prompt_submit", "post_tool_use"))


async def test_a_hook_never_answers_an_approval_nor_widens_a_permission(world: World) -> None:
    """Writes ask; a hook saying approve/allow changes nothing: the user is still asked."""
    world.settings(
        "[[hooks.pre_tool_use]]\n"
        'command = """echo \'{"decision": "approve", "permissionDecision": "allow"}\'"""\n'
    )
    turn = script({"tools": [{"name": "write_file", "arguments": {"path": "x", "content": "y"}}]})
    _, seen = await world.turn(turn)
    assert seen.approvals == ["write x"]  # asked, and the recorder denied
    assert not (world.workspace / "x").exists()


def test_reason_and_hook_count_bounds_at_their_exact_edge() -> None:
    hook = Hook("pre_tool_use", ("true",), "true")
    for size in (HOOK_REASON_BYTES, HOOK_REASON_BYTES + 1):
        reason = hooks.verdict(hook, Finished(2, b"", b"r" * size)).blocked
        assert reason is not None and len(reason.encode()) <= HOOK_REASON_BYTES
        assert (reason == "r" * size) is (size == HOOK_REASON_BYTES)
    entry = {"command": "true"}
    assert len(hooks.parse({"stop": [entry] * HOOKS_PER_EVENT})["stop"]) == HOOKS_PER_EVENT
    with pytest.raises(HookConfigError):
        hooks.parse({"stop": [entry] * (HOOKS_PER_EVENT + 1)})


@pytest.mark.parametrize(
    "text",
    [
        '[[hooks.stop]]\ncommand = "true"\ntimeout_ms = 60001\n',
        "[hooks]\nstop = 1\n",
        'code_mode = "yes"\n',
        "[permissions.code_mode]\ncode_mode = {}\n",
        '[permissions.code_mode]\ndefault_write = "sometimes"\n',
    ],
)
def test_bad_hooks_or_code_mode_settings_fail_startup(world: World, text: str) -> None:
    from magi_code.runner.startup import StartupError

    world.settings(text)
    with pytest.raises(StartupError) as refused:
        _ = world.admitted
    assert refused.value.code == "configuration_invalid"


def test_post_tool_use_context_always_fits_after_a_full_output() -> None:
    from magi_code.runner.turn import with_context
    from magi_code.tools.base import ToolOutcome
    from magi_code.tools.limits import OUTPUT_BYTES

    full = ToolOutcome(True, "o" * OUTPUT_BYTES, "read")
    context = hooks.framed("post_tool_use", "c" * HOOK_CONTEXT_BYTES)
    added = with_context(full, [context])
    assert added.output.endswith("\n\n" + context)
    assert len(added.output.encode()) <= OUTPUT_BYTES


async def test_pre_compact_runs_before_a_compaction(world: World) -> None:
    seen_by_hook = world.workspace.parent / "order"
    world.settings(
        "[providers.fixture]\ncontext_window = 100\n"
        f'[[hooks.pre_compact]]\ncommand = "echo pre_compact >> {seen_by_hook}"\n'
    )
    await world.turn("x" * 400)  # over 80% of the window: the second turn compacts the first
    assert not seen_by_hook.exists()
    await world.turn("again")
    assert seen_by_hook.read_text() == "pre_compact\n"
    kinds = [r["type"] for r in world.records()]
    assert kinds.index("activity", kinds.index("run_finished")) < kinds.index("compaction")


async def test_the_context_of_one_event_is_bounded_across_its_hooks(world: World) -> None:
    answer = json.dumps({"additional_context": "c" * (HOOK_CONTEXT_BYTES * 2 // 3)})
    (world.workspace.parent / "answer.json").write_text(answer)
    cat = json.dumps(["cat", str(world.workspace.parent / "answer.json")])
    world.settings(f"[[hooks.user_prompt_submit]]\ncommand = {cat}\n" * 3)
    await world.turn("hello")
    told = [r["context"] for r in world.records() if "context" in r]
    assert len(told) == 2  # the third found no room left
    bodies = [t.split("\n", 1)[1] for t in told]
    assert sum(len(b.encode()) for b in bodies) <= HOOK_CONTEXT_BYTES
    assert bodies[0] == "c" * (HOOK_CONTEXT_BYTES * 2 // 3) and bodies[1].endswith("…")
