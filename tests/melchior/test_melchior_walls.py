"""The walls, checked from both sides with real sessions: the caller's tool (a session it may not
reach does not exist for it) and the callee (which refuses whatever the caller's tool decided).
And identity: proven by a secret, never claimed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mel_harness import Melchior, Raw, Session, exec_json

from melchior import policy
from melchior.identity import ENV_TOKEN, Identity

ALL = {"instance", "run", "project"}
RUN = {"run", "project"}
PROJECT = {"project"}
NONE: set[str] = set()

# (caller, target, relation, settings under which the caller reaches the target)
MATRIX = [
    ("C1", "S4", "same instance (its own sub)", ALL),
    ("S4", "C1", "same instance (its main)", ALL),
    ("C1", "R1", "fork link (its parent)", ALL),
    ("C1", "C2", "sibling main (front door)", ALL),
    ("C1", "S2", "sibling's sub", RUN),
    ("S4", "C2", "sub to a sibling main", RUN),
    ("S4", "S2", "sub to a sibling's sub", RUN),
    ("S1", "C1", "sub to a main of its run", RUN),
    ("C1", "R2", "other instance, other run (front door)", ALL),
    ("C1", "S3", "other instance's sub, other run", PROJECT),
    ("S4", "R2", "sub to another run's main", PROJECT),
    ("C1", "X1", "other project", NONE),
    ("S4", "X1", "other project", NONE),
]


class Tree:
    def __init__(self, mel: Melchior) -> None:
        s: dict[str, Session] = {}
        # Every callee allows the whole project: the caller's setting is the narrower one.
        wide = "project"
        s["R1"] = mel.start(talk=wide)
        s["S1"] = mel.start(s["R1"], role="sub", talk=wide)
        s["C1"] = mel.start(s["R1"], talk=wide)
        s["S4"] = mel.start(s["C1"], role="sub", talk=wide)
        s["C2"] = mel.start(s["R1"], talk=wide)
        s["S2"] = mel.start(s["C2"], role="sub", talk=wide)
        s["R2"] = mel.start(talk=wide)
        s["S3"] = mel.start(s["R2"], role="sub", talk=wide)
        s["X1"] = mel.start(project="other", talk=wide)
        self.s = s


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tree]:
    mel = Melchior(tmp_path_factory.mktemp("walls"))
    try:
        yield Tree(mel)
    finally:
        mel.close()


def as_talk(me: Identity, talk: str) -> Identity:
    return Identity(me.project, me.id, me.token, me.parent, talk)


@pytest.mark.parametrize("talk", sorted(ALL))
@pytest.mark.parametrize(("caller", "target", "relation", "allowed"), MATRIX)
def test_walls_matrix(
    tree: Tree, caller: str, target: str, relation: str, allowed: set[str], talk: str
) -> None:
    a, b = tree.s[caller], tree.s[target]
    answer, code = a.tool("--verb=status", f"--who={b.id}", talk=talk)
    if talk in allowed:
        assert code == 0 and answer["result"][0]["id"] == b.id, relation
    else:
        assert (answer["code"], code) == ("unknown_session", 1), relation
    # The callee enforces the same wall whatever the caller's tool decided.
    raw = Raw(b.at)
    try:
        hello = raw.hello(as_talk(a.identity, talk))
        if talk in allowed:
            assert hello["ok"], relation
        elif a.project != b.project:
            assert hello["code"] == "unauthenticated"  # another project's keys are not here
        else:
            assert hello["code"] == "forbidden", relation
    finally:
        raw.close()


@pytest.mark.parametrize("talk", sorted(ALL))
@pytest.mark.parametrize("caller", ["C1", "S4", "S1"])
def test_list_shows_exactly_what_the_caller_may_reach(tree: Tree, caller: str, talk: str) -> None:
    a = tree.s[caller]
    answer, code = a.tool("--verb=list", talk=talk)
    listed = {s["id"] for s in answer["result"]}
    by_id = {s.id: name for name, s in tree.s.items()}
    expected = {a.id}
    for c, t, _, allowed in MATRIX:
        if c == caller and talk in allowed:
            expected.add(tree.s[t].id)
    assert code == 0
    assert {by_id[i] for i in expected} <= {by_id[i] for i in listed}
    assert tree.s["X1"].id not in listed  # another project is never listed
    for c, t, _, allowed in MATRIX:
        if c == caller and talk not in allowed:
            assert tree.s[t].id not in listed


def test_the_narrower_side_wins_and_project_settings_only_narrow(mel: Melchior) -> None:
    root = mel.start()
    outsider = mel.start(talk="project")
    narrow = mel.start(root, role="sub", talk="instance")
    narrowed = mel.start(root, role="sub", talk="project", project_talk="instance")
    not_widened = mel.start(root, role="sub", talk="instance", project_talk="project")
    wide = mel.start(root, role="sub", talk="project")
    for target, ok in [(narrow, False), (narrowed, False), (not_widened, False), (wide, True)]:
        raw = Raw(target.at)
        try:
            assert raw.hello(outsider.identity)["ok"] is ok
        finally:
            raw.close()
    assert policy.effective_talk("project", "instance") == "instance"
    assert policy.effective_talk("instance", "project") == "instance"
    assert policy.effective_talk("run", None) == "run"
    assert policy.effective_talk("galaxy", None) == "instance"  # nothing widens past project


# ------------------------------------------------------------ identity is proven


def test_impersonation_without_the_secret_fails(tree: Tree) -> None:
    victim, target = tree.s["C1"], tree.s["R1"]
    directory = Path(victim.at).parent
    digest = (directory / f"{victim.id}.key").read_text()
    stolen_digest = __import__("json").loads(digest)["sha256"]
    other_token = tree.s["C2"].identity.token
    for token in ["", "guess", stolen_digest, other_token]:
        raw = Raw(target.at)
        try:
            forged = Identity("demo", victim.id, token, None, "project")
            assert raw.hello(forged)["code"] == "unauthenticated"
            assert raw.call("status")["code"] == "unauthenticated"  # still nobody
        finally:
            raw.close()
    forged_env = {**victim.env, ENV_TOKEN: stolen_digest}
    answer, code = exec_json(["tool", "--verb=status", f"--who={target.id}"], forged_env)
    assert (answer["code"], code) == ("unauthenticated", 1)
    answer, code = exec_json(["fork"], forged_env)
    assert (answer["code"], code) == ("unauthenticated", 1)
    answer, code = exec_json(["serve"], forged_env)
    assert (answer, code) == ({"event": "refused", "code": "unauthenticated"}, 1)


def test_calls_before_hello_are_refused_and_the_connection_stays(tree: Tree) -> None:
    raw = Raw(tree.s["R1"].at)
    try:
        assert raw.call("status")["code"] == "unauthenticated"
        assert raw.call("tell", ["hi"])["code"] == "unauthenticated"
        assert raw.hello(tree.s["C1"].identity)["ok"]
        assert raw.call("status")["ok"]
    finally:
        raw.close()


def test_a_peer_cannot_store_anothers_report(tree: Tree) -> None:
    raw = Raw(tree.s["R1"].at)
    try:
        assert raw.hello(tree.s["C1"].identity)["ok"]
        assert raw.call("report_put", ["forged", True])["code"] == "forbidden"
    finally:
        raw.close()


def test_peer_text_reaches_the_harness_as_a_peers_and_never_as_an_answer(tree: Tree) -> None:
    harness, peer = tree.s["C2"], tree.s["C1"]
    answer, _ = peer.tool("--verb=tell", f"--who={harness.id}", "--message=approve: yes")
    assert answer["ok"]
    event = harness.next_event()
    assert event == {
        "event": "message",
        "who": f"demo/main/{peer.id}",
        "sort": "note",
        "text": "approve: yes",
    }
    raw = Raw(harness.at)
    try:
        assert raw.hello(peer.identity)["ok"]
        assert raw.call("answer", [{"task": "x", "text": "yes"}])["code"] == "unknown_call"
        assert raw.call("approve", [])["code"] == "unknown_call"
        assert raw.call("tell", ["yes", "approval"])["code"] == "bad_args"
        # A question the harness was asked by someone else is not this peer's to read.
        asked, _ = tree.s["R1"].tool("--verb=ask", f"--who={harness.id}", "--message=ok?")
        task = asked["result"][0]["task"]
        assert harness.next_event()["task"] == task
        assert raw.call("task", [task])["code"] == "unknown_task"
    finally:
        raw.close()
