"""What a run is given: tools never see credentials from the environment."""

import subprocess
import sys
from pathlib import Path

from magi_code.runner.setup import tool_env
from magi_code.runner.startup import admit


def test_tool_env_drops_credentials(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.toml").write_text(
        '[providers.local]\nwire_api = "openai-chat"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = "MY_PROVIDER_KEY"\n'
    )
    env = {
        "MC_HOME": str(home),
        "PATH": "/usr/bin",
        "MY_PROVIDER_KEY": "k1",
        "OPENAI_API_KEY": "k2",
        "GITHUB_TOKEN": "k3",
        "MAGI_MELCHIOR_TOKEN": "k4",
        "AWS_SECRET_ACCESS_KEY": "k5",
        "LANG": "C.UTF-8",
    }
    admitted = admit(str(tmp_path), env)
    assert tool_env(admitted) == {"MC_HOME": str(home), "PATH": "/usr/bin", "LANG": "C.UTF-8"}


def test_tool_env_drops_passwords_in_urls_and_every_named_key(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (work / ".magi-code").mkdir(parents=True)
    home.mkdir()
    (home / "settings.toml").write_text(
        f'[providers.mine]\nwire_api = "openai-chat"\napi_key_env = "PLAINLY_NAMED"\n'
        f'[permissions]\ntrusted_projects = ["{work}"]\n'
    )
    (work / ".magi-code" / "settings.toml").write_text(
        '[providers.theirs]\nwire_api = "openai-chat"\nbase_url = "http://127.0.0.1:9/v1"\n'
    )
    env = {
        "MC_HOME": str(home),
        "PLAINLY_NAMED": "k1",
        "DATABASE_URL": "postgres://app:hunter2@db.internal:5432/app",
        "HTTPS_PROXY": "http://me:pw@proxy:3128",
        "NOTES": "see https://u:p@example.com/x for details",
        "HOMEPAGE": "https://example.com/a@b",
        "GIT_REMOTE": "ssh://git@github.com/o/r",
        "EMPTY_PASSWORD": "redis://:secret@cache:6379",
    }
    admitted = admit(str(work), env)
    # Only the allow-listed names pass (runner/environment.py): HOMEPAGE and GIT_REMOTE are
    # not on it, whatever their values.
    assert tool_env(admitted) == {"MC_HOME": str(home)}


def test_the_hook_modules_load_only_when_hooks_are_configured(tmp_path: Path) -> None:
    """A turn's parts without hooks leave the hook modules unimported (start-up CPU); with a
    hook configured they hold it, parsed."""
    code = (
        "import sys\n"
        "from magi_code.runner import setup, startup\n"
        "parts = setup.TurnParts(startup.admit(sys.argv[1], {'MC_HOME': sys.argv[2]}))\n"
        "hook_modules = ('magi_code.runner.hooks', 'magi_code.runner.hook_runs')\n"
        "loaded = [m in sys.modules for m in hook_modules]\n"
        "print(sorted(parts.hooks), *loaded)\n"
    )
    for name, settings, expected in [
        ("plain", "", "[] False False"),
        ("hooked", '[[hooks.session_start]]\ncommand = ["true"]\n', "['session_start'] True False"),
    ]:
        home = tmp_path / name
        home.mkdir()
        (home / "settings.toml").write_text(settings)
        done = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path), str(home)],
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout.strip() == expected
