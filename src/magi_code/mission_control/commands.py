"""Slash commands and the keys: what a person can type besides a prompt. Pure.

A line is a command only when its first word is a known `/name`; anything else starting with
`/` is refused by name, so a mistyped command is never sent to the model as a prompt. A path
such as `/etc/hosts is odd` is not a command word (it has a second `/`), so it stays a prompt.
The connected MCP servers' prompts are commands too (`/mcp__SERVER__PROMPT`, mcp/prompts.py),
registered here at start and after `/mcp reconnect`.
"""

from collections.abc import Mapping

from magi_code.records import record

COMMANDS: dict[str, str] = {
    "help": "the keys and these commands",
    "new": "start a new session",
    "clear": "start a new conversation (as /new; the old one stays resumable)",
    "resume": "pick a stored session to continue",
    "model": "pick the model for this session",
    "compact": "summarize the earlier conversation now",
    "status": "provider, model, context, tokens, session, workspace, trust, MCP servers, "
    "instruction sources",
    "diff": "the workspace's git diff",
    "init": "ask the model to write a starter AGENTS.md for this workspace",
    "permissions": "approval mode: ask, edits (edits allowed) or full (all allowed)",
    "fork": "copy the conversation so far and its checkpoints into a new session; go on there",
    "rewind": "go back to before an earlier turn: its code, the conversation, or both",
    "mcp": "the MCP servers: state, tools, prompts; /mcp reconnect NAME connects one again",
    "quit": "leave Mission Control",
    "exit": "leave Mission Control (as /quit)",
}
AT_ONCE = frozenset({"help", "status", "diff", "mcp", "quit", "exit"})  # even during a turn
PROMPT_PREFIX = "mcp__"  # an MCP server's prompt as a command

KEYS: list[tuple[str, str]] = [
    ("Enter", "send; during a turn, queue it (sent when the turn ends)"),
    ("Up at an empty prompt", "take the last queued message back to edit or remove"),
    ("Shift+Enter, Alt+Enter, Ctrl+J", "new line"),
    ("\\ then Enter", "new line (the backslash goes)"),
    ("Ctrl+R", "search earlier prompts of this workspace; Enter puts one in the editor"),
    ("/", "the commands, filtered as you type: Tab or Enter completes, Esc closes"),
    ("Up / Down", "earlier prompts of this workspace (on the first / last line)"),
    ("Esc, Ctrl+C", "stop the running turn"),
    ("Esc Esc", "no turn running: rewind (as /rewind)"),
    ("Ctrl+C twice, Ctrl+D", "quit (at an empty prompt)"),
    ("y / a / n", "an approval: allow once / allow for this session / deny"),
    ("Shift+Tab", "focus the newest card (again: the one before)"),
    ("Enter or a click on a card", "expand or collapse it; the keys go back to the prompt"),
    ("!command", "run your own shell command (no approval; its output goes with your next prompt)"),
    ("@", "the workspace's files (not ignored ones), fuzzy: Tab or Enter takes one"),
    ("@path", "with no list open, Tab completes a file path of the workspace"),
    ("a large paste", "shown as [Pasted text #N, L lines]; all of it is sent"),
    ("@SERVER:URI", "attach that MCP server's resource to the prompt (/mcp lists servers)"),
]


INIT_PROMPT = (
    "Write a starter AGENTS.md at the root of this workspace with the write_file tool. Look "
    "around first (list_dir, read_file, grep). Say briefly what the project is, how to build, "
    "test and lint it (exact commands), its layout, and the conventions a coding agent must "
    "follow here. Keep it short and factual; if an AGENTS.md exists, improve it instead."
)


@record
class Command:
    name: str  # "" for an unknown command
    argument: str
    word: str  # what was typed, for "unknown command /x"


def parse(line: str) -> Command | None:
    """The command on a line, or None when the line is a prompt."""
    text = line.strip()
    if not text.startswith("/"):
        return None
    word, _, argument = text[1:].partition(" ")
    if "/" in word or "\n" in word:
        return None
    name = word if word in COMMANDS else word.lower()
    return Command(name if name in COMMANDS else "", argument.strip(), word)


def set_prompt_commands(described: Mapping[str, str]) -> None:
    """Make the connected MCP servers' prompts commands (name: description), in place of
    those registered before."""
    for name in [name for name in COMMANDS if name.startswith(PROMPT_PREFIX)]:
        del COMMANDS[name]
    COMMANDS.update(described)


def help_text() -> str:
    lines = ["Commands:"]
    lines += [f"  /{name:<12} {what}" for name, what in COMMANDS.items()]
    lines += ["", "Keys:"]
    lines += [f"  {key:<31} {what}" for key, what in KEYS]
    return "\n".join(lines)
