"""Task states with real `melchior serve` processes: the asked session's harness moves an ask
through working, input-required, completed, failed and rejected over its pipe; the asker cancels
it; terminal states are final, and every illegal move is refused with its code."""

from __future__ import annotations

from typing import Any

import pytest
from mel_harness import Melchior, Session, wait_until

from melchior import tasks
from melchior.limits import MAX_TEXT

HARNESS = sorted(tasks.BY_HARNESS)


class Ask:
    """One ask from `asker` to `asked`, read back through the asker's own tool."""

    def __init__(self, asker: Session, asked: Session, text: str = "how far along?") -> None:
        self.asker, self.asked = asker, asked
        answer, code = asker.tool("--verb=ask", f"--who={asked.id}", f"--message={text}")
        assert code == 0 and answer["result"][0]["state"] == "submitted", answer
        self.handle = answer["result"][0]["task"]
        question = asked.next_event()
        assert (question["sort"], question["task"]) == ("question", self.handle)

    def view(self) -> dict[str, Any]:
        answer, code = self.asker.tool("--verb=task", f"--about={self.handle}")
        assert code == 0, answer
        result: dict[str, Any] = answer["result"][0]
        return result

    def move(self, state: str, text: str | None = None) -> None:
        """The harness moves it, and the move lands (no refusal)."""
        event: dict[str, Any] = {"event": "task", "task": self.handle, "state": state}
        if text is not None:
            event["text"] = text
        self.asked.send(event)
        wait_until(lambda: self.view()["state"] == state and self.view()["text"] == text)

    def refused(self, event: dict[str, Any]) -> str:
        """The harness sends `event`; the code of the refusal that comes back on its pipe."""
        self.asked.send(event)
        reply = self.asked.next_event()
        assert reply["event"] == "refused", reply
        return str(reply["code"])

    def cancel(self) -> tuple[dict[str, Any], int]:
        answer, code = self.asker.tool("--verb=cancel", f"--about={self.handle}")
        return answer, code


@pytest.fixture
def pair(mel: Melchior) -> tuple[Session, Session]:
    asker = mel.start()
    return asker, mel.start(asker)


def test_a_task_moves_through_the_live_states_to_completed(pair: tuple[Session, Session]) -> None:
    ask = Ask(*pair)
    assert ask.view() == {"task": ask.handle, "state": "submitted", "answer": None, "text": None}
    ask.move("working", "reading the parser")
    ask.move("working", "half way")  # progress: the same state again
    ask.move("input-required", "main or dev?")
    assert ask.view()["answer"] is None
    ask.move("working")
    ask.move("completed", "done on main")
    assert ask.view() == {
        "task": ask.handle,
        "state": "completed",
        "answer": "done on main",
        "text": "done on main",
    }


def test_the_answer_event_still_completes(pair: tuple[Session, Session]) -> None:
    ask = Ask(*pair)
    ask.move("working")
    ask.asked.send({"event": "answer", "task": ask.handle, "text": "42"})
    wait_until(lambda: ask.view()["state"] == "completed")
    assert ask.view()["answer"] == "42"
    # An answer needs text, as it always did.
    other = Ask(*pair)
    assert other.refused({"event": "answer", "task": other.handle}) == "bad_args"


@pytest.mark.parametrize("final", ["completed", "failed", "rejected", "canceled"])
def test_a_terminal_state_is_final(pair: tuple[Session, Session], final: str) -> None:
    ask = Ask(*pair)
    if final == "canceled":
        answer, code = ask.cancel()
        assert code == 0 and answer["result"][0]["state"] == "canceled"
        told = ask.asked.next_event()
        assert told == {
            "event": "task",
            "task": ask.handle,
            "state": "canceled",
            "who": ask.asker.label,
        }
    else:
        ask.move(final, f"it is {final}")
    before = ask.view()
    for state in HARNESS:
        event = {"event": "task", "task": ask.handle, "state": state, "text": "late"}
        assert ask.refused(event) == "task_final", state
    assert ask.refused({"event": "answer", "task": ask.handle, "text": "late"}) == "task_final"
    answer, code = ask.cancel()
    assert (answer["code"], code) == ("task_final", 1)
    assert ask.view() == before


@pytest.mark.parametrize("live", ["working", "input-required"])
def test_a_task_under_way_cannot_be_rejected(pair: tuple[Session, Session], live: str) -> None:
    ask = Ask(*pair)
    ask.move(live)
    event = {"event": "task", "task": ask.handle, "state": "rejected", "text": "no"}
    assert ask.refused(event) == "bad_transition"
    assert ask.view()["state"] == live
    ask.move("failed", "gave up")  # failing is still open to it


def test_malformed_and_foreign_moves_are_refused(mel: Melchior) -> None:
    asker = mel.start()
    asked, bystander = mel.start(asker), mel.start(asker)
    ask = Ask(asker, asked)
    h = ask.handle
    for event, code in [
        ({"event": "task", "task": h, "state": "canceled"}, "bad_args"),  # the asker's alone
        ({"event": "task", "task": h, "state": "submitted"}, "bad_args"),
        ({"event": "task", "task": h, "state": "done"}, "bad_args"),
        ({"event": "task", "task": h}, "bad_args"),
        ({"event": "task", "task": h, "state": "working", "text": 7}, "bad_args"),
        (
            {"event": "task", "task": h, "state": "working", "text": "x" * (MAX_TEXT + 1)},
            "bad_args",
        ),
        ({"event": "task", "task": 5, "state": "working"}, "bad_args"),
        ({"event": "task", "task": h + "0", "state": "working"}, "unknown_task"),
        (
            {"event": "task", "task": "beta-nu@" + h.split("@")[1], "state": "working"},
            "unknown_task",
        ),
    ]:
        assert ask.refused(event) == code, event
    assert ask.view()["state"] == "submitted"
    ask.move("working", "x" * MAX_TEXT)  # text at its bound is taken
    # Only the asker cancels: not the asked session, nor a bystander; a bare id is no handle.
    for session in (asked, bystander):
        answer, _ = session.tool("--verb=cancel", f"--about={h}")
        assert answer["code"] == "unknown_task", answer
    answer, code = asker.tool("--verb=cancel", f"--about={asked.id}")
    assert (answer["code"], code) == ("usage", 2)
    assert ask.view()["state"] == "working"


def test_cancel_by_exec_tells_the_harness(pair: tuple[Session, Session]) -> None:
    ask = Ask(*pair)
    ask.move("input-required", "which one?")
    answer, code = ask.asker.exec_tool("--verb=cancel", f"--about={ask.handle}")
    assert code == 0
    assert answer["result"] == [
        {"task": ask.handle, "state": "canceled", "answer": None, "text": None}
    ]
    told = ask.asked.next_event()
    assert (told["event"], told["state"], told["who"]) == ("task", "canceled", ask.asker.label)
    viewed, code = ask.asker.exec_tool("--verb=task", f"--about={ask.handle}")
    assert code == 0 and viewed["result"][0]["state"] == "canceled"


def test_the_transition_rule_for_moves_the_pipe_cannot_send() -> None:
    """The harness cannot name `submitted` or `canceled` (bad_args on the pipe), so the rule for
    them is checked here; every other move is exercised above on a live session."""
    assert tasks.refusal("working", "submitted") == "bad_transition"
    assert tasks.refusal("submitted", "submitted") == "bad_transition"
    assert tasks.refusal("input-required", "canceled") is None
    assert tasks.refusal("canceled", "canceled") == "task_final"
