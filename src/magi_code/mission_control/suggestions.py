"""The composer's list: the `/` commands or the `@` files that match what is being typed,
shown right above the prompt while there are any (completion.py says what is completed and by
what). The prompt editor drives it: it tells the list where the cursor is (`follow`), moves
through it, and takes its choice (`choice`).

The workspace's files are listed once for each `@` mention being typed, in a worker thread
(mentions.workspace_files, bounded by MENTION_WALK_ENTRIES), and matched there too, so typing
never waits on a large tree; a result for a query that is no longer typed is dropped.
"""

from collections.abc import Mapping
from pathlib import Path

from rich.text import Text
from textual import work
from textual.widgets import OptionList
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from magi_code.limits import SUGGESTIONS_SHOWN
from magi_code.mission_control.completion import (
    Trigger,
    command_choices,
    file_choices,
    trigger,
)
from magi_code.mission_control.mentions import workspace_files


class Suggestions(OptionList, can_focus=False):
    DEFAULT_CSS = f"""
    Suggestions {{ height: auto; max-height: {SUGGESTIONS_SHOWN}; border: none;
        padding: 0 1; background: $surface; }}
    """

    def __init__(self, workspace: Path, env: Mapping[str, str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.workspace, self.env = workspace, env
        self.trigger: Trigger | None = None
        self.offered: Trigger | None = None  # what the options shown complete
        self.files: list[str] | None = None  # listed for the `@` mention being typed
        self.display = False

    @property
    def is_open(self) -> bool:
        return bool(self.display and self.option_count)

    def follow(self, text: str, line: str, row: int, column: int) -> None:
        """The cursor is at (`row`, `column`) of `text`, on `line`: offer what completes there."""
        found = trigger(text, line, row, column)
        if found == self.trigger:
            return
        self.trigger = found
        if found is None or found.kind != "file":
            self.files = None  # a later `@` lists the workspace afresh
        if found is None:
            self.close()
        elif found.kind == "command":
            self.offer(found, command_choices(found.query))
        else:
            self.match_files(found, self.files)

    @work(thread=True, exclusive=True, group="files", exit_on_error=False)
    def match_files(self, wanted: Trigger, files: list[str] | None) -> None:
        listed = files if files is not None else workspace_files(self.workspace, self.env)
        choices = file_choices(wanted.query, listed)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self.offer_files, wanted, listed, choices)

    def offer_files(
        self, wanted: Trigger, listed: list[str], choices: list[tuple[str, str]]
    ) -> None:
        if wanted == self.trigger:
            self.files = listed
            self.offer(wanted, choices)

    def offer(self, wanted: Trigger, choices: list[tuple[str, str]]) -> None:
        mark = "/" if wanted.kind == "command" else "@"
        self.offered = wanted
        self.clear_options()
        self.add_options(
            Option(Text.assemble((mark + value, "bold"), ("  " + said, "dim")), id=value)
            for value, said in choices
        )
        self.highlighted = 0 if choices else None
        self.display = bool(choices)

    def close(self) -> None:
        self.trigger = None
        self.clear_options()
        self.display = False

    def move(self, step: int) -> None:
        if self.highlighted is not None:
            self.highlighted = (self.highlighted + step) % self.option_count

    def choice(self) -> tuple[Trigger, str] | None:
        """What is being completed and the highlighted item, while the list is open."""
        stale = self.offered != self.trigger  # the files for the query typed are still coming
        if self.trigger is None or self.highlighted is None or not self.is_open or stale:
            return None
        value = self.get_option_at_index(self.highlighted).id
        return (self.trigger, value) if value is not None else None
