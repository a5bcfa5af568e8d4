"""Where the user's own commands start: a global MCP stdio server or a global hook never starts
from an untrusted folder's code.

- The working folder is the one the definition names (`cwd`, absolute), else, for a
  definition the global settings made, a neutral folder of its own under MC_HOME
  (`MC_HOME/run/<kind>/<name>`, 0700); a trusted project's own definitions keep the
  workspace. So `python -m module` imports nothing from the workspace and `npx pkg` finds no
  workspace `node_modules` first.
- The program: an absolute path is itself; a relative one with a slash is taken from that
  folder; a bare name is looked up on PATH's absolute entries only (`PATH=.:...` adds
  nothing), and for a global definition never in one inside the workspace.
"""

import os
import shutil


def resolved_program(command: str, path: str | None, workspace: str | None = None) -> str:
    """The program `command` names, as absolute a path as can be had (see the module rules);
    `command` itself when nothing on PATH has it (starting it then fails)."""
    if "/" in command:
        return command
    entries = [
        entry
        for entry in (path or "").split(os.pathsep)
        if os.path.isabs(entry) and not (workspace and _inside(os.path.realpath(entry), workspace))
    ]
    found = shutil.which(command, path=os.pathsep.join(entries)) if entries else None
    return found or command


def working_folder(
    defined: str | None, project: bool, workspace: str, home: str, place: str
) -> str:
    """Where a command starts: `defined`, the workspace for a trusted project's own
    definition, else its neutral folder MC_HOME/run/<place> (made, 0700)."""
    if defined:
        return defined
    if project:
        return workspace
    folder = os.path.join(home, "run", place)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
