"""A `rewind` record: the conversation goes on from just before the prompt it names. The
projection, the provider replay and the list of turns drop that turn and every later one, the
file keeps them, and a live attachment agrees with a fresh read of the file."""

from pathlib import Path
from typing import Any

from sessions_support import SID, finished, header, user, write_session

from magi_code.providers.base import AssistantText, UserText
from magi_code.runner.replay import replay
from magi_code.sessions import SessionStore
from magi_code.sessions.projection import Ending, Projector
from magi_code.sessions.turns import conversation_turns, rewound_runs


def turn(number: int, *, done: bool = True) -> list[dict[str, Any]]:
    run = f"r{number}"
    reply = {"type": "assistant", "run_id": run, "message_id": f"a{number}", "text": f"ok {number}"}
    return [user(run, f"question {number}", f"u{number}"), reply] + (
        [finished(run)] if done else []
    )


def rewind(message_id: str) -> dict[str, Any]:
    return {"type": "rewind", "drop_from": message_id, "at": "2026-12-02T06:00:00.000+00:00"}


def shown(records: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], bool]:
    projector = Projector()
    for record in records:
        projector.feed({"session_id": SID, **record})
    projection = projector.finish()
    return [(entry.kind, entry.text) for entry in projection.entries], projection.complete


def test_the_projection_goes_on_from_before_the_named_prompt() -> None:
    records = [*turn(1), *turn(2), *turn(3), rewind("u2"), *turn(4)]
    entries, complete = shown(records)
    assert entries == [
        ("user", "question 1"),
        ("assistant", "ok 1"),
        ("user", "question 4"),
        ("assistant", "ok 4"),
    ]
    assert complete


def test_a_dropped_interrupted_turn_is_no_longer_shown_as_interrupted() -> None:
    entries, complete = shown([*turn(1), *turn(2, done=False), rewind("u2")])
    assert entries == [("user", "question 1"), ("assistant", "ok 1")]
    assert complete
    entries, complete = shown([*turn(1), *turn(2, done=False)])  # the same without the rewind
    assert entries[-1][0] == "diagnostic" and not complete


def test_a_rewind_to_a_prompt_not_shown_changes_nothing() -> None:
    records = [*turn(1), *turn(2)]
    assert shown([*records, rewind("u-unknown")]) == shown(records)
    assert shown([*records, rewind("u2"), rewind("u2")]) == shown([*records, rewind("u2")])


def endings(records: list[dict[str, Any]], fold: str | None = None) -> tuple[Ending, ...]:
    projector = Projector()
    for record in records:
        projector.feed({"session_id": SID, **record})
    if fold is not None:
        projector.fold(fold)
    return projector.finish().endings


def test_a_rewind_or_a_fold_drops_the_endings_of_the_turns_it_drops() -> None:
    def ended(number: int, outcome: str, code: str | None = None) -> list[dict[str, Any]]:
        return [*turn(number, done=False), finished(f"r{number}", outcome, code)]

    records = [*turn(1), *ended(2, "cancelled"), *ended(3, "failed", "execution_failed")]
    records += turn(4)
    two, three = Ending(3, "cancelled", None), Ending(5, "failed", "execution_failed")
    assert endings(records) == (two, three)
    assert endings([*records, rewind("u3")]) == (two,)
    assert endings([*records, rewind("u2"), *ended(5, "cancelled")]) == (two,)  # at its place
    assert endings(records, fold="u3") == (Ending(1, "failed", "execution_failed"),)


def test_the_model_is_replayed_the_conversation_from_before_the_prompt() -> None:
    records = [*turn(1), *turn(2), rewind("u2"), *turn(3)]
    assert replay(records) == [
        UserText("question 1"),
        AssistantText("ok 1"),
        UserText("question 3"),
        AssistantText("ok 3"),
    ]


def test_the_turns_a_rewind_can_go_back_to_follow_rewinds_and_compactions() -> None:
    compaction = {"type": "compaction", "text": "summary", "keep_from": "u2"}
    records = [*turn(1), *turn(2), compaction, *turn(3), rewind("u3"), *turn(4)]
    assert [t.message_id for t in conversation_turns(records)] == ["u2", "u4"]
    blocked = {"type": "activity", "run_id": "r4", "activity_id": "h", "name": "hook"}
    blocked |= {"state": "completed", "drops_prompt": "u4"}
    assert [t.message_id for t in conversation_turns([*records, blocked])] == ["u2"]


def test_the_runs_rewinds_dropped_are_named_and_a_compaction_drops_none() -> None:
    compaction = {"type": "compaction", "text": "summary", "keep_from": "u2"}
    records = [*turn(1), *turn(2), compaction, *turn(3), *turn(4), rewind("u3"), *turn(5)]
    assert rewound_runs(records) == {"r3", "r4"}
    assert rewound_runs([*records, rewind("u2")]) == {"r2", "r3", "r4", "r5"}
    assert rewound_runs([*records, rewind("u1")]) == {"r3", "r4"}  # no longer a turn: nothing


def test_a_live_attachment_and_a_fresh_read_agree_and_the_file_keeps_every_turn(
    store: SessionStore, cwd: Path
) -> None:
    path = write_session(store, [header(cwd), *turn(1), *turn(2)])
    attachment, _ = store.open(SID, str(cwd), lambda provider, model: True)
    try:
        before = path.read_bytes()
        attachment.append(rewind("u2"), fsync=True)
        live = [
            (p["kind"], p["text"])
            for p in attachment.snapshot().page(attachment.history.revision, None).entries
        ]
    finally:
        attachment.close()
    assert path.read_bytes().startswith(before)  # appended, never rewritten in place
    reopened, _ = store.open(SID, str(cwd), lambda provider, model: True)
    try:
        fresh = [
            (p["kind"], p["text"])
            for p in reopened.history.page(reopened.history.revision, None).entries
        ]
    finally:
        reopened.close()
    assert live == fresh == [("user", "question 1"), ("assistant", "ok 1")]
