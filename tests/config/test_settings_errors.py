"""Settings errors a person can act on (issue 28, item 4), over the real binary: a TOML syntax
error names the file, line and column and the parser's own phrase; a bad value names the key,
the value, the file and the valid choices (with the closest one); a key that is no setting
warns with the closest known key ("provder: did you mean `provider`?"), in the global file, a
trusted project's and an untrusted one's, and is said beside a refused model it explains."""

import subprocess
from pathlib import Path

import pytest

from magi_code.config import settings, trust
from support.exec import exec_run

pytestmark = pytest.mark.usefixtures("settings_folders")  # home and workspace/.magi-code made


def exec_in(workspace: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return exec_run(["hi"], workspace, home, text=True)


def refused(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert "startup failed: configuration_invalid" in done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


def test_a_toml_syntax_error_names_file_line_column_and_phrase(home: Path, workspace: Path) -> None:
    global_file = home / "settings.toml"
    global_file.write_text('model = "fixture-model"\nthinking = "high\n')
    said = refused(exec_in(workspace, home))
    assert f"{global_file}: not valid TOML at line 2, column 17: Illegal character" in said


def test_a_trusted_projects_syntax_error_names_its_own_file(home: Path, workspace: Path) -> None:
    (home / "settings.toml").write_text(f'[permissions]\ntrusted_projects = ["{workspace}"]\n')
    project = workspace / ".magi-code" / "settings.toml"
    project.write_text("[providers\n")
    said = refused(exec_in(workspace, home))
    assert f"{project}: not valid TOML at line 1, column 11: " in said


@pytest.mark.parametrize(
    ("text", "phrases"),
    [
        (
            'provider = "opnai"\n',
            [
                "the selected provider is not configured: provider = `opnai`",
                "did you mean `openai`?",
                "(one of: `anthropic`, `codex`, `fixture`, `ollama`, `openai`)",
            ],
        ),
        (
            'provider = "mine"\n[providers.mine]\nwire_api = "openai-chats"\n'
            'base_url = "http://127.0.0.1:1/v1"\nmodels = ["m"]\n',
            [
                "providers.mine.wire_api = `openai-chats` is not a wire API",
                "did you mean `openai-chat`?",
                "(one of: `openai-responses`, `openai-chat`, `anthropic`, `codex`, `fixture`)",
            ],
        ),
        ("thinking = 5\n", ["thinking must be a string, not 5 (in {file})"]),
        ('model = ""\n', ["model must be a non-empty string, not an empty string (in {file})"]),
    ],
    ids=["provider", "wire_api", "thinking", "empty_model"],
)
def test_a_bad_value_names_key_value_file_and_choices(
    home: Path, workspace: Path, text: str, phrases: list[str]
) -> None:
    file = home / "settings.toml"
    file.write_text(text)
    said = refused(exec_in(workspace, home))
    for phrase in phrases:
        assert phrase.format(file=file) in said, said


def test_a_misspelled_key_warns_with_the_closest_known_key(home: Path, workspace: Path) -> None:
    global_file = home / "settings.toml"
    global_file.write_text(
        'provder = "openai"\n[providers.openai]\napi_kye_env = "K"\n[subagents]\nmax_dept = 1\n'
    )
    done = exec_in(workspace, home)
    assert done.returncode == 0, done.stderr  # nothing reads them: the run goes on
    lines = [line for line in done.stderr.splitlines() if "not a setting" in line]
    assert lines == [
        f"magi-code exec: ignored provder from {global_file} "
        "(not a setting: did you mean `provider`?)",
        f"magi-code exec: ignored providers.openai.api_kye_env from {global_file} "
        "(not a setting: did you mean `providers.openai.api_key_env`?)",
        f"magi-code exec: ignored subagents.max_dept from {global_file} "
        "(not a setting: did you mean `subagents.max_depth`?)",
    ]


def test_an_untrusted_projects_unknown_key_is_not_blamed_on_trust(
    home: Path, workspace: Path
) -> None:
    project = workspace / ".magi-code" / "settings.toml"
    project.write_text('modle = "x"\n')
    done = exec_in(workspace, home)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "modle" in line]
    assert said == [
        f"magi-code exec: ignored modle from {project} (not a setting: did you mean `model`?)"
    ]


def test_a_misspelled_provider_is_named_beside_the_model_it_leaves_unknown(
    home: Path, workspace: Path
) -> None:
    (home / "settings.toml").write_text('provder = "openai"\nmodel = "gpt-5"\n')
    said = refused(exec_in(workspace, home))
    assert "the provider `fixture` offers no such model: `gpt-5`" in said
    assert "ignored provder from" in said and "did you mean `provider`?" in said


def test_unknown_keys_are_their_own_list_and_trust_keeps_its_own() -> None:
    """`Loaded.dropped` stays what trust dropped; `unknown` has the keys that are no setting,
    and `warnings` says each key once (the unknown reading first)."""
    layer = {"provder": "x", "providers": {"openai": {"modles": []}}, "model": "m"}
    found = settings.unknown_keys(layer, "/f.toml")
    assert [(d.key, d.guess) for d in found] == [
        ("provder", "provider"),
        ("providers.openai.modles", "providers.openai.models"),
    ]
    loaded = settings.Loaded({}, {}, {}, False, [trust.Dropped("provder", "/f.toml")], found)
    assert loaded.warnings()[0].reason == trust.UNKNOWN
    assert sum(d.key == "provder" for d in loaded.warnings()) == 1


def test_an_untrusted_projects_unknown_model_is_dropped_a_trusted_ones_refused(
    home: Path, workspace: Path
) -> None:
    project = workspace / ".magi-code" / "settings.toml"
    project.write_text('model = "fixture-modle"\n')
    done = exec_in(workspace, home)
    assert done.returncode == 0, done.stderr  # untrusted input never stops startup
    assert f"ignored model from {project} (not valid)" in done.stderr
    (home / "settings.toml").write_text(f'[permissions]\ntrusted_projects = ["{workspace}"]\n')
    said = refused(exec_in(workspace, home))
    assert "offers no such model: `fixture-modle`; did you mean `fixture-model`?" in said
