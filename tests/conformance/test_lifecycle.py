"""initialize, status and shutdown over real pipes: results, preflight and startup codes."""

import os
import re
import threading
from pathlib import Path

import pytest

from magi_code import limits
from magi_code.client import ErrorResponse
from magi_code.config import trust_file

from .conftest import Spawn, initialize

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def test_initialize_result_is_exact(spawn: Spawn, home: Path) -> None:
    child = spawn()
    result = initialize(child, "status", "shutdown")
    assert set(result) == {"capabilities", "limits", "status"}
    assert result["capabilities"] == [
        "initialize",
        "status",
        "shutdown",
        "session.create",
        "session.open",
        "history.page",
        "turn.start",
        "turn.cancel",
        "approval.answer",
    ]
    assert result["limits"] == {
        "frame_bytes": limits.FRAME_BYTES,
        "json_depth": limits.JSON_DEPTH,
        "id_bytes": limits.ID_BYTES,
        "prompt_bytes": limits.PROMPT_BYTES,
        "history_page_bytes": limits.HISTORY_PAGE_BYTES,
        "history_page_entries": limits.HISTORY_PAGE_ENTRIES,
        "content_chunk_bytes": limits.HISTORY_CHUNK_BYTES,
        "pending_responses": limits.PENDING_OUTPUT_FRAMES,
        "requests_per_child": limits.REQUESTS_PER_CHILD,
        "output_deadline_ms": limits.OUTPUT_DEADLINE_MS,
    }
    status = result["status"]
    assert status["state"] == "idle" and status["readiness"] == "ready"
    assert (status["provider"], status["model"]) == ("fixture", "fixture-model")
    assert re.fullmatch(r"[0-9a-f]{64}", status["context_id"])
    assert status["session_id"] is None and status["run_id"] is None
    assert child.request("status") == status
    assert oct(home.stat().st_mode & 0o777) == "0o700"


def test_seq_and_instance(spawn: Spawn) -> None:
    first, second = spawn(), spawn()
    for child in (first, second):
        initialize(child)
        for _ in range(3):
            child.request("status")
    for child in (first, second):
        assert [f["seq"] for f in child.frames] == [1, 2, 3, 4]
        assert len({f["instance_id"] for f in child.frames}) == 1
        assert UUID.fullmatch(child.frames[0]["instance_id"])
        for f in child.frames:
            assert f["protocol"] == limits.PROTOCOL and f["version"] == 1
            assert f["type"] == "response" and ("result" in f) != ("error" in f)
    assert first.frames[0]["instance_id"] != second.frames[0]["instance_id"]


@pytest.mark.parametrize("method", ["status", "session.create", "turn.start", "history.page"])
def test_methods_before_initialize_are_not_initialized(spawn: Spawn, method: str) -> None:
    child = spawn()
    with pytest.raises(ErrorResponse) as caught:
        child.request(method)
    assert caught.value.code == "not_initialized"


def test_session_methods_during_startup_and_after_failure(spawn: Spawn, home: Path) -> None:
    home.mkdir()
    os.mkfifo(home / "settings.toml")
    child = spawn()
    init_id = child.send("initialize", {"required_capabilities": ["session.create"]})
    with pytest.raises(ErrorResponse) as pending:
        child.request("session.create")
    assert pending.value.code == "not_initialized"
    writer = threading.Thread(target=(home / "settings.toml").write_text, args=("agent = 7\n",))
    writer.start()
    assert child.wait(init_id)["error"] == {"code": "configuration_invalid"}
    writer.join()
    with pytest.raises(ErrorResponse) as failed:
        child.request("session.create")
    assert failed.value.code == "configuration_invalid"


def test_unsupported_capability_has_no_effect_and_allows_retry(spawn: Spawn, home: Path) -> None:
    child = spawn()
    with pytest.raises(ErrorResponse) as caught:
        initialize(child, "status", "teleport")
    assert caught.value.code == "unsupported_capability"
    assert not home.exists()
    assert initialize(child, "status")["status"]["readiness"] == "ready"
    with pytest.raises(ErrorResponse) as again:
        initialize(child, "status")
    assert again.value.code == "already_initialized"


def test_capability_count_edge(spawn: Spawn) -> None:
    child = spawn()
    with pytest.raises(ErrorResponse) as caught:
        initialize(child, *["status"] * (limits.REQUIRED_CAPABILITIES_MAX + 1))
    assert caught.value.code == "invalid_params"
    assert initialize(child, *["status"] * limits.REQUIRED_CAPABILITIES_MAX)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"required_capabilities": "status"},
        {"required_capabilities": ["status"], "extra": 1},
        {"required_capabilities": [1]},
        {"required_capabilities": ["bad name"]},
        {"required_capabilities": ["x" * (limits.ID_BYTES + 1)]},
    ],
)
def test_initialize_params_exact(spawn: Spawn, params: dict[str, object]) -> None:
    child = spawn()
    with pytest.raises(ErrorResponse) as caught:
        child.request("initialize", params)
    assert caught.value.code == "invalid_params"


def test_shutdown_before_initialize(spawn: Spawn, home: Path) -> None:
    child = spawn()
    assert child.request("shutdown") == {"state": "stopping"}
    assert child.finish() == 0
    assert not home.exists()


def test_status_while_starting_then_shutdown_cancels_startup(spawn: Spawn, home: Path) -> None:
    home.mkdir()
    os.mkfifo(home / "settings.toml")  # startup blocks reading it: deterministic "starting"
    child = spawn()
    init_id = child.send("initialize", {"required_capabilities": ["status"]})
    assert child.request("status") == {
        "state": "starting",
        "readiness": "initializing",
        "provider": None,
        "model": None,
        "context_id": None,
        "session_id": None,
        "run_id": None,
    }
    with pytest.raises(ErrorResponse) as again:
        initialize(child)
    assert again.value.code == "already_initialized"
    assert child.request("shutdown") == {"state": "stopping"}
    assert child.wait(init_id)["error"] == {"code": "startup_cancelled"}
    assert child.finish() == 0  # the blocked startup thread is left to process exit


def test_startup_completes_once_settings_arrive(spawn: Spawn, home: Path) -> None:
    home.mkdir()
    os.mkfifo(home / "settings.toml")
    child = spawn()
    init_id = child.send("initialize", {"required_capabilities": ["status"]})
    assert child.request("status")["state"] == "starting"
    writer = threading.Thread(
        target=(home / "settings.toml").write_text, args=('model = "fixture-model"\n',)
    )
    writer.start()
    assert child.result(init_id)["status"]["readiness"] == "ready"
    writer.join()


@pytest.mark.parametrize(
    ("settings", "code"),
    [
        ("provider = [", "configuration_invalid"),
        ('provider = "nowhere"', "configuration_invalid"),
        ('agent = "no-such-agent"', "profile_invalid"),
        ('[mcp.servers.files]\ncommand = "x"\nenabled = true', "mcp_unavailable"),
    ],
)
def test_startup_failure_codes(spawn: Spawn, home: Path, settings: str, code: str) -> None:
    home.mkdir()
    (home / "settings.toml").write_text(settings + "\n")
    child = spawn()
    with pytest.raises(ErrorResponse) as caught:
        initialize(child)
    assert caught.value.code == code
    status = child.request("status")
    assert (status["state"], status["readiness"]) == ("failed", code)
    with pytest.raises(ErrorResponse) as again:
        initialize(child)
    assert again.value.code == "already_initialized"


def test_project_settings_from_exact_cwd(spawn: Spawn, workspace: Path, home: Path) -> None:
    # In a trusted folder the project's choice stands (an untrusted one's unknown profile is
    # dropped instead: tests/conformance/test_trust.py).
    home.mkdir(parents=True, exist_ok=True)
    trust_file.trust(str(home / "settings.toml"), str(workspace))
    (workspace / ".magi-code").mkdir()
    (workspace / ".magi-code" / "settings.toml").write_text('agent = "missing"\n')
    child = spawn()
    with pytest.raises(ErrorResponse) as caught:
        initialize(child)
    assert caught.value.code == "profile_invalid"


def test_unwritable_home_is_startup_failed(spawn: Spawn, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    child = spawn(MC_HOME=str(blocker / "home"))
    with pytest.raises(ErrorResponse) as caught:
        initialize(child)
    assert caught.value.code == "startup_failed"


def test_names_that_look_secret_or_are_long_are_null(spawn: Spawn, home: Path) -> None:
    home.mkdir()

    def offered(model: str) -> str:  # a model is one its provider offers (known_models.py)
        return f'model = "{model}"\n[providers.fixture]\nmodels = ["{model}"]\n'

    (home / "settings.toml").write_text(offered("sk-proj-ABCDEFGHIJKLMNOPQRSTUV"))
    assert initialize(spawn())["status"]["model"] is None
    (home / "settings.toml").write_text(offered("m" * (limits.NAME_BYTES + 1)))
    assert initialize(spawn())["status"]["model"] is None
    (home / "settings.toml").write_text(offered("m" * limits.NAME_BYTES))
    assert initialize(spawn())["status"]["model"] == "m" * limits.NAME_BYTES


def test_context_identity(spawn: Spawn, home: Path, tmp_path: Path) -> None:
    base = initialize(spawn())["status"]["context_id"]
    alias = tmp_path / "alias"
    alias.symlink_to(home)
    assert initialize(spawn(MC_HOME=str(alias)))["status"]["context_id"] == base
    other = initialize(spawn(MC_HOME=str(tmp_path / "other-home")))["status"]["context_id"]
    assert other != base


def test_bad_permission_policy_is_configuration_invalid(spawn: Spawn, home: Path) -> None:
    home.mkdir()
    (home / "settings.toml").write_text(
        '[[permissions.rules]]\ntool = "shell"\ndecision = "maybe"\n'
    )
    with pytest.raises(ErrorResponse) as caught:
        initialize(spawn())
    assert caught.value.code == "configuration_invalid"


def test_another_cwd_is_another_context(spawn: Spawn, home: Path, tmp_path: Path) -> None:
    from magi_code.client import LocalAgentClient, environment

    base = initialize(spawn())["status"]["context_id"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with LocalAgentClient.spawn(cwd=elsewhere, env=environment(home)) as child:
        assert initialize(child)["status"]["context_id"] != base
