"""Code Mode in real turns: a program calling the session's tools through the bridge, each call
decided by the Code Mode policy (independently of the direct one), asked through the broker,
and an activity of its own that the model is never shown as a call."""

from pathlib import Path

import pytest
from turn_world import Recorder, World

from magi_code.runner.replay import replay
from support.sessions import script

pytestmark = pytest.mark.anyio

SURVEY = """
hits = {}
for name in ("a.txt", "b.txt", "c.txt"):
    text = tools.read_file(path=name)
    hits[name] = text.count("TODO")
found = tools.grep(pattern="TODO", path=".")
print("grep says:", found.splitlines()[0])
result = {"todos": hits, "total": sum(hits.values())}
"""
WRITE = "tools.write_file(path='out.txt', content='from code\\n')\nresult = 'written'"


def code_turn(program: str, *more: dict[str, object]) -> str:
    return script({"tools": [{"name": "code", "arguments": {"program": program}}]}, *more)


@pytest.fixture
def world(tmp_path: Path) -> World:
    world = World(tmp_path)
    for name, todos in (("a.txt", 1), ("b.txt", 2), ("c.txt", 0)):
        (world.workspace / name).write_text("line\n" + "TODO fix\n" * todos)
    return world


async def test_one_program_reads_three_files_greps_them_and_returns_a_summary(
    world: World,
) -> None:
    world.settings("code_mode = true\n")
    finished, seen = await world.turn(code_turn(SURVEY, {"text": "3 TODOs"}))
    assert finished.outcome == "completed"
    [result] = world.tool_results()
    assert '[result]\n{"todos": {"a.txt": 1, "b.txt": 2, "c.txt": 0}, "total": 3}' in result
    assert "grep says:" in result
    assert result.startswith("[completed; 4 tool calls]")
    calls = [a for a in seen.activities("code:") if a.state != "started"]
    assert [a.name for a in calls] == ["code:read_file"] * 3 + ["code:grep"]
    assert all(a.state == "completed" for a in calls)
    # On disk the bridged calls are `activity` records: the model's only call is `code`.
    stored = [r for r in world.records() if r["type"] == "activity"]
    assert len(stored) == 8
    names = [type(i).__name__ + ":" + getattr(i, "name", "") for i in replay(world.records())]
    assert names == ["UserText:", "ToolCall:code", "ToolResult:", "AssistantText:"]


async def test_off_unless_settings_or_profile_turn_it_on(world: World) -> None:
    await world.turn(code_turn(SURVEY))
    assert '{"error": "rejected: invalid_arguments"}' in world.tool_results()[0]
    agents = world.home / "agents"
    agents.mkdir()
    (agents / "coder.md").write_text("---\ncode_mode: true\n---\nYou write programs.\n")
    world.settings('agent = "coder"\n')
    world._admitted = None
    await world.turn(code_turn(SURVEY))
    assert world.tool_results()[-1].startswith("[completed; 4 tool calls]")
    (agents / "coder.md").write_text("---\ncode_mode: false\n---\nNo programs.\n")
    world.settings('agent = "coder"\ncode_mode = true\n')  # the profile's word wins
    world._admitted = None
    await world.turn(code_turn(SURVEY))
    assert "rejected" in world.tool_results()[-1]


async def test_a_write_denied_in_code_mode_is_allowed_directly(world: World) -> None:
    world.settings(
        'code_mode = true\n[permissions]\ndefault_write = "allow"\n'
        '[permissions.code_mode]\ndefault_write = "deny"\n'
    )
    turn = code_turn(
        WRITE,
        {"tools": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "d\n"}}]},
    )
    _, seen = await world.turn(turn)
    through_code, direct = world.tool_results()
    assert "ToolError: The user did not allow this action." in through_code
    assert direct == "created out.txt (2 bytes)"
    assert through_code.startswith("[the program raised an exception (see stderr); 1 tool call]")
    assert (world.workspace / "out.txt").read_text() == "d\n"  # the direct write ran
    assert seen.approvals == []


async def test_a_write_denied_directly_is_allowed_in_code_mode(world: World) -> None:
    world.settings(
        'code_mode = true\n[permissions]\ndefault_write = "deny"\n'
        '[permissions.code_mode]\ndefault_write = "allow"\n'
    )
    turn = code_turn(
        WRITE,
        {"tools": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "d\n"}}]},
    )
    await world.turn(turn)
    through_code, direct = world.tool_results()
    assert '[result]\n"written"' in through_code
    assert (world.workspace / "out.txt").read_text() == "from code\n"
    assert "The user did not allow this action." in direct
    assert not (world.workspace / "x.txt").exists()


async def test_an_asking_call_goes_through_the_broker_saying_code_mode(world: World) -> None:
    world.settings("code_mode = true\n")  # writes ask, as for direct calls
    _, seen = await world.turn(code_turn(WRITE))
    assert seen.approvals == ["Code Mode: write out.txt"]
    assert not (world.workspace / "out.txt").exists()  # the recorder denied it
    allowing = Recorder(allow=True)
    await world.turn(code_turn(WRITE), emit=allowing)
    assert allowing.approvals == ["Code Mode: write out.txt"]
    assert (world.workspace / "out.txt").read_text() == "from code\n"


async def test_untrusted_project_code_mode_rules_only_narrow(world: World) -> None:
    world.settings('code_mode = true\n[permissions.code_mode]\ndefault_write = "allow"\n')
    world.project_settings(
        '[permissions.code_mode]\ndefault_write = "allow"\n'
        '[[permissions.code_mode.rules]]\ntool = "write_file"\ndecision = "deny"\n'
    )
    await world.turn(code_turn(WRITE))
    assert "ToolError" in world.tool_results()[0]
    assert not (world.workspace / "out.txt").exists()
    assert world.admitted.settings["permissions"]["code_mode"]["project_rules"] == [
        {"tool": "write_file", "decision": "deny"}
    ]


async def test_pre_tool_use_hooks_see_bridged_calls(world: World) -> None:
    world.settings(
        'code_mode = true\n[permissions.code_mode]\ndefault_shell = "allow"\n'
        '[[hooks.pre_tool_use]]\nmatcher = "shell"\n'
        'command = "echo no shell from programs >&2; exit 2"\n'
    )
    program = "tools.shell(command='touch ran')"
    await world.turn(code_turn(program))
    assert (
        "ToolError: A hook blocked this call: no shell from programs" in (world.tool_results()[0])
    )
    assert not (world.workspace / "ran").exists()


def test_a_profile_code_mode_that_is_not_true_or_false_is_profile_invalid(world: World) -> None:
    from magi_code.runner.startup import StartupError

    agents = world.home / "agents"
    agents.mkdir()
    (agents / "coder.md").write_text("---\ncode_mode: maybe\n---\nBody.\n")
    world.settings('agent = "coder"\n')
    with pytest.raises(StartupError) as refused:
        _ = world.admitted
    assert refused.value.code == "profile_invalid"
    assert "code_mode must be true or false" in str(refused.value.detail)


async def test_a_profile_tool_list_bounds_code_and_what_it_may_call(world: World) -> None:
    agents = world.home / "agents"
    agents.mkdir()
    (agents / "reader.md").write_text("---\ntools: [read_file]\n---\nRead only.\n")
    world.settings('agent = "reader"\ncode_mode = true\n')
    await world.turn(code_turn(SURVEY))
    assert "rejected" in world.tool_results()[-1]  # the list does not name `code`
    (agents / "reader.md").write_text("---\ntools: [read_file, code]\n---\nRead only.\n")
    world._admitted = None
    await world.turn(code_turn(SURVEY))
    result = world.tool_results()[-1]
    assert "AttributeError: no tool named 'grep'; tools: read_file" in result


async def test_a_bad_call_is_refused_alike_by_the_model_and_by_a_program(world: World) -> None:
    """One call path: the same bad input is refused with the same words and the same activity
    (started, then failed, with the refusal as its summary), whoever made the call."""
    world.settings("code_mode = true\n")
    direct = {"tools": [{"name": "read_file", "arguments": {"nope": 1}}]}
    _, seen = await world.turn(
        script(
            direct,
            {"tools": [{"name": "code", "arguments": {"program": "tools.read_file(nope=1)"}}]},
        )
    )
    told_model, told_program = world.tool_results()
    assert "rejected" in told_model
    assert told_model.split("\n")[-1] in told_program
    model_states = [(a.state, a.summary) for a in seen.activities("read_file")]
    program_states = [(a.state, a.summary) for a in seen.activities("code:read_file")]
    assert [s for s, _ in model_states] == [s for s, _ in program_states] == ["started", "failed"]
    assert model_states[-1][1] == program_states[-1][1]
