"""When a turn's workspace checkpoints are taken (checkpoints/ says what one holds).

A turn that changes files gets two: `before` right before its first call that may write (a
file write or edit, a shell command, a write by a Code Mode program or an MCP tool that is not
read-only, a subagent that is not read-only: `may_change_files`), in a worker thread while the
turn waits; and `after` once the turn is over,
whatever its outcome, in a thread of its own that the turn does not wait for (the store's
next use waits for it: checkpoints/store.py). A turn that only reads gets none, and one that
changes files pays one walk, when it first changes something, never at its start. A
checkpoint that fails leaves the turn going, without a rewind point for its code. Nothing here
runs, nor is the store imported, until a turn first writes.

A subagent is another process in the same workspace: what it changes while its parent's turn
runs lies between that turn's two checkpoints, so rewinding the turn puts it back. A subagent
is read-only when its profile offers only READ_ONLY_TOOLS, by name, and no Code Mode. One in
the background may go on after its parent's turn ended: what it changes then is a change made
outside any turn of the parent (checkpoints/plan.py), which a rewind names before overwriting.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from magi_code.debug import absorbed

if TYPE_CHECKING:
    from magi_code.checkpoints.store import CheckpointStore
    from magi_code.tools.base import Access

CHANGES_FILES = frozenset({"write", "shell"})  # tools/base.py's access kinds that may write
# The built-in tools that change no file, whatever their arguments (their access is a read, or
# the network's): a subagent offered only these changes nothing.
READ_ONLY_TOOLS = frozenset(
    {"read_file", "list_dir", "glob", "grep", "web_fetch", "skill", "update_plan"}
)


def may_change_files(access: "Access") -> bool:
    """Whether a call with this access may change the workspace's files (module doc)."""
    return access.kind in CHANGES_FILES or access.delegated_writes


class TurnCheckpoints:
    def __init__(self, directory: Path, workspace: Path, env: Mapping[str, str], run_id: str):
        self.directory, self.workspace, self.env, self.run_id = directory, workspace, env, run_id
        self.taken = False  # the `before` checkpoint was tried

    async def before_change(self) -> None:
        if not self.taken:
            self.taken = True
            await anyio.to_thread.run_sync(self._before)

    def after_turn(self) -> None:
        if self.taken:
            self._store().take_later(self.run_id, "after")

    def _before(self) -> None:
        try:
            self._store().take(self.run_id, "before")
        except (OSError, ValueError):
            absorbed("the before checkpoint of a turn")

    def _store(self) -> "CheckpointStore":
        from magi_code.checkpoints.store import CheckpointStore

        return CheckpointStore(self.directory, self.workspace, self.env)
