"""The one argument parser of every command but `serve --stdio` (argparse, DESIGN rule 12),
and the one way a bad command line is said. `serve --stdio` keeps its hand-checked launch and
never imports this module (nor argparse).

Rules:
- `-h`/`--help` prints the command's own help on stdout; `parse` then returns None (exit 0).
- A bad command line raises UsageError: one line on stderr naming what is wrong and pointing
  to the command's `--help`, never the usage dump; the command exits 2.
- No abbreviations (`--mod` is not `--model`), and each option at most once unless it is
  declared `append`: a repeated option is refused, never "the last one wins".
- An unknown option is named, with the closest known one, when it is a plain option word
  (`OPTION_WORD`); anything else is not echoed. A stray positional word is never echoed
  either: it may be a prompt or a key. Values argparse quotes in its own messages (a bad
  choice) come escaped by `repr`.
"""

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

# An option word that may be named back to the person who typed it: short, plain ASCII.
OPTION_WORD = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
# A subcommand word argparse refused (quoted by repr), when it may be named back.
COMMAND_WORD = re.compile(r"invalid choice: '([a-z][a-z0-9-]{0,31})'")
# How alike a typed word and a known name must be (difflib's ratio) to be offered as a fix.
CLOSE_ENOUGH = 0.7


class UsageError(Exception):
    """A command line that cannot run: `what` is wrong, said for `prog` (exit 2)."""

    def __init__(self, what: str, prog: str = "magi-code", *, pointer: bool = True) -> None:
        super().__init__(what)
        self.what, self.prog, self.pointer = what, prog, pointer

    def line(self) -> str:
        """The line for stderr; `pointer`: with where the help is (False when `what` names
        the command to run instead)."""
        said = f"{self.prog}: {self.what}"
        return f"{said} (see `{self.prog} --help`)" if self.pointer else said


def refused(bad: UsageError) -> int:
    """Say a UsageError on stderr; the exit status of a bad command line."""
    sys.stderr.write(bad.line() + "\n")
    return 2


def closest(word: str, known: Sequence[str]) -> str | None:
    found = difflib.get_close_matches(word, known, 1, CLOSE_ENOUGH)
    return found[0] if found else None


class Parser(argparse.ArgumentParser):
    """argparse, held to the rules above. `stray` says what is wrong with a positional word
    beyond those declared (e.g. "give exactly one PROMPT, quoted")."""

    def __init__(self, prog: str, *, stray: str = "unexpected argument", **kwargs: Any) -> None:
        super().__init__(
            prog=prog,
            allow_abbrev=False,
            exit_on_error=False,
            add_help=False,
            formatter_class=Help,
            **kwargs,
        )
        self.stray = stray
        self.given: set[str] = set()
        self.register("action", None, StoreOnce)  # what add_argument uses without `action`
        self.register("action", "store", StoreOnce)
        self.register("action", "store_true", FlagOnce)
        self._positionals.title = "arguments"
        self.add_argument("-h", "--help", action="help", help="show this help and exit")

    def run_choices(
        self,
        approval_modes: Sequence[str],
        sandbox_modes: Sequence[str],
        *,
        approval_dest: str = "approval_mode",
    ) -> None:
        """The options every command that runs turns takes, said alike everywhere: the model,
        the provider, the agent profile, the approval mode and the sandbox."""
        self.add_argument("-m", "--model", metavar="NAME", help="the model to use")
        self.add_argument(
            "--provider", metavar="NAME", help="the provider to use (`magi-code models` lists them)"
        )
        self.add_argument("--agent", metavar="NAME", help="the agent profile to use")
        self.add_argument(
            "--approval-mode",
            dest=approval_dest,
            choices=approval_modes,
            metavar="MODE",
            help="ask, edits, full or auto (default: the approval_mode setting)",
        )
        self.add_argument(
            "--sandbox",
            choices=sandbox_modes,
            metavar="MODE",
            help="read-only, workspace-write or full-access (default: [sandbox] mode)",
        )

    def format_help(self) -> str:
        self._optionals._group_actions.sort(key=lambda action: "-h" in action.option_strings)
        return super().format_help()

    def parse(self, argv: Sequence[str]) -> argparse.Namespace | None:
        """The options, or None once `-h` printed the help; raises UsageError."""
        try:
            return self.parse_known_args(list(argv))[0]
        except SystemExit as stop:  # argparse's help action, once it printed the help
            if stop.code not in (0, None):
                raise
            return None

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse's, but nothing is left unknown: a subcommand's parser refuses its own
        strays, under its own name."""
        self.given = set()
        try:
            parsed, extra = super().parse_known_args(args, namespace)
        except argparse.ArgumentError as bad:
            raise UsageError(self.explain(bad), self.prog) from None
        if extra:
            raise UsageError(self.unknown(extra[0]), self.prog)
        return parsed, extra

    def error(self, message: str) -> NoReturn:
        """What argparse says without an ArgumentError: a required argument is missing."""
        missing = message.partition("the following arguments are required: ")[2]
        raise UsageError(f"missing {missing}" if missing else "not a valid command line", self.prog)

    def explain(self, bad: argparse.ArgumentError) -> str:
        full, message = bad.argument_name or "an argument", bad.message
        action, name = self.action_named(full), full.rpartition("/")[2]  # -m/--model: --model
        if message.startswith("invalid choice") and isinstance(action, argparse._SubParsersAction):
            return self.unknown_command(message, list(action.choices))
        if message.startswith("invalid choice") and action is not None and action.choices:
            return f"{name} takes {spoken([str(choice) for choice in action.choices])}"
        if message.startswith("expected"):
            return f"{name} needs a value"
        if message.startswith("invalid int value"):
            return f"{name} takes a whole number"
        if message.startswith("ignored explicit argument"):
            return f"{name} takes no value"
        if message == StoreOnce.TWICE:
            return f"{name} is given twice"
        if message.startswith("not allowed with argument "):
            return f"{name} and {message.rpartition(' ')[2]} exclude each other"
        return f"{name}: {message}"  # argparse quotes the value in it with repr

    def action_named(self, name: str) -> argparse.Action | None:
        for action in self._actions:
            names = ["/".join(action.option_strings), action.metavar, action.dest]
            if name in names:
                return action
        return None

    def unknown(self, word: str) -> str:
        if not (word.startswith("-") and len(word) > 1):
            return self.stray
        option = word.partition("=")[0]
        if not OPTION_WORD.fullmatch(option):
            return "unknown option"
        known = [string for action in self._actions for string in action.option_strings]
        near = closest(option, known)
        return f"unknown option {option}" + (f": did you mean {near}?" if near else "")

    def unknown_command(self, message: str, commands: list[str]) -> str:
        typed = COMMAND_WORD.match(message)  # argparse quotes the word with repr
        if typed is None:
            return f"unknown command: it is one of {spoken(commands)}"
        near = closest(typed[1], commands)
        return f"unknown command `{typed[1]}`" + (f": did you mean `{near}`?" if near else "")


class Help(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written (lines under 90 characters); options as `-m, --model NAME`,
    at most 100 columns wide."""

    def __init__(self, prog: str) -> None:
        import shutil

        columns = shutil.get_terminal_size().columns - 2
        super().__init__(prog, max_help_position=28, width=max(60, min(columns, 100)))

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if not action.option_strings or action.nargs == 0:
            return super()._format_action_invocation(action)
        value = self._format_args(action, self._get_default_metavar_for_optional(action))
        return f"{', '.join(action.option_strings)} {value}"


def spoken(words: Sequence[str]) -> str:
    """`a`, `a or b`, `a, b or c`."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


class StoreOnce(argparse.Action):
    """argparse's `store`, refused the second time it is given."""

    TWICE = "given twice"

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if option_string is not None:  # a positional is taken once by argparse itself
            given = parser.given if isinstance(parser, Parser) else set()
            if self.dest in given:
                raise argparse.ArgumentError(self, self.TWICE)
            given.add(self.dest)
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


class FlagOnce(StoreOnce):
    """argparse's `store_true`, refused the second time it is given."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        default: bool = False,
        required: bool = False,
        help: str | None = None,
    ) -> None:
        super().__init__(
            option_strings, dest, nargs=0, const=True, default=default, required=required, help=help
        )
