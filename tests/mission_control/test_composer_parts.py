"""The composer's pure parts (issue 29, items 2 and 3): the fuzzy matcher, what the cursor
completes, the paste tokens; and the two bounded readers beneath them, the `@` picker's walk
of the workspace and the image-path scan of a large prompt."""

import os
import time
from pathlib import Path

import pytest

from magi_code.limits import (
    MENTION_WALK_ENTRIES,
    PASTE_INLINE_CHARS,
    PASTE_INLINE_LINES,
    SHELL_SPLIT_LINE_CHARS,
    SUGGESTIONS_SHOWN,
    UI_PROMPT_SHOWN_CHARS,
)
from magi_code.mission_control import commands
from magi_code.mission_control.attachments import named_images
from magi_code.mission_control.completion import (
    Trigger,
    command_choices,
    file_choices,
    replacement,
    trigger,
)
from magi_code.mission_control.fuzzy import rank, score
from magi_code.mission_control.mentions import workspace_files
from magi_code.mission_control.pastes import Pastes, collapses, line_count, normalized
from magi_code.mission_control.widgets import shown_prompt

PATHS = [
    "docs/r/e/a/d/m/e.txt",
    "src/magi_code/mission_control/app.py",
    "tests/test_readme.py",
    "README.md",
    "src/readme_tools.py",
    "apps/x/y.txt",
]


def test_a_candidate_matches_when_the_query_is_in_it_in_order_case_ignored() -> None:
    assert score("RdMe", "README.md") is not None
    assert score("app", "src/a_p_p.py") is not None
    assert score("ap", "app") is not None
    assert score("pa", "app") is None  # in order
    assert score("appz", "src/app.py") is None
    assert score("", "anything") == 0


def test_matches_rank_by_word_starts_runs_and_the_name_then_length() -> None:
    assert rank("rdme", PATHS, 10)[0] == "README.md"
    assert rank("app", PATHS, 10)[0] == "src/magi_code/mission_control/app.py"  # in the name
    assert rank("mc app", ["mc app x", "m_c_a_p_p"], 10)[0] == "mc app x"  # a run
    assert rank("ab", ["xxab", "ab", "abxx"], 10) == ["ab", "abxx", "xxab"]  # shorter first
    assert rank("q", ["b/q", "a/q"], 10) == ["b/q", "a/q"]  # ties of equal length: own order
    assert rank("zzz", PATHS, 10) == []


def test_an_empty_query_keeps_the_candidates_order_and_every_answer_its_bound() -> None:
    assert rank("", PATHS, 3) == PATHS[:3]
    many = [f"file_{n}.py" for n in range(SUGGESTIONS_SHOWN + 1)]
    assert len(rank("file", many, SUGGESTIONS_SHOWN)) == SUGGESTIONS_SHOWN
    assert len(rank("file", many[:SUGGESTIONS_SHOWN], SUGGESTIONS_SHOWN)) == SUGGESTIONS_SHOWN
    assert len(file_choices("", many)) == SUGGESTIONS_SHOWN


def test_the_slash_word_opening_the_prompt_completes_a_command() -> None:
    assert trigger("/he", "/he", 0, 3) == Trigger("command", "he", 0, 0, 3)
    assert trigger("/", "/", 0, 1) == Trigger("command", "", 0, 0, 1)
    assert trigger("/he", "/he", 0, 2) is None  # the cursor is not at the end
    assert trigger("/help me", "/help me", 0, 8) is None  # the argument is being typed
    assert trigger("/etc/hosts", "/etc/hosts", 0, 10) is None  # a path, not a command
    assert trigger("x\n/he", "/he", 1, 3) is None  # only the prompt's opening word
    assert replacement("command", "help") == "/help "


def test_an_at_mention_before_the_cursor_completes_a_file() -> None:
    assert trigger("see @sr", "see @sr", 0, 7) == Trigger("file", "sr", 0, 4, 7)
    assert trigger("a\n@", "@", 1, 1) == Trigger("file", "", 1, 0, 1)
    assert trigger("me@host", "me@host", 0, 7) is None  # an address, not a mention
    assert trigger("see @sr now", "see @sr now", 0, 11) is None
    assert replacement("file", "src/a.py") == "@src/a.py "


def test_the_command_list_reads_the_one_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    assert command_choices("hel") == [("help", commands.COMMANDS["help"])]
    monkeypatch.setitem(commands.COMMANDS, "rewind", "go back to an earlier prompt")
    assert ("rewind", "go back to an earlier prompt") in command_choices("rew")
    assert [name for name, _ in command_choices("")] == list(commands.COMMANDS)[:SUGGESTIONS_SHOWN]


def test_a_paste_collapses_past_its_line_and_character_bounds() -> None:
    lines = "\n".join(["line"] * PASTE_INLINE_LINES)
    assert line_count(lines) == PASTE_INLINE_LINES and not collapses(lines)
    assert line_count(lines + "\n") == PASTE_INLINE_LINES and not collapses(lines + "\n")
    assert collapses(lines + "\nmore")
    assert not collapses("x" * PASTE_INLINE_CHARS)
    assert collapses("x" * (PASTE_INLINE_CHARS + 1))
    assert normalized("a\r\nb\rc\n") == "a\nb\nc\n"


def test_tokens_expand_to_their_texts_once_and_are_forgotten_when_gone() -> None:
    pastes = Pastes()
    first = pastes.token_for("one\ntwo\n")
    second = pastes.token_for("x")
    assert (first, second) == ("[Pasted text #1, 2 lines]", "[Pasted text #2, 1 line]")
    sneaky = pastes.token_for(f"quoting {first}")  # a text that reads like a token
    shown = f"a {first} b {sneaky} [Pasted text #9, 1 line]"
    assert pastes.expand(shown) == f"a one\ntwo\n b quoting {first} [Pasted text #9, 1 line]"
    pastes.keep_only(f"{first} {sneaky}")
    assert list(pastes.texts) == [first, sneaky]
    pastes.keep_only("")
    assert pastes.token_for("y") == "[Pasted text #1, 1 line]"  # none left: #1 again


def test_a_token_span_holds_the_cursor_at_its_edges_and_inside() -> None:
    pastes = Pastes()
    token = pastes.token_for("a\nb")
    line = f"ab {token} {token}"
    first, second = line.index(token), line.rindex(token)
    assert pastes.span_at(line, first) == (first, first + len(token))
    assert pastes.span_at(line, first + len(token)) == (first, first + len(token))
    assert pastes.span_at(line, second + 3) == (second, second + len(token))
    assert pastes.span_at(line, first - 1) is None


def test_the_picker_lists_files_the_ignore_files_leave_shallow_ones_first(
    tmp_path: Path,
) -> None:
    (tmp_path / ".git").mkdir()  # a repository: .gitignore counts
    (tmp_path / ".git" / "config").write_text("")
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    for name in ["build/out.txt", "b.log", "src/deep/z.py", "src/a.py", "top.md"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    files = workspace_files(tmp_path, {})
    assert files == [".gitignore", "top.md", "src/a.py", "src/deep/z.py"]


def test_the_picker_walks_at_most_its_bound_of_entries(tmp_path: Path) -> None:
    for n in range(MENTION_WALK_ENTRIES):
        os.close(os.open(tmp_path / f"{n:06}", os.O_CREAT | os.O_WRONLY, 0o600))
    assert len(workspace_files(tmp_path, {})) == MENTION_WALK_ENTRIES
    (tmp_path / "one more").touch()
    assert len(workspace_files(tmp_path, {})) == MENTION_WALK_ENTRIES


def test_a_long_line_is_searched_for_image_paths_at_white_space_only(tmp_path: Path) -> None:
    (tmp_path / "my shot.png").write_bytes(b"")
    quoted = '"my shot.png" '
    at_bound = quoted + "x" * (SHELL_SPLIT_LINE_CHARS - len(quoted))
    assert named_images(at_bound, tmp_path) == [tmp_path / "my shot.png"]
    assert named_images(at_bound + "x", tmp_path) == []  # split plainly: `"my`, `shot.png"`
    huge_word = "see a.png " + "x" * (1024 * 1024)
    started = time.monotonic()
    assert named_images(huge_word, tmp_path) == []
    assert time.monotonic() - started < 1  # shlex over it took minutes


def test_the_conversation_shows_a_prompt_up_to_its_bound_and_counts_the_rest() -> None:
    at_bound = "p" * UI_PROMPT_SHOWN_CHARS
    assert shown_prompt(at_bound).plain == at_bound
    assert shown_prompt(at_bound + "é").plain == f"{at_bound}\n… 1 more character sent, not shown"
    assert shown_prompt(at_bound + "\n" * 1500).plain.endswith(
        "… 1,500 more characters sent, not shown"
    )
