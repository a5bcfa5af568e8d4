"""What the composer's list completes, and what a chosen item puts in its place. Pure.

Two things are completed, each by fuzzy match (fuzzy.py): the `/command` word a prompt opens
with (the whole text so far, the cursor at its end), from the one command registry
(commands.COMMANDS, read each time, so a command registered there later is offered too); and
the `@path` mention right before the cursor (mentions.MENTION), from the workspace's files. A
chosen item replaces the word with itself and a space, so what follows can be typed at once.
"""

import re
from typing import Literal

from magi_code.limits import SUGGESTIONS_SHOWN
from magi_code.mission_control import commands
from magi_code.mission_control.fuzzy import rank
from magi_code.mission_control.mentions import MENTION
from magi_code.records import record

COMMAND_WORD = re.compile(r"/([^\s/]*)")


@record
class Trigger:
    kind: Literal["command", "file"]
    query: str  # what follows the `/` or the `@`
    row: int
    start: int  # the column of the `/` or the `@`
    end: int  # the cursor's column


def trigger(text: str, line: str, row: int, column: int) -> Trigger | None:
    """What the cursor at (`row`, `column`) completes in `text`, whose line `row` is `line`."""
    command = COMMAND_WORD.fullmatch(text)
    if command is not None and row == 0 and column == len(text):
        return Trigger("command", command.group(1), 0, 0, column)
    mention = MENTION.search(line[:column])
    if mention is not None:
        typed = mention.group(1)
        return Trigger("file", typed, row, column - len(typed) - 1, column)
    return None


def replacement(kind: Literal["command", "file"], choice: str) -> str:
    return ("/" if kind == "command" else "@") + choice + " "


def command_choices(query: str) -> list[tuple[str, str]]:
    """(name, description) of the commands that match `query`, best first."""
    names = rank(query, list(commands.COMMANDS), SUGGESTIONS_SHOWN)
    return [(name, commands.COMMANDS[name]) for name in names]


def file_choices(query: str, files: list[str]) -> list[tuple[str, str]]:
    """(path, "") of the workspace files that match `query`, best first."""
    return [(path, "") for path in rank(query, files, SUGGESTIONS_SHOWN)]
