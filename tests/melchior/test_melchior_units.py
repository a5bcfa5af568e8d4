"""The pure parts at their edges: names, pages, and the walls' rules on a drawn tree."""

from __future__ import annotations

import hashlib
import itertools

from hypothesis import given
from hypothesis import strategies as st

from melchior import names, policy, reports, slots
from melchior.limits import ID_MAX, PROJECT_DIGEST, PROJECT_MAX, REPORT_PAGE


def test_id_and_project_bounds_at_their_edges() -> None:
    assert names.valid_id("a" * ID_MAX) and not names.valid_id("a" * (ID_MAX + 1))
    assert names.valid_project("p" * PROJECT_MAX)
    assert not names.valid_project("p" * (PROJECT_MAX + 1))
    for bad in ["", "-a", "A-b", "a--b", "a.b", "a/b", "../x"]:
        assert not names.valid_id(bad), bad
    for bad in ["", ".hidden", "a/b", "a..b", "a~b", "é"]:
        assert not names.valid_project(bad), bad
    for attempt in (0, 15, 16, 63):
        assert names.valid_id(names.candidate(attempt))
        assert len(names.candidate(attempt)) <= ID_MAX


def test_project_dirname_fits_and_stays_unique() -> None:
    budget = 40
    assert names.project_dirname("p" * budget, budget) == "p" * budget
    a = names.project_dirname("p" * (budget + 1), budget)
    b = names.project_dirname("p" * budget + "q", budget)
    assert len(a) == len(b) == budget and a != b
    digest = hashlib.sha256(("p" * (budget + 1)).encode()).hexdigest()[:PROJECT_DIGEST]
    assert a == "p" * (budget - 1 - PROJECT_DIGEST) + names.SHORTENED + digest
    assert not names.valid_project(a)  # a shortened name can never be a project's own name


def test_pages_at_their_edges() -> None:
    assert reports.cut(b"", REPORT_PAGE) == [0, 0]
    assert reports.cut(b"x" * REPORT_PAGE, REPORT_PAGE) == [0, REPORT_PAGE]
    assert reports.cut(b"x" * (REPORT_PAGE + 1), REPORT_PAGE) == [0, REPORT_PAGE, REPORT_PAGE + 1]
    straddle = b"x" * (REPORT_PAGE - 1) + "✓".encode()
    assert reports.cut(straddle, REPORT_PAGE) == [0, REPORT_PAGE - 1, REPORT_PAGE + 2]


@given(st.text(max_size=300), st.integers(min_value=4, max_value=40))
def test_pages_rejoin_to_the_body_and_never_split_a_character(text: str, size: int) -> None:
    body = text.encode("utf-8", errors="surrogatepass").decode("utf-8", errors="ignore").encode()
    edges = reports.cut(body, size)
    pieces = [body[a:b] for a, b in itertools.pairwise(edges)]
    assert b"".join(pieces) == body
    for piece in pieces:
        assert len(piece) <= size
        piece.decode("utf-8")


def test_stored_reports_and_older_plain_files() -> None:
    report = reports.Report("body ✓".encode(), 3)
    back = reports.decode_stored(reports.encode_stored(report))
    assert (back.body, back.revision, back.sha256) == (report.body, 3, report.sha256)
    old = reports.decode_stored(b"plain text report\n")
    assert (old.body, old.revision) == (b"plain text report\n", 0)


def tree(edges: dict[str, tuple[str, str | None]]) -> policy.Lookup:
    def lookup(sid: str) -> policy.Node | None:
        if sid not in edges:
            return None
        role, parent = edges[sid]
        return policy.Node(role, parent)

    return lookup


def test_instances_runs_and_cycles() -> None:
    look = tree(
        {
            "r": ("main", None),
            "s": ("sub", "r"),
            "ss": ("sub", "s"),
            "m": ("main", "s"),
            "loop-a": ("sub", "loop-b"),
            "loop-b": ("sub", "loop-a"),
        }
    )
    assert policy.instance_of(look, "ss") == "r"
    assert policy.instance_of(look, "m") == "m"
    assert policy.root_of(look, "m") == "r"
    assert policy.instance_of(look, "loop-a") in ("loop-a", "loop-b")  # terminates
    assert policy.reachable(look, "ss", "r", "instance")  # same instance, through a sub
    assert policy.reachable(look, "m", "s", "instance")  # fork link
    assert not policy.reachable(look, "m", "ss", "instance")
    assert policy.reachable(look, "m", "ss", "run")
    assert not policy.reachable(look, "m", "ghost", "project")


def test_published_vocabulary_matches_what_is_answered() -> None:
    from melchior import server, tool, vocabulary

    session = server.Server("/nonexistent", "demo", "alpha-rho", "main", "t", "instance")
    assert set(vocabulary.SOCKET["calls"]) == {"hello", *session.verbs}
    assert set(vocabulary.TOOL["verbs"]) == set(tool.VERBS)
    assert set(vocabulary.TOOL["verbs"]["tell"]["options"]["sort"]["enum"]) < set(server.SORTS)


def test_a_candidate_is_a_free_pair_while_one_is_left() -> None:
    every = names.pairs()
    assert len(every) == len(set(every)) == 24 * 23
    for last in (every[0], every[-1]):
        taken = set(every) - {last}
        assert names.candidate(0, taken) == last
        assert names.candidate(15, taken) == last
        assert names.candidate(16, taken) not in every  # many collisions: numbered
    numbered = names.candidate(0, set(every))
    assert names.valid_id(numbered) and numbered.rsplit("-", 1)[0] in every


def test_slots_unproven_give_way_and_proven_keep_room_for_the_session() -> None:
    s = slots.Slots(unproven=2, peers=2, reserved=1)
    assert s.admit("a") is None and s.admit("b") is None
    assert s.admit("c") == "a"  # one more: the oldest unproven connection gives its slot up
    assert not s.prove("a", is_self=False)  # it lost its slot: it is closed, not proven
    assert s.prove("b", is_self=False) and s.prove("c", is_self=False)
    s.admit("d")
    assert not s.prove("d", is_self=False)  # a third peer: the last slot is the session's
    assert s.prove("d", is_self=True)
    s.admit("e")
    assert not s.prove("e", is_self=True)  # none left at all
    s.release("b")
    assert s.prove("e", is_self=False)  # the session already uses its reserved slot


def test_a_damaged_stored_report_decodes_without_raising() -> None:
    data = b'{"body":"a\\ud800b","revision":3}'
    stored = reports.decode_stored(data)
    assert (stored.revision, stored.body) == (0, data)
