"""What a run is given: tools never see credentials from the environment."""

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
