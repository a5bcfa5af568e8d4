"""An id is minted again once its session is gone; its fork link is not. A root forks P, P forks
a sub S, P ends while S runs, and `melchior fork` hands out P's id again: the new holder is no
parent of S (the link is bound to the digest of P's secret), over the real CLI and sockets."""

from __future__ import annotations

from pathlib import Path

import pytest
from mel_harness import Melchior, Raw, Session, exec_json

from melchior import names
from melchior.identity import ENV_TALK


def heir_of(mel: Melchior, root: Session, gone: Session, talk: str | None = None) -> Session:
    """Fork under `root` (the real `melchior fork`) with every other word pair holding a stored
    report, so the one id it can hand out is the ended session's, and start it."""
    state = Path(mel.state())
    for pair in names.pairs():
        if pair != gone.id:
            (state / f"{pair}.report").write_bytes(b"")
    spec, code = exec_json(["fork"], root.env)
    assert code == 0 and spec["id"] == gone.id
    env = {**mel.env, ENV_TALK: talk} if talk else mel.env
    heir = Session(spec, env)
    mel.sessions.append(heir)
    return heir


@pytest.fixture
def tree(mel: Melchior) -> tuple[Session, Session, Session]:
    """(root, P, S), with P already ended and S still running."""
    root = mel.start(talk="project")
    parent = mel.start(root, talk="project")
    sub = mel.start(parent, role="sub", talk="project")
    assert parent.close() == 0
    return root, parent, sub


def test_the_heir_of_an_id_cannot_reach_or_end_its_predecessors_sub(
    mel: Melchior, tree: tuple[Session, Session, Session]
) -> None:
    root, parent, sub = tree
    heir = heir_of(mel, root, parent)
    for verb in ("--verb=status", "--verb=end"):
        answer, code = heir.exec_tool(verb, f"--who={sub.id}")
        assert (answer["code"], code) == ("unknown_session", 1), verb
    answer, code = heir.exec_tool("--verb=task", f"--about={sub.id}")
    assert (answer["code"], code) == ("bad_args", 1)  # not a child of the heir
    listed, _ = heir.exec_tool("--verb=list")
    assert sub.id not in {s["id"] for s in listed["result"]}
    raw = Raw(sub.at)
    try:
        assert raw.hello(heir.identity)["code"] == "forbidden"  # the callee checks too
    finally:
        raw.close()
    assert sub.proc.poll() is None


def test_walls_opened_by_talk_still_leave_end_to_the_minter_and_reports_to_the_child(
    mel: Melchior, tree: tuple[Session, Session, Session]
) -> None:
    root, parent, sub = tree
    heir = heir_of(mel, root, parent, talk="project")
    answer, code = heir.exec_tool("--verb=status", f"--who={sub.id}")
    assert code == 0 and answer["result"][0]["parent"] is None  # talk = project opens it
    answer, code = heir.exec_tool("--verb=end", f"--who={sub.id}")
    assert (answer["code"], code) == ("not_minter", 1)
    raw = Raw(heir.at)
    try:
        assert raw.hello(sub.identity)["ok"]
        note = raw.call("tell", ["done", "report", {"revision": 1}])
        assert note["code"] == "forbidden"  # the sub's report is not the heir's to hear
        assert raw.call("tell", ["hello", "note"])["ok"]
        assert heir.next_event()["text"] == "hello"
    finally:
        raw.close()
    assert sub.proc.poll() is None
