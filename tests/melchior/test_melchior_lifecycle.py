"""A session's life: forked, served, reached, ended; and nothing left behind when it goes,
however it goes (its pipe closes, its minter ends it, it is SIGKILLed)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from mel_harness import MELCHIOR, Melchior, Session, exec_json

from melchior import client, registry
from melchior.identity import ENV_ID, ENV_PARENT, ENV_PROJECT, ENV_TOKEN
from melchior.limits import ID_MAX, SUN_PATH_MAX


def files_of(directory: str, sid: str) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n == sid or n.startswith(sid + "."))


def test_fork_prints_the_spec_and_stores_only_a_digest(mel: Melchior) -> None:
    root = mel.start()
    spec, code = exec_json(["fork", "--role=sub"], root.env)
    assert code == 0
    assert spec["project"] == "demo" and spec["parent"] == root.id and spec["role"] == "sub"
    assert spec["environment"] == {
        ENV_PROJECT: "demo",
        ENV_ID: spec["id"],
        ENV_PARENT: root.id,
        ENV_TOKEN: spec["token"],
    }
    key = Path(mel.directory(), f"{spec['id']}.key")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert spec["token"] not in key.read_text()
    assert registry.verify(mel.directory(), spec["id"], spec["token"]) is not None


def test_serve_is_a_child_that_dies_with_its_pipe(mel: Melchior) -> None:
    root = mel.start()
    child = mel.start(root, role="sub")
    directory = mel.directory()
    assert child.at == os.path.join(directory, child.id)
    # The note that makes the tree readable, written by the child as it came up.
    assert Path(directory, f"{child.id}.parent").read_text() == root.id
    assert stat.S_ISSOCK(os.lstat(child.at).st_mode)
    assert child.close() == 0
    assert files_of(directory, child.id) == []
    answer, code = root.tool("--verb=status", f"--who={child.id}")
    assert (answer["code"], code) == ("unknown_session", 1)
    assert root.close() == 0 and files_of(directory, root.id) == []


def test_only_the_minter_ends_a_session(mel: Melchior) -> None:
    root = mel.start()
    child = mel.start(root)
    sibling = mel.start(root)
    answer, _ = sibling.tool("--verb=end", f"--who={child.id}")
    assert answer["code"] == "not_minter"
    answer, _ = child.tool("--verb=end", f"--who={root.id}")
    assert answer["code"] == "not_minter"  # a root was minted by nobody: nobody ends it
    answer, code = root.exec_tool("--verb=end", f"--who={child.id}")
    assert code == 0 and answer["result"] == [{"ending": f"demo/main/{child.id}"}]
    assert child.next_event() == {"event": "ended", "by": f"demo/main/{root.id}"}
    assert child.proc.wait(timeout=10) == 0
    assert files_of(mel.directory(), child.id) == []


def test_sigkilled_session_is_reaped_on_first_call(mel: Melchior) -> None:
    root = mel.start()
    victim = mel.start(root)
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait(timeout=10)
    directory = mel.directory()
    assert os.path.exists(victim.at)  # a socket file outlives its process
    answer, code = root.tool("--verb=status", f"--who={victim.id}")
    assert (answer["code"], code) == ("gone", 1)
    assert files_of(directory, victim.id) == []
    answer, _ = root.tool("--verb=status", f"--who={victim.id}")
    assert answer["code"] == "unknown_session"


def test_listing_reaps_the_dead_and_keeps_the_living(mel: Melchior) -> None:
    root = mel.start()
    dead, alive = mel.start(root), mel.start(root)
    dead.proc.send_signal(signal.SIGKILL)
    dead.proc.wait(timeout=10)
    answer, _ = root.tool("--verb=list")
    assert {s["id"] for s in answer["result"]} == {root.id, alive.id}
    assert files_of(mel.directory(), dead.id) == []


def test_reaping_races_remove_once_and_never_a_live_socket(mel: Melchior) -> None:
    root = mel.start()
    victim = mel.start(root)
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait(timeout=10)
    directory = mel.directory()
    results: list[bool] = []
    threads = [
        threading.Thread(target=lambda: results.append(registry.reap(directory, victim.id)))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True]
    assert registry.reap(directory, root.id) is False
    assert registry.probe(os.path.join(directory, root.id)) == "live"


def test_a_second_serve_of_a_live_identity_is_refused(mel: Melchior) -> None:
    root = mel.start()
    events, code = exec_json(["serve"], root.env)
    assert (events, code) == ({"event": "refused", "code": "in_use"}, 1)
    assert registry.probe(root.at) == "live"


def test_unstarted_children_do_not_outlive_their_minter(mel: Melchior) -> None:
    root = mel.start()
    spec = mel.fork(root)
    key = Path(mel.directory(), f"{spec['id']}.key")
    assert key.exists()
    root.close()
    assert not key.exists()


def test_ids_are_unique_past_the_word_pairs(mel: Melchior) -> None:
    directory = mel.directory()
    ids: list[str] = []
    lock = threading.Lock()

    def mint(n: int) -> None:
        for _ in range(n):
            sid = registry.mint(directory, "main", None, "t")
            with lock:
                ids.append(sid)

    threads = [threading.Thread(target=mint, args=(150,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == len(set(ids)) == 600  # more than the 552 word pairs
    assert all(len(i) <= ID_MAX for i in ids)


def test_long_project_names_are_shortened_uniquely_within_sun_path(mel: Melchior) -> None:
    long_a, long_b = "p" * 120 + "-a", "p" * 120 + "-b"
    a = mel.start(project=long_a)
    b = mel.start(project=long_b)
    assert os.path.dirname(a.at) != os.path.dirname(b.at)
    for s in (a, b):
        assert len(os.fsencode(s.at)) <= SUN_PATH_MAX
        assert "~" in os.path.basename(os.path.dirname(s.at))
    answer, _ = a.tool("--verb=list")
    assert [s["id"] for s in answer["result"]] == [a.id]


def test_a_runtime_dir_too_deep_for_sun_path_is_refused(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True, mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(deep)}
    answer, code = exec_json(["fork", "--project=demo"], env)
    assert (answer["code"], code) == ("path_too_long", 1)


def test_without_xdg_a_private_dir_is_made_and_verified() -> None:
    short = Path(tempfile.mkdtemp(prefix="mel-", dir="/tmp"))
    try:
        env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
        env["TMPDIR"] = str(short)
        spec, code = exec_json(["fork", "--project=demo"], env)
        base = short / f"melchior-{os.getuid()}"
        assert code == 0 and spec["id"]
        assert stat.S_IMODE(base.stat().st_mode) == 0o700
        base.chmod(0o755)
        answer, code = exec_json(["fork", "--project=demo"], env)
        assert (answer["code"], code) == ("unsafe_dir", 1)
    finally:
        shutil.rmtree(short)


def test_an_open_xdg_runtime_dir_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    run.chmod(0o755)
    answer, code = exec_json(
        ["fork", "--project=demo"], {**os.environ, "XDG_RUNTIME_DIR": str(run)}
    )
    assert (answer["code"], code) == ("unsafe_dir", 1)


def test_cli_surface(mel: Melchior) -> None:
    verbs, code = exec_json(["verbs"], mel.env)
    assert code == 0 and {
        "hello",
        "status",
        "tell",
        "ask",
        "task",
        "cancel",
        "report",
        "end",
    } <= set(verbs["calls"])
    described, code = exec_json(["tool", "--describe"], mel.env)
    assert code == 0 and set(described["result"][0]["verbs"]) == {
        "list",
        "status",
        "tell",
        "ask",
        "task",
        "cancel",
        "report",
        "end",
    }
    answer, code = exec_json(["tool", "--verb=status"], mel.env)
    assert (answer["code"], code) == ("no_identity", 1)
    answer, code = exec_json(["tool", "--verb=fly"], mel.env)
    assert (answer["code"], code) == ("usage", 2)
    lua = subprocess.run([sys.executable, "-m", "melchior.cli", "lua-api"], capture_output=True)
    assert lua.returncode == 0 and lua.stdout.startswith(b"-- melchior's Lua client")


def test_sigterm_cleans_up_like_a_closed_pipe(mel: Melchior) -> None:
    root = mel.start()
    child = mel.start(root)
    child.proc.send_signal(signal.SIGTERM)
    assert child.proc.wait(timeout=10) == 0
    assert files_of(mel.directory(), child.id) == []


def test_serve_without_identity_mints_a_root_and_hands_over_its_environment(
    mel: Melchior,
) -> None:
    proc = subprocess.Popen(
        [*MELCHIOR, "serve", "--project=solo"],
        env=mel.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdin is not None
    listening = json.loads(proc.stdout.readline())
    environment = listening["environment"]
    assert listening["event"] == "listening" and environment[ENV_PROJECT] == "solo"
    answer, code = exec_json(["tool", "--verb=status"], {**mel.env, **environment})
    assert code == 0 and answer["result"][0]["id"] == listening["id"]
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0
    assert not os.path.exists(listening["at"])


def test_a_busy_socket_is_live_and_never_reaped(mel: Melchior) -> None:
    directory = mel.directory()
    sid = registry.mint(directory, "main", None, "t")
    path = os.path.join(directory, sid)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(0)
    waiting = []
    try:
        while True:  # fill the backlog without accepting
            client = socket.socket(socket.AF_UNIX)
            client.setblocking(False)
            try:
                client.connect(path)
            except BlockingIOError:
                client.close()
                break
            waiting.append(client)
            assert len(waiting) < 64
        assert registry.probe(path) == "live"
        assert registry.reap(directory, sid) is False and os.path.exists(path)
    finally:
        for client in waiting:
            client.close()
        listener.close()


def test_fork_stays_in_its_own_project(mel: Melchior) -> None:
    root = mel.start()
    answer, code = exec_json(["fork", "--project=elsewhere"], root.env)
    assert (answer["code"], code) == ("forbidden", 1)
    answer, code = exec_json(["fork", "--role=boss"], root.env)
    assert (answer["code"], code) == ("usage", 2)


def test_a_restarted_session_binds_over_its_dead_socket(mel: Melchior) -> None:
    root = mel.start()
    first = Session(mel.fork(root), mel.env)
    mel.sessions.append(first)
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(timeout=10)
    assert registry.probe(first.at) == "dead"
    again = Session(first.spec, mel.env)  # same identity: the dead socket is replaced
    mel.sessions.append(again)
    assert again.at == first.at and registry.probe(again.at) == "live"


def test_a_session_that_never_answers_times_out(mel: Melchior) -> None:
    directory = mel.directory()
    sid = registry.mint(directory, "main", None, "t")
    mute = socket.socket(socket.AF_UNIX)
    mute.bind(os.path.join(directory, sid))
    mute.listen(4)  # accepts into its backlog, never reads
    try:
        conn = client.connect(directory, sid, timeout=0.2)
        with pytest.raises(client.CallError) as err:
            conn.call("status")
        assert err.value.code == "timeout"
        conn.close()
    finally:
        mute.close()
