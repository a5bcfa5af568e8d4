"""Built-in provider presets: selecting one needs no provider table, only its credential."""

from pathlib import Path

import pytest

from magi_code.runner.startup import StartupError, admit


def admitted_with(tmp_path: Path, settings: str, env: dict[str, str]) -> str:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "settings.toml").write_text(settings)
    return admit(str(tmp_path), {"MC_HOME": str(home), **env}).provider


@pytest.mark.parametrize(
    ("provider", "variable"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")]
)
def test_a_keyed_preset_takes_its_key_from_its_variable(
    tmp_path: Path, provider: str, variable: str
) -> None:
    settings = f'provider = "{provider}"\n'  # its default model, from the built-in catalog
    assert admitted_with(tmp_path, settings, {variable: "sk-test"}) == provider
    with pytest.raises(StartupError) as caught:
        admitted_with(tmp_path, settings, {})
    assert caught.value.code == "provider_unavailable"


def test_the_local_ollama_preset_needs_no_key(tmp_path: Path) -> None:
    assert admitted_with(tmp_path, 'provider = "ollama"\nmodel = "llama3"\n', {}) == "ollama"
