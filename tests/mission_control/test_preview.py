"""The pure parts of Mission Control: approval previews, command parsing, @path completion."""

from pathlib import Path

from magi_code.mcp.tool import McpArgs
from magi_code.mission_control.commands import parse
from magi_code.mission_control.mentions import complete
from magi_code.mission_control.preview import PREVIEW_LINES, preview
from magi_code.redact import REDACTED
from magi_code.tools.files import EditArgs, WriteArgs
from magi_code.tools.shell import ShellArgs


def test_an_edit_is_previewed_as_its_diff() -> None:
    shown = preview("edit_file", EditArgs("a.py", "one", "two", False), "one\nx\n", "a.py", "/w")
    assert shown.kind == "diff" and shown.title == "edit a.py"
    assert "-one\n" in shown.body and "+two\n" in shown.body and " x\n" in shown.body


def test_an_edit_that_would_fail_says_so_instead_of_a_diff() -> None:
    for current in ("no match here\n", "one one\n", None):
        shown = preview("edit_file", EditArgs("a.py", "one", "two", False), current, "a.py", "/w")
        assert shown.kind == "call" and "not found" in shown.body


def test_a_write_is_a_creation_or_an_overwrite_diff() -> None:
    created = preview("write_file", WriteArgs("n.txt", "new\n"), None, "n.txt", "/w")
    assert created.title == "create n.txt" and "+new\n" in created.body
    replaced = preview("write_file", WriteArgs("n.txt", "new\n"), "old\n", "n.txt", "/w")
    assert replaced.title == "overwrite n.txt" and "-old\n" in replaced.body


def test_a_long_diff_is_cut_at_its_bound_and_counted() -> None:
    before = "".join(f"{n}\n" for n in range(PREVIEW_LINES * 2))
    shown = preview("write_file", WriteArgs("big", ""), before, "big", "/w")
    lines = shown.body.splitlines()
    assert len(lines) == PREVIEW_LINES + 1 and lines[-1].endswith("more diff lines")


def test_shell_and_other_tools_show_command_cwd_and_arguments_redacted() -> None:
    secret = "sk-" + "a1B2" * 12
    shell = preview("shell", ShellArgs(f"curl -H {secret} x", 10.0), None, "", "/work")
    assert shell.kind == "shell" and "in /work" in shell.body
    assert secret not in shell.body and REDACTED in shell.body
    call = preview("docs__search", McpArgs({"query": "tls", "key": secret}), None, "", "/w")
    assert call.title == "call docs__search" and '"query": "tls"' in call.body
    assert secret not in call.body


def test_commands_are_known_words_and_paths_stay_prompts() -> None:
    model = parse("/model gpt-x")
    assert model is not None and (model.name, model.argument) == ("model", "gpt-x")
    unknown = parse("/modle")
    assert unknown is not None and unknown.name == "" and unknown.word == "modle"
    assert parse("/etc/hosts looks odd") is None
    assert parse("hello /help") is None


def test_at_path_completion_stays_inside_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "alpha.py").write_text("")
    (tmp_path / "src" / "alpine.py").write_text("")
    (tmp_path / ".hidden").write_text("")
    assert complete("see @sr", tmp_path) == "c/"
    assert complete("see @src/al", tmp_path) == "p"  # the common prefix of alpha and alpine
    assert complete("see @src/alph", tmp_path) == "a.py"
    assert complete("see @", tmp_path) == "src/"  # hidden names only when asked for
    assert complete("see @.h", tmp_path) == "idden"
    assert complete("see @../", tmp_path) is None
    assert complete("no mention", tmp_path) is None
