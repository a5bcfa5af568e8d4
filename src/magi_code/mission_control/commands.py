"""Slash commands and the keys: what a person can type besides a prompt. Pure.

A line is a command only when its first word is a known `/name`; anything else starting with
`/` is refused by name, so a mistyped command is never sent to the model as a prompt. A path
such as `/etc/hosts is odd` is not a command word (it has a second `/`), so it stays a prompt.
"""

from dataclasses import dataclass

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
    "fork": "copy the conversation so far into a new session and go on there",
    "mcp": "the MCP servers in use",
    "quit": "leave Mission Control",
    "exit": "leave Mission Control (as /quit)",
}
AT_ONCE = frozenset({"help", "status", "diff", "mcp", "quit", "exit"})  # even during a turn

KEYS: list[tuple[str, str]] = [
    ("Enter", "send; during a turn, queue it (sent when the turn ends)"),
    ("Up at an empty prompt", "take the last queued message back to edit or remove"),
    ("Shift+Enter, Alt+Enter, Ctrl+J", "new line"),
    ("Up / Down", "earlier prompts of this workspace (on the first / last line)"),
    ("Esc, Ctrl+C", "stop the running turn"),
    ("Ctrl+C twice, Ctrl+D", "quit (at an empty prompt)"),
    ("y / a / n", "an approval: allow once / allow for this session / deny"),
    ("!command", "run your own shell command (no approval; its output goes with your next prompt)"),
    ("@path", "Tab completes a file path of the workspace"),
]


INIT_PROMPT = (
    "Write a starter AGENTS.md at the root of this workspace with the write_file tool. Look "
    "around first (list_dir, read_file, grep). Say briefly what the project is, how to build, "
    "test and lint it (exact commands), its layout, and the conventions a coding agent must "
    "follow here. Keep it short and factual; if an AGENTS.md exists, improve it instead."
)


@dataclass(frozen=True)
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
    name = word.lower()
    return Command(name if name in COMMANDS else "", argument.strip(), word)


def help_text() -> str:
    lines = ["Commands:"]
    lines += [f"  /{name:<12} {what}" for name, what in COMMANDS.items()]
    lines += ["", "Keys:"]
    lines += [f"  {key:<31} {what}" for key, what in KEYS]
    return "\n".join(lines)
