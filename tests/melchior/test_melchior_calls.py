"""Calls on a live session: bad input answered with refusals while the session stays up, every
bound at its edge, concurrent asks, the harness's status on the pipe, and large reports."""

from __future__ import annotations

import hashlib
import json
import os
import queue
import struct
import threading
from typing import Any

import pytest
from mel_harness import Melchior, Raw, Session, wait_until

from melchior import wire
from melchior.limits import (
    FAMILY,
    MAX_FRAME,
    MAX_REPORT,
    MAX_TASKS,
    MAX_TEXT,
    REPORT_PAGE,
)


@pytest.fixture
def pair(mel: Melchior) -> tuple[Session, Session]:
    parent = mel.start()
    return parent, mel.start(parent)


def test_bad_input_is_refused_and_the_session_stays_up(pair: tuple[Session, Session]) -> None:
    parent, child = pair
    raw = Raw(child.at)
    try:
        head = b'{"args":["'
        at = (
            head
            + b"x" * (MAX_FRAME - len(head) - len(b'"],"call":"status"}'))
            + b'"],"call":"status"}'
        )
        assert len(at) == MAX_FRAME
        raw.send(struct.pack(">I", len(at)) + at)
        assert raw.read()["code"] == "unauthenticated"  # read whole, then judged as a call
        over = b"x" * (MAX_FRAME + 1)
        raw.send(struct.pack(">I", len(over)) + over)
        assert raw.read()["code"] == "frame_too_large"
        for body, code in [
            (b'{"call":', "bad_json"),
            (b"\xff\xfe", "bad_json"),
            (b'{"call":"status","args":[],"family":%d}' % (FAMILY + 1), "unknown_family"),
            (b'{"type":"call","call":"status","args":[]}', "bad_tag"),
            (b'{"kind":"status"}', "bad_tag"),
            (b'{"event":"doing","busy":true}', "bad_shape"),
            (b"[]", "bad_shape"),
        ]:
            raw.send(struct.pack(">I", len(body)) + body)
            answer = raw.read()
            assert answer == wire.refusal(code)
        assert raw.call("fly")["code"] == "unknown_call"
        # Still in step on the same connection, and still answering others.
        assert raw.hello(parent.identity)["ok"]
        assert raw.call("status")["ok"]
    finally:
        raw.close()
    answer, code = parent.tool("--verb=status", f"--who={child.id}")
    assert code == 0 and answer["result"][0]["id"] == child.id


def test_text_bound_at_its_edge(pair: tuple[Session, Session]) -> None:
    parent, child = pair
    raw = Raw(child.at)
    try:
        assert raw.hello(parent.identity)["ok"]
        assert raw.call("tell", ["é" * (MAX_TEXT // 2)])["ok"]
        assert child.next_event()["text"] == "é" * (MAX_TEXT // 2)
        assert raw.call("tell", ["a" * (MAX_TEXT + 1)])["code"] == "bad_args"
        assert raw.call("ask", ["a" * (MAX_TEXT + 1)])["code"] == "bad_args"
    finally:
        raw.close()


def test_the_harness_status_is_what_status_answers(pair: tuple[Session, Session]) -> None:
    parent, child = pair
    child.send({"event": "doing", "busy": True, "working_for": 7, "waiting": 2, "later": 1})
    child.send({"event": "doing", "busy": "yes"})
    assert child.next_event() == {"event": "refused", "code": "bad_args"}
    child.send({"type": "doing"})
    assert child.next_event() == {"event": "refused", "code": "bad_tag"}
    answer, _ = parent.tool("--verb=status", f"--who={child.id}")
    state = answer["result"][0]
    assert (state["busy"], state["working_for"], state["waiting"]) == (True, 7, 2)
    # `task` with a known child's bare id is that child's status, through the same walls.
    answer, _ = parent.tool("--verb=task", f"--about={child.id}")
    assert answer["result"][0]["busy"] is True
    answer, _ = child.tool("--verb=task", f"--about={parent.id}")
    assert answer["code"] == "bad_args"  # a parent is not a known child: not a task handle


def test_concurrent_asks_each_get_their_own_answer(mel: Melchior) -> None:
    harness = mel.start()
    askers = [mel.start(harness) for _ in range(2)]
    stop = threading.Event()

    def answer_questions() -> None:
        while not stop.is_set():
            try:
                event = harness.next_event(timeout=0.2)
            except queue.Empty:
                continue
            if event.get("sort") == "question":
                harness.send(
                    {"event": "answer", "task": event["task"], "text": event["text"][::-1]}
                )

    answerer = threading.Thread(target=answer_questions)
    answerer.start()
    results: list[tuple[str, str, Any]] = []
    lock = threading.Lock()

    def ask(asker: Session, n: int) -> None:
        raw = Raw(harness.at)
        try:
            assert raw.hello(asker.identity)["ok"]
            task = raw.call("ask", [f"question {n}"])["result"][0]["task"]
            for _ in range(500):
                view = raw.call("task", [task])["result"][0]
                if view["state"] == "completed":
                    break
                stop.wait(0.01)
            with lock:
                results.append((f"question {n}", task, view))
        finally:
            raw.close()

    threads = [threading.Thread(target=ask, args=(askers[n % 2], n)) for n in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    answerer.join()
    assert len(results) == 24 and len({task for _, task, _ in results}) == 24
    for question, _, view in results:
        answer = question[::-1]
        assert view == {
            "task": view["task"],
            "state": "completed",
            "answer": answer,
            "text": answer,
        }


def test_open_asks_bound_at_its_edge(pair: tuple[Session, Session]) -> None:
    parent, child = pair
    raw = Raw(child.at)
    try:
        assert raw.hello(parent.identity)["ok"]
        handles = []
        for n in range(MAX_TASKS):
            taken = raw.call("ask", [str(n)])["result"][0]
            assert taken["state"] == "submitted", n
            handles.append(taken["task"])
        # One more is answered, not dropped: a task the session did not take.
        full = raw.call("ask", ["one more"])
        assert full["ok"] and full["result"] == [
            {"task": None, "state": "rejected", "code": "too_busy"}
        ]
        # A finished task makes room; a live one, moved on but not finished, does not.
        child.send({"event": "task", "task": handles[0], "state": "working"})
        assert raw.call("ask", ["still full"])["result"][0]["state"] == "rejected"
        child.send({"event": "task", "task": handles[0], "state": "failed"})
        wait_until(lambda: raw.call("task", [handles[0]])["result"][0]["state"] == "failed")
        assert raw.call("ask", ["now there is room"])["result"][0]["state"] == "submitted"
        assert raw.call("task", [handles[0]])["code"] == "unknown_task"  # dropped to make room
    finally:
        raw.close()


def test_a_10_mib_report_round_trip(pair: tuple[Session, Session]) -> None:
    parent, child = pair
    line = "report line ✓ with some text, and a control char \x01\n"
    body = (line * (10 * (1 << 20) // len(line.encode()) + 1)).encode()[: 10 << 20]
    body = body.decode("utf-8", errors="ignore").encode()
    stored, code = child.exec_tool("--verb=report", "--about=-", stdin=body)
    assert code == 0, stored
    summary = stored["result"][0]
    digest = hashlib.sha256(body).hexdigest()
    assert (summary["revision"], summary["sha256"], summary["bytes"]) == (1, digest, len(body))
    assert summary["pages"] >= len(body) // REPORT_PAGE > 1
    note = parent.next_event()
    assert (note["event"], note["sort"], note["who"]) == ("message", "report", child.label)
    assert (note["revision"], note["sha256"]) == (1, digest)
    whole, code = parent.tool("--verb=report", f"--who={child.id}", "--about=json")
    assert code == 0
    assert whole["result"] == [{"body": body.decode(), "revision": 1, "sha256": digest}]
    raw = Raw(child.at)
    try:
        assert raw.hello(parent.identity)["ok"]
        assert raw.call("report", [1, 99])["code"] == "changed"  # pinned to a revision
        assert raw.call("report", [summary["pages"]])["code"] == "bad_args"  # past the end
    finally:
        raw.close()
    page, _ = parent.tool("--verb=report", f"--who={child.id}", "--page=1")
    assert page["result"][0]["page"] == 1 and len(page["result"][0]["text"].encode()) <= REPORT_PAGE
    # The same text on another turn is a new revision, and the parent hears of each.
    for revision in (2, 3):
        again, _ = child.tool("--verb=report", "--message=same")
        assert again["result"][0]["revision"] == revision
        assert parent.next_event()["revision"] == revision


def test_report_bound_at_its_edge(pair: tuple[Session, Session]) -> None:
    _, child = pair
    answer, code = child.tool("--verb=report", "--about=-", stdin=b"r" * MAX_REPORT)
    assert code == 0 and answer["result"][0]["bytes"] == MAX_REPORT
    answer, code = child.tool("--verb=report", "--about=-", stdin=b"r" * (MAX_REPORT + 1))
    assert (answer["code"], code) == ("report_too_large", 1)
    answer, _ = child.tool("--verb=report", "--about=-", stdin=b"\xff not utf-8")
    assert answer["code"] == "bad_args"


def test_older_plain_text_reports_remain_readable(mel: Melchior) -> None:
    parent = mel.start()
    child = mel.start(parent)
    answer, _ = parent.tool("--verb=report", f"--who={child.id}")
    assert answer["code"] == "no_report"
    with open(child.at + ".report", "w", encoding="utf-8") as f:
        f.write("an old plain report\n")
    answer, _ = parent.tool("--verb=report", f"--who={child.id}", "--about=json")
    assert answer["result"] == [
        {
            "body": "an old plain report\n",
            "revision": 0,
            "sha256": hashlib.sha256(b"an old plain report\n").hexdigest(),
        }
    ]
    stored, _ = child.tool("--verb=report", "--message=new")
    assert stored["result"][0]["revision"] == 1
    # A new report goes to the state directory, not beside the socket.
    with open(os.path.join(mel.state(), child.id + ".report"), "rb") as f:
        assert json.loads(f.read())["body"] == "new"
    answer, _ = parent.tool("--verb=report", f"--who={child.id}")
    assert answer["result"][0]["text"] == "new"
