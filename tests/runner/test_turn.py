"""The turn loop in process, on real session files: what the model is told, what it is
shown again next turn, and what an undeliverable critical event does."""

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from magi_code.providers.base import (
    AssistantText,
    Completed,
    ModelRequest,
    ProviderEvent,
    TextDelta,
    ToolCall,
    ToolCallDone,
    ToolResult,
    Usage,
    UserText,
)
from magi_code.runner.events import MessageDelta, RunEvent, RunFinished
from magi_code.runner.journal import SessionJournal
from magi_code.runner.setup import turn_setup
from magi_code.runner.startup import Admitted, admit
from magi_code.runner.turn import OutputUnavailable, TurnControl, run_turn
from magi_code.sessions import Attachment, Selection, SessionStore
from magi_code.tools.approvals import ApprovalBroker

pytestmark = pytest.mark.anyio


class Recorder:
    def __init__(self, fail_on: type | None = None) -> None:
        self.events: list[RunEvent] = []
        self.fail_on = fail_on

    def delta(self, event: MessageDelta) -> None:
        self.events.append(event)

    async def critical(self, event: RunEvent) -> None:
        if self.fail_on is not None and isinstance(event, self.fail_on):
            raise OutputUnavailable
        self.events.append(event)

    async def announce(self, approval_id: str, summary: str, expires_in_ms: int) -> None:
        raise AssertionError("no approval expected")


class Capturing:
    """A provider that records every request and answers from a list of scripted rounds."""

    id = "capture"

    def __init__(self, rounds: list[list[ProviderEvent]]) -> None:
        self.rounds, self.requests = rounds, []  # type: ignore[var-annotated]

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        for event in self.rounds.pop(0):
            yield event


@pytest.fixture
def world(tmp_path: Path) -> tuple[Admitted, Attachment, SessionStore]:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    home.mkdir()
    (home / "AGENTS.md").write_text("GLOBAL RULES\n")
    (workspace / "AGENTS.md").write_text("WORKSPACE RULES\n")
    (workspace / "notes.txt").write_text("alpha\n")
    admitted = admit(str(workspace), {"MC_HOME": str(home), "PATH": "/usr/bin:/bin"})
    store = SessionStore(Path(admitted.paths.home))
    return admitted, store.create(admitted.cwd, Selection("fixture", "fixture-model", None)), store


async def turn(
    world: tuple[Admitted, Attachment, SessionStore],
    provider: Capturing,
    prompt: str,
    emit: Recorder,
) -> RunFinished:
    admitted, attachment, _ = world
    setup = turn_setup(
        admitted, ("fixture", None, None), attachment.session_id, "r", ApprovalBroker(emit.announce)
    )
    setup.provider = provider
    journal = SessionJournal(attachment)
    return await run_turn(setup, journal, emit, TurnControl(), prompt)


async def test_instructions_in_documented_order(
    world: tuple[Admitted, Attachment, SessionStore],
) -> None:
    provider = Capturing([[TextDelta("ok"), Completed()]])
    await turn(world, provider, "hi", Recorder())
    told = provider.requests[0].instructions
    assert (
        told.index("You are magi-code") < told.index("GLOBAL RULES") < told.index("WORKSPACE RULES")
    )


async def test_the_next_turn_replays_what_happened(
    world: tuple[Admitted, Attachment, SessionStore],
) -> None:
    call = ToolCall("c1", "read_file", json.dumps({"path": "notes.txt"}))
    provider = Capturing(
        [
            [TextDelta("reading"), ToolCallDone(call), Completed("tool_use")],
            [TextDelta("it says alpha"), Completed()],
            [TextDelta("again"), Completed()],
        ]
    )
    first = await turn(world, provider, "what is in notes?", Recorder())
    assert first.outcome == "completed"
    second_call = provider.requests[1].items
    assert isinstance(second_call[-1], ToolResult) and "alpha" in second_call[-1].output
    await turn(world, provider, "and now?", Recorder())
    replayed = provider.requests[2].items
    assert [type(i).__name__ for i in replayed] == [
        "UserText",
        "AssistantText",
        "ToolCall",
        "ToolResult",
        "AssistantText",
        "UserText",
    ]
    assert replayed[-1] == UserText("and now?")


async def test_undeliverable_critical_event_cancels_with_output_unavailable(
    world: tuple[Admitted, Attachment, SessionStore],
) -> None:
    from magi_code.runner.events import MessageReconcile

    provider = Capturing([[TextDelta("lost"), Completed()]])
    finished = await turn(world, provider, "hi", Recorder(fail_on=MessageReconcile))
    assert (finished.outcome, finished.error_code) == ("cancelled", "output_unavailable")
    _, attachment, store = world
    records = [
        json.loads(line)
        for line in store.path_of(attachment.session_id).read_bytes().split(b"\n")
        if line
    ]
    assert records[-1]["type"] == "run_finished"
    assert records[-1]["error_code"] == "output_unavailable"


def stored(world: tuple[Admitted, Attachment, SessionStore]) -> list[dict[str, object]]:
    _, attachment, store = world
    raw = store.path_of(attachment.session_id).read_bytes()
    return [json.loads(line) for line in raw.split(b"\n") if line]


async def test_a_runs_usage_is_stored_on_its_run_finished_record(
    world: tuple[Admitted, Attachment, SessionStore],
) -> None:
    call = ToolCall("c1", "read_file", json.dumps({"path": "notes.txt"}))
    provider = Capturing(
        [
            [ToolCallDone(call), Usage(100, 10, 60), Completed("tool_use")],
            [TextDelta("alpha"), Usage(130, 7), Completed()],
            [TextDelta("no figure"), Completed()],
        ]
    )
    await turn(world, provider, "what is in notes?", Recorder())
    first = stored(world)[-1]
    assert first["type"] == "run_finished" and first["usage"] == {
        "rounds": 2,
        "input_tokens": 230,
        "output_tokens": 17,
        "cached_input_tokens": 60,
        "context_tokens": 137,  # the last request and its reply
    }
    await turn(world, provider, "and a provider that says nothing?", Recorder())
    assert "usage" not in stored(world)[-1]  # nothing stored when nothing was said


async def test_a_compactions_tokens_count_in_the_turns_usage_not_in_its_rounds(
    world: tuple[Admitted, Attachment, SessionStore],
) -> None:
    admitted, attachment, _ = world
    provider = Capturing(
        [
            [TextDelta("first answer"), Usage(50, 5), Completed()],
            [TextDelta("the summary"), Usage(40, 4), Completed()],  # the compaction's request
            [TextDelta("second answer"), Usage(20, 2), Completed()],
        ]
    )
    await turn(world, provider, "first", Recorder())
    setup = turn_setup(
        admitted,
        ("fixture", None, None),
        attachment.session_id,
        "r2",
        ApprovalBroker(Recorder().announce),
    )
    setup.provider, setup.context_window = provider, 1  # anything is past it: compact first
    await run_turn(setup, SessionJournal(attachment), Recorder(), TurnControl(), "second")
    assert provider.requests[1].purpose == "compaction"
    assert [r["type"] for r in stored(world)][-2:] == ["assistant", "run_finished"]
    assert stored(world)[-1]["usage"] == {
        "rounds": 1,
        "input_tokens": 60,
        "output_tokens": 6,
        "cached_input_tokens": 0,
        "context_tokens": 22,
    }


def test_replay_starts_from_a_compaction_summary() -> None:
    from magi_code.runner.compaction import SUMMARY_PREFIX
    from magi_code.runner.replay import replay

    records = [
        {"type": "user", "message_id": "u1", "text": "first"},
        {"type": "assistant", "message_id": "a1", "text": "one"},
        {"type": "user", "message_id": "u2", "text": "second"},
        {"type": "assistant_chunk", "message_id": "a2", "index": 0, "text": "tw"},
        {"type": "compaction", "text": "they said first", "keep_from": "u2"},
        {"type": "assistant_chunk", "message_id": "a2", "index": 1, "text": "o"},
        {"type": "user", "message_id": "u3", "text": "third"},
    ]
    items = replay(records)
    assert items == [
        UserText(SUMMARY_PREFIX + "they said first"),
        UserText("second"),
        AssistantText("two"),
        UserText("third"),
    ]


async def test_a_prompt_the_session_cannot_store_is_not_started(
    world: tuple[Admitted, Attachment, SessionStore],
) -> None:
    """Admission refuses it; were one to slip past, the run must say not_started."""
    emit = Recorder()
    finished = await turn(world, Capturing([]), "hi \ud800 there", emit)
    assert finished == RunFinished("failed", "not_started", None, "persistence_failed")
    assert emit.events == []


async def test_model_strings_are_made_encodable_where_they_enter(
    world: tuple[Admitted, Attachment, SessionStore],
) -> None:
    from magi_code.providers.base import ReasoningSummary

    call = ToolCall("c\ud800", "read_file\udc00", '{"path": "notes\ud800.txt"}')
    provider = Capturing(
        [
            [
                TextDelta("x\ud800"),
                ReasoningSummary("i\udbff", "r\ud800"),
                ToolCallDone(call),
                Completed("tool_use"),
            ],
            [TextDelta("y"), Completed()],
        ]
    )
    emit = Recorder()
    finished = await turn(world, provider, "hi", emit)
    assert (finished.outcome, finished.persistence) == ("completed", "durable")
    shown = [e.text for e in emit.events if isinstance(e, MessageDelta)]
    assert shown == ["x\ufffd", "y"]
    replayed = provider.requests[1].items
    assert replayed[1:3] == (
        AssistantText("x\ufffd"),
        ToolCall("c\ufffd", "read_file\ufffd", '{"path": "notes\ufffd.txt"}'),
    )
    _, attachment, store = world
    stored = store.path_of(attachment.session_id).read_bytes().decode("utf-8")
    assert '"text":"r\ufffd"' in stored
