"""`magi-code trust/untrust`, `login`'s refusal, warnings for dropped keys, and deeply nested
settings, through the real command line and pipes."""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from magi_code.client import LocalAgentClient, environment

SECRET = "sk-test-SECRET-0123456789"


def cli(
    args: list[str], home: Path, cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "magi_code.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment(home),
        timeout=30,
    )


def listed(home: Path) -> list[str]:
    conf = tomllib.loads((home / "settings.toml").read_text())
    trusted: list[str] = conf["permissions"]["trusted_projects"]
    return trusted


def test_trust_and_untrust_default_to_the_cwd(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    done = cli(["trust"], home, work)
    assert done.returncode == 0 and listed(home) == [str(work)]
    assert cli(["trust", str(work)], home, tmp_path).returncode == 0
    assert listed(home) == [str(work)]
    assert cli(["untrust", "."], home, work).returncode == 0
    assert listed(home) == []


def test_untrust_says_when_an_ancestor_still_trusts(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    cli(["trust", str(tmp_path)], home, tmp_path)
    done = cli(["untrust", str(work)], home, tmp_path)
    assert done.returncode == 1 and str(tmp_path) in done.stderr


def test_trust_refuses_a_missing_folder(tmp_path: Path) -> None:
    done = cli(["trust", str(tmp_path / "nope")], tmp_path / "home", tmp_path)
    assert done.returncode == 2 and not (tmp_path / "home").exists()


@pytest.mark.parametrize(
    ("name", "global_text", "stored"),
    [
        ("openai", "", True),  # a built-in preset
        ("mine", '[providers.mine]\nwire_api = "openai-chat"\n', True),  # global settings
        ("nosuch", "", False),
        ("projects", "", False),  # only the project file defines it
    ],
)
def test_login_only_for_global_or_preset_providers(
    tmp_path: Path, name: str, global_text: str, stored: bool
) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (work / ".magi-code").mkdir(parents=True)
    home.mkdir()
    (home / "settings.toml").write_text(
        global_text + f'[permissions]\ntrusted_projects = ["{work}"]\n'
    )
    (work / ".magi-code" / "settings.toml").write_text(
        '[providers.projects]\nwire_api = "openai-chat"\nbase_url = "http://127.0.0.1:9/v1"\n'
    )
    done = cli(["login", name, "--api-key-stdin"], home, work, stdin=SECRET + "\n")
    assert done.returncode == (0 if stored else 2)
    assert (home / "credentials.json").exists() is stored
    assert SECRET not in done.stdout + done.stderr


def test_models_names_each_dropped_key_and_its_file(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (work / ".magi-code").mkdir(parents=True)
    project = work / ".magi-code" / "settings.toml"
    project.write_text('[permissions]\ndefault_shell = "allow"\n[mcp]\napproved = ["d"]\n')
    done = cli(["models"], home, work)
    assert done.returncode == 0
    warnings = [line for line in done.stderr.splitlines() if "ignored" in line]
    assert warnings == [
        f"magi-code: ignored permissions.default_shell from {project} (this folder is not trusted)",
        f"magi-code: ignored mcp.approved from {project} (only global settings may)",
    ]


DEEP = {
    "array": "x = " + "[" * 1000 + "]" * 1000 + "\n",
    "inline_table": "x = " + "{a = " * 1000 + "1" + "}" * 1000 + "\n",
    "dotted_key": ".".join(f"k{i}" for i in range(990)) + " = 1\n",
}


@pytest.fixture(params=sorted(DEEP))
def deep_settings(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / "settings.toml").write_text(DEEP[request.param])
    return home, work


@pytest.mark.parametrize("args", [["sessions", "prune"], ["models"], ["mcp", "digest", "files"]])
def test_deep_settings_are_a_clear_error_not_a_traceback(
    deep_settings: tuple[Path, Path], args: list[str]
) -> None:
    home, work = deep_settings
    done = cli(args, home, work)
    assert done.returncode == 2
    assert done.stderr.startswith("magi-code: the settings are not valid\n")
    assert "Traceback" not in done.stderr


def test_deep_settings_fail_initialize_as_configuration_invalid(
    deep_settings: tuple[Path, Path],
) -> None:
    home, work = deep_settings
    with LocalAgentClient.spawn(cwd=work, env=environment(home)) as child:
        frame = child.wait(child.send("initialize", {"required_capabilities": ["status"]}))
        assert frame["error"]["code"] == "configuration_invalid", json.dumps(frame)[:200]


def test_models_sends_no_credential_to_a_project_provider(tmp_path: Path) -> None:
    from magi_code.config.credentials import CredentialStore
    from providers.local_server import LocalServer, Reply

    home, work = tmp_path / "home", tmp_path / "work"
    (work / ".magi-code").mkdir(parents=True)
    home.mkdir()
    with LocalServer() as server:
        listing = Reply.json({"data": [{"id": "m1"}]})
        server.script("/v1/models", listing, listing)
        table = f'wire_api = "openai-chat"\nbase_url = "{server.url}/v1"\ndiscover = true\n'
        (home / "settings.toml").write_text(
            f'[permissions]\ntrusted_projects = ["{work}"]\n[providers.mine]\n{table}'
        )
        (work / ".magi-code" / "settings.toml").write_text(f"[providers.theirs]\n{table}")
        store = CredentialStore(home)
        store.set_api_key("mine", SECRET)
        store.set_api_key("theirs", SECRET)  # a key stored under the project's name
        done = cli(["models", "--refresh", "--json"], home, work)
        assert done.returncode == 0, done.stderr
        assert {c["provider"] for c in json.loads(done.stdout)["models"]} >= {"mine", "theirs"}
        auth = sorted(seen.headers.get("authorization", "-") for seen in server.requests)
        assert auth == ["-", f"Bearer {SECRET}"]
