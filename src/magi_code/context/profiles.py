"""Agent profiles: who the model is told it is, which tools it is offered, under what rules.

A profile is MC_HOME/agents/<name>.md or, only in a trusted workspace,
<root>/.magi-code/agents/<name>.md. A project profile shadows a global one (with a notice); a
file named like a built-in replaces it (the way to change `default`). Front matter, all optional:
  description  text
  mode         primary | subagent | all (default all)
  model, provider, thinking   text; applied when the profile is the selected primary
  tools        allow-list of tool names, fnmatch globs allowed (list, or a string of names
               separated by spaces or commas); absent means every tool
  permissions  list of rules that can only narrow the global policy, each
               `ask|deny TOOL [PATH-GLOB]`, or `ask|deny shell COMMAND-PATTERN...`
  disabled     true | false
  code_mode    true | false: offer the `code` tool (absent: the `code_mode` setting decides)
The body is the profile's instructions. A file without front matter is all body (mode all).
A profile file is read only when it is a regular file inside its root (confined.py): MC_HOME
for a global one, the repository root for a project one; a link leading out of it, a FIFO or a
device is a malformed profile (a notice, or ProfileError when it is the selected primary).

Names are lowercase letters, digits, `-` and `_`, at most PROFILE_NAME_CHARS. Startup reads
front matter only; the selected primary's body is read then, other bodies on demand.
Primary selection (`--agent`, else the `agent` setting, else `default`) refuses a missing,
disabled, subagent-only or malformed profile with `ProfileError` and a precise message.
"""

from __future__ import annotations

import codecs
import os

from magi_code.context import ContextError, frontmatter
from magi_code.context.confined import Refused, open_confined
from magi_code.limits import INSTRUCTION_FILE_BYTES, PROFILE_NAME_CHARS, PROFILES_SCANNED
from magi_code.records import KW_ONLY, record

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from magi_code.context import ContextCode

MODES = ("primary", "subagent", "all")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
_FIELDS = frozenset(
    {
        "description",
        "mode",
        "model",
        "provider",
        "thinking",
        "tools",
        "permissions",
        "disabled",
        "code_mode",
    }
)

DEFAULT_BODY = (
    "You are magi-code, a coding agent working in the user's workspace. Use the tools to "
    "read, search and change files and to run commands. Be concise and exact."
)
EXPLORE_BODY = (
    "You are an exploring subagent of magi-code. Read and search the workspace to answer the "
    "question you were given; change nothing. Report what you found, with paths, concisely."
)
GENERAL_BODY = (
    "You are a subagent of magi-code working on one task for a parent agent. Do the task with "
    "the tools you have and report the result concisely."
)


class ProfileError(ContextError):
    """The selected primary cannot be used; the message says precisely why (no file text)."""

    code: ContextCode = "profile_invalid"


@record
class Profile:
    name: str
    origin: str  # the file, or "built-in"
    _: KW_ONLY
    description: str = ""
    mode: str = "all"
    model: str | None = None
    provider: str | None = None
    thinking: str | None = None
    tools: tuple[str, ...] | None = None
    permissions: tuple[dict[str, str], ...] = ()
    disabled: bool = False
    code_mode: bool | None = None  # None: the setting decides
    body: str | None = None  # built-ins carry it; files are read on demand
    offset: int = 0  # where a file's body starts
    root: str | None = None  # the folder a file must stay inside (None: any folder)


BUILTINS = {
    "default": Profile(
        "default", "built-in", description="The coding agent.", mode="primary", body=DEFAULT_BODY
    ),
    "explore": Profile(
        "explore",
        "built-in",
        description="Read-only exploration: read, list, glob and grep; changes nothing.",
        mode="subagent",
        tools=("read_file", "list_dir", "glob", "grep"),
        body=EXPLORE_BODY,
    ),
    "general": Profile(
        "general",
        "built-in",
        description="A general subagent with the parent's tools.",
        mode="subagent",
        body=GENERAL_BODY,
    ),
}


def valid_name(name: str) -> bool:
    return 0 < len(name) <= PROFILE_NAME_CHARS and set(name) <= _NAME_CHARS


def read_profile(path: str, name: str, root: str | None = None) -> Profile:
    """The profile in `path` (a regular file inside `root`) from its front matter; ValueError
    says what is wrong."""
    try:
        fields, offset = frontmatter.read_head(path, root)
    except Refused as refused:
        raise ValueError(refused.problem) from None
    except frontmatter.FrontMatterError as exc:
        raise ValueError(exc.problem) from None
    except UnicodeDecodeError:
        raise ValueError("front matter is not UTF-8") from None
    except OSError:
        raise ValueError("unreadable") from None
    if fields is None:
        return Profile(name, path, root=root)
    unknown = sorted(set(fields) - _FIELDS)
    if unknown:
        raise ValueError(f"unknown field {unknown[0]}")
    mode = _text(fields, "mode") or "all"
    if mode not in MODES:
        raise ValueError("mode must be primary, subagent or all")
    disabled = _text(fields, "disabled") or "false"
    if disabled not in ("true", "false"):
        raise ValueError("disabled must be true or false")
    code_mode = _text(fields, "code_mode")
    if code_mode not in (None, "true", "false"):
        raise ValueError("code_mode must be true or false")
    return Profile(
        name,
        path,
        description=_text(fields, "description") or "",
        mode=mode,
        model=_text(fields, "model"),
        provider=_text(fields, "provider"),
        thinking=_text(fields, "thinking"),
        tools=_tools(fields.get("tools")),
        permissions=tuple(_rule(r) for r in _items(fields.get("permissions"), "permissions")),
        disabled=disabled == "true",
        code_mode=None if code_mode is None else code_mode == "true",
        offset=offset,
        root=root,
    )


def _text(fields: dict[str, frontmatter.Value], key: str) -> str | None:
    value = fields.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key} must be text")
    return value


def _items(value: object, key: str) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [value]
    raise ValueError(f"{key} must be a list")


def _tools(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return tuple(value.replace(",", " ").split())
    if isinstance(value, list):
        return tuple(value)
    raise ValueError("tools must be a list of tool names")


def _rule(text: str) -> dict[str, str]:
    """`ask|deny TOOL [PATH-GLOB]` or `ask|deny shell COMMAND...` as a policy rule table."""
    words = text.split()
    if len(words) < 2 or words[0] not in ("ask", "deny"):
        raise ValueError("a permissions rule is `ask|deny TOOL [PATH]`: it may only narrow")
    rule = {"decision": words[0], "tool": words[1]}
    if len(words) > 2 and words[1] == "shell":
        rule["command"] = text.split(None, 2)[2]
    elif len(words) == 3:
        rule["path"] = words[2]
    elif len(words) > 3:
        raise ValueError("a permissions rule is `ask|deny TOOL [PATH]`")
    return rule


def scan(base: str, notices: list[str]) -> dict[str, str]:
    """name -> path of every profile file under `base` (absent is empty); no file is read."""
    try:
        with os.scandir(base) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".md"))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError:
        notices.append(f"{base}: agents folder unreadable")
        return {}
    if len(names) > PROFILES_SCANNED:
        notices.append(f"{base}: more than {PROFILES_SCANNED} profiles; the rest are ignored")
        names = names[:PROFILES_SCANNED]
    found = {}
    for file_name in names:
        name = file_name[:-3]
        if valid_name(name):
            found[name] = os.path.join(base, file_name)
        else:
            notices.append(f"{os.path.join(base, file_name)}: profile skipped: not a profile name")
    return found


class Profiles:
    """Every profile one process can use: built-ins, then global, then project files."""

    def __init__(
        self, home: str, root: str, trusted: bool, disabled: list[str], notices: list[str]
    ):
        self.files = scan(os.path.join(home, "agents"), notices)
        self.roots = dict.fromkeys(self.files, home)  # the folder each file must stay inside
        if trusted:
            for name, path in scan(os.path.join(root, ".magi-code", "agents"), notices).items():
                if name in self.files:
                    notices.append(f"agent {name}: {path} shadows {self.files[name]}")
                self.files[name], self.roots[name] = path, root
        self.disabled = frozenset(disabled)
        self.notices = notices
        self._subagents: list[Profile] | None = None

    def get(self, name: str) -> Profile:
        """The profile called `name`; ProfileError when there is none or it is malformed."""
        path = self.files.get(name)
        if path is None:
            if name in BUILTINS:
                return BUILTINS[name]
            raise ProfileError(f"agent profile {name!r} not found")
        try:
            return read_profile(path, name, self.roots[name])
        except ValueError as exc:
            raise ProfileError(f"agent profile {path}: {exc}") from None

    def primary(self, name: str, *, subagent: bool = False) -> Profile:
        """The profile a process runs as: a primary one, or (a subagent's process) one
        offered to subagents."""
        if not valid_name(name):
            raise ProfileError("agent profile name must be lowercase letters, digits, - and _")
        profile = self.get(name)
        if profile.disabled or name in self.disabled:
            raise ProfileError(f"agent profile {name!r} is disabled")
        if profile.mode == "subagent" and not subagent:
            raise ProfileError(f"agent profile {name!r} is a subagent only")
        if profile.mode == "primary" and subagent:
            raise ProfileError(f"agent profile {name!r} is not a subagent profile")
        return profile

    def subagents(self) -> list[Profile]:
        """Subagent profiles to offer (mode subagent or all), enabled ones only; a malformed
        file is a notice. Read once, at startup: the snapshot does not change afterwards."""
        if self._subagents is None:
            self._subagents = []
            for name in sorted({*BUILTINS, *self.files}):
                try:
                    profile = self.get(name)
                except ProfileError as exc:
                    self.notices.append(str(exc))
                    continue
                if profile.mode != "primary" and not profile.disabled and name not in self.disabled:
                    self._subagents.append(profile)
        return self._subagents


def load_body(profile: Profile) -> tuple[str, bool]:
    """The profile's instructions (at most INSTRUCTION_FILE_BYTES, cut on a character) and
    whether they were cut. ProfileError when the file cannot be read."""
    if profile.body is not None:
        return profile.body, False
    try:
        with open_confined(profile.origin, profile.root) as handle:
            handle.seek(profile.offset)
            data = handle.read(INSTRUCTION_FILE_BYTES + 1)
        cut = len(data) > INSTRUCTION_FILE_BYTES
        decoder = codecs.getincrementaldecoder("utf-8")()
        return decoder.decode(data[:INSTRUCTION_FILE_BYTES], final=not cut), cut
    except Refused as refused:
        raise ProfileError(f"agent profile {profile.origin}: {refused.problem}") from None
    except (OSError, UnicodeDecodeError):
        raise ProfileError(f"agent profile {profile.origin}: unreadable body") from None
