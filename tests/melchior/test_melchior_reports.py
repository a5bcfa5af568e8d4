"""Stored reports outlive their session and the runtime directory: they are kept in the per-user
state directory, 0700 directories and 0600 files, and once the session is gone only its parent
(or itself), proving its secret, reads them."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

from mel_harness import Melchior, Session, exec_json

from melchior import identity, names, registry, reports
from melchior.identity import ENV_ID, ENV_PARENT, ENV_PROJECT, ENV_TOKEN
from melchior.limits import PROJECT_MAX, REPORT_PAGE


def mode(path: str) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def end(session: Session) -> None:
    """Close the session's pipe, as its harness going away would, and wait for it to go."""
    assert session.close() == 0
    assert not os.path.lexists(session.at)


def logout(mel: Melchior) -> None:
    """The runtime directory is removed whole and made again empty, as at a new login."""
    shutil.rmtree(mel.run)
    os.mkdir(mel.run, 0o700)


def test_a_report_outlives_its_session_and_the_runtime_dir(mel: Melchior) -> None:
    parent = mel.start()
    child = mel.start(parent, role="sub")
    body = ("a finished piece of work ✓\n" * 12000).encode()
    assert len(body) > REPORT_PAGE  # more than one page
    stored, code = child.exec_tool("--verb=report", "--about=-", stdin=body)
    assert code == 0, stored
    digest = hashlib.sha256(body).hexdigest()
    assert parent.next_event()["sha256"] == digest

    home = Path(mel.env["HOME"]) / ".local" / "state" / "melchior"
    path = home / "demo" / f"{child.id}.report"
    assert str(path) == os.path.join(mel.state(), f"{child.id}.report")
    assert (mode(str(home)), mode(str(home / "demo")), mode(str(path))) == (0o700, 0o700, 0o600)
    assert [e for e in os.listdir(home / "demo") if e.startswith(".")] == []  # no temp left

    end(child)
    end(parent)
    logout(mel)
    assert path.exists()

    # Its parent reads it, whole and by the page, with revision and digest; so does the child.
    whole, code = exec_json(
        ["tool", "--verb=report", f"--who={child.id}", "--about=json"], parent.env
    )
    assert code == 0, whole
    assert whole["result"] == [{"body": body.decode(), "revision": 1, "sha256": digest}]
    page, code = exec_json(["tool", "--verb=report", f"--who={child.id}", "--page=1"], parent.env)
    assert code == 0
    head = page["result"][0]
    assert (head["page"], head["revision"], head["sha256"], head["bytes"]) == (
        1,
        1,
        digest,
        len(body),
    )
    edges = reports.boundaries(body)
    assert head["text"].encode() == body[edges[1] : edges[2]]
    mine, _ = child.tool("--verb=report", "--about=json")
    assert mine["result"][0]["sha256"] == digest
    # Past the last page is still a bad argument, as it is live.
    past, _ = parent.tool("--verb=report", f"--who={child.id}", f"--page={head['pages']}")
    assert past["code"] == "bad_args"


def test_a_finished_report_is_refused_outside_the_walls(mel: Melchior) -> None:
    parent = mel.start(talk="project")
    child = mel.start(parent, role="sub", talk="project")
    sibling = mel.start(parent)
    stranger = mel.start()
    elsewhere = mel.start(project="other")
    assert child.tool("--verb=report", "--message=done")[1] == 0
    # Live, the walls decide: a stranger's main does not reach another instance's sub.
    assert stranger.tool("--verb=report", f"--who={child.id}")[0]["code"] == "unknown_session"
    assert sibling.tool("--verb=report", f"--who={child.id}", talk="run")[1] == 0
    end(child)

    assert parent.tool("--verb=report", f"--who={child.id}")[1] == 0
    # Once it is gone, only the fork link reads it: not a stranger, nor a sibling that could
    # while it lived, nor another project, nor the parent's id without the parent's secret.
    forged = {**parent.env, ENV_TOKEN: "not-the-secret"}
    for env in (stranger.env, sibling.env, elsewhere.env, forged):
        answer, code = exec_json(["tool", "--verb=report", f"--who={child.id}"], env)
        assert (answer["code"], code) == ("unknown_session", 1)
    answer, _ = sibling.tool("--verb=report", f"--who={child.id}", "--about=json", talk="run")
    assert answer["code"] == "unknown_session"


def test_a_reused_id_does_not_take_over_a_finished_report(mel: Melchior) -> None:
    parent = mel.start()
    child = mel.start(parent)
    assert child.tool("--verb=report", "--message=the old one")[1] == 0
    old_id = child.id
    end(child)
    # Fork never hands out an id that has a stored report...
    assert old_id in registry.reported(mel.directory(), mel.env)
    # ...and a session that gets one anyway (its key written by hand) sees only its own reports.
    token = "a-new-secret"
    key = {"sha256": registry.digest(token), "role": "main", "minter": parent.id}
    with open(os.path.join(mel.directory(), f"{old_id}.key"), "x", encoding="utf-8") as f:
        json.dump(key, f)
    env = {ENV_PROJECT: "demo", ENV_ID: old_id, ENV_TOKEN: token, ENV_PARENT: parent.id}
    spec = {"id": old_id, "project": "demo", "environment": env}
    again = Session(spec, mel.env)
    mel.sessions.append(again)
    assert parent.tool("--verb=report", f"--who={old_id}")[0]["code"] == "no_report"
    stored, _ = again.tool("--verb=report", "--message=the new one")
    assert stored["result"][0]["revision"] == 1


def test_fork_skips_ids_with_a_stored_report(mel: Melchior) -> None:
    state = mel.state()
    pairs = [f"{a}-{b}" for a in names.WORDS for b in names.WORDS if a != b]
    for sid in pairs:
        Path(state, f"{sid}.report").write_bytes(b"")
    spec = identity.fork(mel.env, "main", "demo")
    assert spec["id"] not in pairs and names.valid_id(spec["id"])


def test_older_plain_text_report_in_the_state_dir_is_read_live_only(mel: Melchior) -> None:
    parent = mel.start()
    child = mel.start(parent)
    Path(mel.state(), f"{child.id}.report").write_text("plain old text\n", encoding="utf-8")
    answer, _ = parent.tool("--verb=report", f"--who={child.id}", "--about=json")
    assert answer["result"][0]["body"] == "plain old text\n"
    assert answer["result"][0]["revision"] == 0
    end(child)
    # It records no owner, so nothing proves who may read it once the session is gone.
    assert parent.tool("--verb=report", f"--who={child.id}")[0]["code"] == "unknown_session"


def test_xdg_state_home_is_used_and_checked(mel: Melchior, tmp_path: Path) -> None:
    state_home = tmp_path / "state"
    mel.env["XDG_STATE_HOME"] = str(state_home)
    child = mel.start(mel.start())
    assert child.tool("--verb=report", "--message=here")[1] == 0
    assert (state_home / "melchior" / "demo" / f"{child.id}.report").exists()
    os.chmod(state_home, 0o770)  # others could swap our directory: refused
    assert child.tool("--verb=report", "--message=again")[0]["code"] == "unsafe_dir"
    os.chmod(state_home, 0o700)
    os.chmod(state_home / "melchior", 0o755)
    assert child.tool("--verb=report", "--message=again")[0]["code"] == "unsafe_dir"
    os.chmod(state_home / "melchior", 0o700)
    shutil.rmtree(state_home / "melchior" / "demo")
    os.symlink(tmp_path, state_home / "melchior" / "demo")
    assert child.tool("--verb=report", "--message=again")[0]["code"] == "unsafe_dir"


def test_a_long_project_has_the_same_name_in_both_directories(mel: Melchior) -> None:
    project = "p" * PROJECT_MAX  # longer than any sun_path budget: shortened
    child = mel.start(mel.start(project=project))
    assert child.tool("--verb=report", "--message=long")[1] == 0
    runtime = os.path.basename(os.path.dirname(child.at))
    assert names.SHORTENED in runtime
    assert os.path.basename(mel.state(project)) == runtime
    assert os.path.exists(os.path.join(mel.state(project), f"{child.id}.report"))
