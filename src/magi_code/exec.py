"""`magi-code exec`: one turn without a terminal, for scripts and CI.

It admits the process as every face does (settings, trust, instructions, skills, profiles,
MCP), attaches a new or continued session and runs one prompt through the runner's one entry,
`start_turn`. It never prompts: approvals are answered by `--approval-mode`
(tools/approval_modes.py), and each refusal is said in a `diagnostic`.

Output. stdout carries the answer only: the final assistant text, or with `--json` one JSON
object per line, `{"event": NAME, "data": {...}}` (the local agent's event names and shapes,
runner/event_data.py) after one `session` line, and exec's own beside them: `tool.output` (a
tool call's output, redacted, bounded), `turn.usage` (the turn's tokens), `plan.updated` (the
plan `update_plan` set, redacted), `tool.progress` (a running MCP call's progress, rate
bound) and `approval.granted_by_mode` (`--approval-mode` allowed an action nobody was asked
about). Nobody answers an MCP server's question here: it is declined (mcp/elicitation.py).
The real stdout is moved to a private descriptor at startup and fd 1 points at stderr, so no
library print and no tool process can write to it.
Progress, warnings and errors go to stderr.

Exit codes: 0 completed, 1 failed (or cancelled for another reason), 2 bad usage or a failed
startup (a message on stderr says what is wrong and what to do), 130 on SIGINT and 143 on
SIGTERM (the run is cancelled and its cancel recorded first), 141 when stdout is closed by its
reader (the run is cancelled as `output_unavailable`, and recorded so).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from magi_code import limits
from magi_code.arguments import Parser, UsageError, refused
from magi_code.records import field, field_names, record

if TYPE_CHECKING:
    from pathlib import Path

    from anyio.abc import TaskStatus

    from magi_code.providers.base import ImagePart
    from magi_code.runner.events import DetailEvent, MessageDelta, RunEvent, RunFinished
    from magi_code.runner.startup import Admitted, StartupError
    from magi_code.runner.turn import TurnControl
    from magi_code.sessions import Attachment, SessionStore
    from magi_code.tools.approval_modes import Mode
    from magi_code.tools.approvals import ApprovalBroker
    from magi_code.tools.paths import Protected

    Images = tuple[ImagePart, ...]  # what --image attached to the prompt

DESCRIPTION = f"""\
Run one prompt without a terminal, for scripts and CI, and exit. The prompt is PROMPT, or
stdin with `-` (or with no PROMPT when stdin is not a terminal), at most
{limits.FACE_PROMPT_BYTES:,} bytes of UTF-8. stdout carries the answer only; progress and errors
go to stderr."""
EPILOG = """\
approval modes (nobody can be asked):
  ask    refuse what needs approval, and say so (the default)
  edits  allow file edits inside this folder
  full   allow everything the permission rules would ask about
  auto   allow what the OS sandbox contains (shell commands, and edits inside this folder
         in workspace-write); refuse the rest
deny rules and protected paths hold in every mode; without --approval-mode, the
`approval_mode` setting (ask or auto) decides.

exit codes: 0 completed, 1 failed, 2 bad usage or startup failure, 130 interrupted
(143 terminated), 141 stdout closed by its reader"""

EXIT_COMPLETED, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_SIGNAL_BASE = 128
EXIT_BROKEN_PIPE = EXIT_SIGNAL_BASE + signal.SIGPIPE
STARTUP_HINTS = {
    "configuration_invalid": "the settings are not valid: check {settings} and "
    ".magi-code/settings.toml in this folder",
    "profile_invalid": "the agent profile is not valid",
    "mcp_unavailable": "an enabled MCP server could not start: check it, or disable it in "
    "the settings",
    "startup_failed": "MC_HOME ({home}) could not be prepared: check that it is writable",
    "startup_cancelled": "startup was interrupted",
}
SESSION_HINTS = {
    "session_missing": "no such session: see `magi-code sessions list`",
    "session_busy": "the session is in use by another magi-code process",
    "session_invalid": "the session file cannot be read",
    "history_limit": "the session's history is too large to continue",
    "cwd_mismatch": "the session belongs to another folder: run from that folder",
}


@record(frozen=False)
class Options:
    prompt: str | None = None  # the PROMPT argument, "-" for stdin
    json: bool = False
    mode: Mode | None = None  # None: the `approval_mode` setting's
    sandbox: str | None = None
    continue_latest: bool = False
    session: str | None = None
    model: str | None = None
    provider: str | None = None  # None: the `provider` setting's
    agent: str | None = None
    images: list[str] = field(default_factory=list)  # --image PATH, in order
    max_rounds: int | None = None  # None: the `[turn] max_rounds` setting's
    skip_failed_mcp: bool = False  # an MCP server that fails to start is left out, with a warning


PROG = "magi-code exec"


def parser() -> Parser:
    from magi_code.tools.approval_modes import MODES
    from magi_code.tools.sandbox.settings import MODES as SANDBOX_MODES

    parsing = Parser(
        PROG,
        usage=f"{PROG} [OPTIONS] [PROMPT | -]",
        description=DESCRIPTION,
        epilog=EPILOG,
        stray="give exactly one PROMPT, quoted",
    )
    parsing.add_argument("prompt", nargs="?", metavar="PROMPT", help="the prompt; - reads stdin")
    parsing.add_argument(
        "--json",
        action="store_true",
        help="print JSON Lines on stdout: a `session` line, then one per run event",
    )
    parsing.add_argument(
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="continue the latest session of this folder",
    )
    parsing.add_argument(
        "--session", metavar="ID", help="continue session ID (see `magi-code sessions list`)"
    )
    parsing.run_choices(MODES, SANDBOX_MODES, approval_dest="mode")
    parsing.add_argument(
        "-i",
        "--image",
        dest="images",
        action="append",
        default=[],
        metavar="PATH",
        help="attach the image at PATH to the prompt (repeatable)",
    )
    parsing.add_argument(
        "--max-rounds",
        type=_rounds,
        metavar="N",
        help="model requests one turn may make before it stops (default: [turn] max_rounds, "
        f"else {limits.TURN_MODEL_ROUNDS})",
    )
    parsing.add_argument(
        "--skip-failed-mcp",
        action="store_true",
        help="continue without an MCP server that fails to start (a warning names it)",
    )
    return parsing


def _rounds(text: str) -> int:
    from argparse import ArgumentTypeError

    if not text.isdigit() or int(text) < 1:
        raise ArgumentTypeError("needs a whole number above 0")
    return int(text)


def parse(args: list[str]) -> Options | None:
    """`exec` options, or None once -h printed the help; raises UsageError. `--` ends the
    options (a prompt may start with -)."""
    parsed = parser().parse(args)
    if parsed is None:
        return None
    options = Options(**{name: getattr(parsed, name) for name in field_names(Options)})
    for name in ("session", "model", "provider", "agent"):
        if getattr(options, name) == "":
            raise UsageError(f"--{name} needs a value", PROG)
    if options.continue_latest and options.session is not None:
        raise UsageError("--continue and --session exclude each other", PROG)
    return options


def read_prompt(argument: str | None) -> str:
    """The prompt from the argument or stdin, within FACE_PROMPT_BYTES; raises UsageError."""
    if argument is not None and argument != "-":
        data = argument.encode("utf-8", "surrogateescape")
    elif argument is None and os.isatty(0):
        raise UsageError("give a PROMPT, or pipe one on stdin", PROG)
    else:
        data = _read_stdin(limits.FACE_PROMPT_BYTES + 1)
    if len(data) > limits.FACE_PROMPT_BYTES:
        raise UsageError(
            f"the prompt is over {limits.FACE_PROMPT_BYTES:,} bytes: shorten it (nothing was run)",
            PROG,
        )
    try:
        prompt = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("the prompt is not valid UTF-8", PROG) from None
    if not prompt.strip():
        raise UsageError("the prompt is empty", PROG)
    return prompt


def read_images(paths: list[str]) -> Images:
    """The images `--image` names, each within the bounds of tools/images.py; raises
    UsageError saying which one (by its place: the path is the user's own text) and why."""
    if not paths:
        return ()
    from pathlib import Path

    from magi_code.tools.images import ImageRefused, read_image
    from magi_code.tools.limits import PROMPT_IMAGES

    if len(paths) > PROMPT_IMAGES:
        raise UsageError(f"at most {PROMPT_IMAGES} --image options", PROG)
    images = []
    for number, path in enumerate(paths, 1):
        which = f"--image number {number}"
        try:
            images.append(read_image(Path(path)))
        except ImageRefused as not_sent:
            raise UsageError(f"{which} cannot be sent: {not_sent.why}", PROG) from None
        except OSError:
            raise UsageError(f"{which} cannot be read: not found, or not a file", PROG) from None
    return tuple(images)


def _read_stdin(most: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < most:
        try:
            chunk = os.read(0, min(65_536, most - size))
        except OSError:
            raise UsageError("stdin cannot be read", PROG) from None
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


class Output:
    """The real stdout, moved to a private descriptor; it breaks once, for good."""

    def __init__(self) -> None:
        from magi_code.stdio import private_stdout

        self.fd = private_stdout()
        self.broken = False

    def write(self, data: bytes) -> bool:
        view = memoryview(data)
        try:
            while view and not self.broken:
                view = view[os.write(self.fd, view) :]
        except OSError:  # EPIPE above all: the reader has gone
            self.broken = True
        return not self.broken

    def line(self, name: str, data: dict[str, Any]) -> bool:
        text = json.dumps({"event": name, "data": data}, ensure_ascii=False) + "\n"
        return self.write(text.encode("utf-8", "surrogatepass"))


def say(message: str) -> None:
    """A line on stderr; a closed stderr is no reason to stop."""
    try:
        sys.stderr.write(f"magi-code exec: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # AttributeError: no fd 2 at start
        pass


class ExecEmitter:
    """Run events to stdout (JSON Lines, or the final text) and progress to stderr."""

    def __init__(
        self, out: Output, options: Options, control: TurnControl, rules: tuple[Path, Protected]
    ) -> None:
        self.out, self.options, self.control = out, options, control
        self.workspace, self.protected = rules  # what --approval-mode answers against
        self.session_id = self.run_id = ""
        self.broker: ApprovalBroker | None = None
        self.final: dict[int, str] = {}  # the last reconciled message, by part
        self.final_id: str | None = None

    def _line(self, event: RunEvent) -> bool:
        from magi_code.runner.event_data import event_data

        return self.out.line(*event_data(event, self.session_id, self.run_id))

    def delta(self, event: MessageDelta) -> None:
        if self.options.json and not self._line(event):
            self.control.cancel("output_unavailable")

    async def critical(self, event: RunEvent) -> None:
        from magi_code.runner.events import Activity, Diagnostic, MessageReconcile
        from magi_code.runner.turn import OutputUnavailable

        if self.options.json:
            if not self._line(event):
                raise OutputUnavailable
        elif isinstance(event, Activity):
            say(f"[{event.name} {event.state}] {event.summary}")
        elif isinstance(event, Diagnostic):
            say(f"{event.code}: {event.detail or event.summary}")
        if self.options.json and isinstance(event, Diagnostic) and event.detail:
            say(f"{event.code}: {event.detail}")  # for the person: stdout keeps the summary
        if isinstance(event, MessageReconcile):
            if event.message_id != self.final_id:
                self.final_id, self.final = event.message_id, {}
            self.final[event.part] = event.text

    async def detail(self, event: DetailEvent) -> None:
        """A tool call's output, the turn's usage, each plan and a running call's progress:
        `tool.output`, `turn.usage`, `plan.updated` and `tool.progress` lines with --json (the
        output and the plan redacted); nothing without."""
        from magi_code.runner.event_data import detail_data

        if self.options.json:
            self._extra(*detail_data(event))

    def _extra(self, name: str, data: dict[str, Any]) -> None:
        """A line of exec's own beside the run events, with the session and run ids."""
        from magi_code.runner.turn import OutputUnavailable

        ids = {"session_id": self.session_id, "run_id": self.run_id}
        if not self.out.line(name, {**ids, **data}):
            raise OutputUnavailable

    async def announce(self, approval_id: str, summary: str, expires_in_ms: int) -> None:
        """Nobody can be asked: the mode answers at once, and a refusal is said."""
        from magi_code.runner.events import ApprovalRequested, Diagnostic
        from magi_code.tools.approval_modes import refusal

        assert self.broker is not None
        await self.critical(ApprovalRequested(approval_id, summary, expires_in_ms))
        mode, asked = self.options.mode or "ask", self.broker.asked(approval_id)
        why = refusal(mode, asked, self.workspace, self.protected)
        if why is not None:
            said = f"refused without asking (--approval-mode {mode}): {summary}; {why}"
            await self.critical(Diagnostic("approval_denied", said))
        elif self.options.json:  # the mode answered, not a person: say so
            granted = {"approval_id": approval_id, "mode": mode, "summary": summary}
            self._extra("approval.granted_by_mode", granted)
        self.broker.answer(approval_id, why is None)

    def final_text(self) -> str:
        return "".join(self.final[part] for part in sorted(self.final))


def run_and_exit(args: list[str]) -> NoReturn:
    """`main`, then exit at once: by then every session, server and client this process
    opened is closed and its output written, and the interpreter's teardown of the runner's
    few hundred modules would cost more than the turn itself."""
    code = main(args)
    if (checkpoints := sys.modules.get("magi_code.checkpoints.store")) is not None:
        checkpoints.settle_all(None)  # the last turn's `after` checkpoint, taken in a thread
    for stream in (sys.stdout, sys.stderr):  # None when the descriptor was closed at start
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(code)


def main(args: list[str]) -> int:
    # Startup allocates many long-lived objects (modules, classes) and no garbage: collect
    # nothing until the runner is loaded, then freeze them out of later collections.
    gc.disable()
    try:
        return _main(args)
    finally:
        gc.enable()


def _main(args: list[str]) -> int:
    try:
        options = parse(args)
        if options is None:
            return EXIT_COMPLETED
        prompt = read_prompt(options.prompt)
        images = read_images(options.images)
    except UsageError as bad:
        return refused(bad)
    except KeyboardInterrupt:
        return EXIT_SIGNAL_BASE + signal.SIGINT
    try:
        out = Output()
    except OSError:  # no fd 1 at all
        say("stdout is closed: give it somewhere to go (a file, a pipe or /dev/null)")
        return EXIT_USAGE
    try:
        return start(options, prompt, out, images)
    except KeyboardInterrupt:  # before the run could take the signal over
        return EXIT_SIGNAL_BASE + signal.SIGINT


def start(options: Options, prompt: str, out: Output, images: Images = ()) -> int:
    from magi_code.runner.startup import StartupError, admit
    from magi_code.tools.sandbox.settings import MODE_ENV

    env = dict(os.environ)
    if options.sandbox is not None:
        env[MODE_ENV] = options.sandbox
    try:
        admitted = admit(
            os.getcwd(), env, agent=options.agent, skip_failed_mcp=options.skip_failed_mcp
        )
    except StartupError as failed:
        return startup_failed(failed)
    except Exception:  # noqa: BLE001 - a bug in startup: said in one line, never a traceback
        from magi_code import debug

        debug.absorbed("exec startup")
        say("startup failed: startup_failed: an internal error (MC_DEBUG_STDERR=1 shows it)")
        return EXIT_USAGE
    for dropped in admitted.dropped:
        say(dropped.warning())
    for notice in admitted.notices:
        say(notice)
    for server, reason in (admitted.mcp.failed if admitted.mcp is not None else {}).items():
        say(f"warning: continuing without MCP server {server!r}: {_one_line(reason)}")
    if options.max_rounds is not None:  # the command line over the settings
        admitted.settings["turn"] = {
            **admitted.settings.get("turn", {}),
            "max_rounds": options.max_rounds,
        }
    try:
        if "@" in prompt:  # `@SERVER:URI` mentions: the MCP resources attached, or no run
            from magi_code.mcp.errors import NotSent
            from magi_code.mcp.mentions import attach

            try:
                prompt, mentioned = attach(admitted.mcp, prompt, len(images))
            except NotSent as refused:
                say(f"{refused.why} Nothing was run.")
                return EXIT_USAGE
            images = (*images, *mentioned)
        return attach_and_run(admitted, options, prompt, out, images)
    finally:
        if admitted.mcp is not None:
            admitted.mcp.close(limits.CLEANUP_WAIT_MS / 1000)


def startup_failed(failed: StartupError) -> int:
    """Say the code, the settings key at fault (SettingsError's fixed phrase) or the detail,
    and what to do."""
    from magi_code.config import paths
    from magi_code.config.settings import SettingsError

    home = paths.resolve_home(os.environ)
    hint = STARTUP_HINTS.get(failed.code, "").format(settings=paths.Paths(home).settings, home=home)
    cause = failed.__cause__
    detail = failed.detail or (str(cause) if isinstance(cause, SettingsError) else None)
    if failed.code == "mcp_unavailable" and detail:  # the server and why, then the way on
        hint, detail = "", f"{detail}\n(--skip-failed-mcp continues without it)"
    said = "; ".join(part for part in (hint, detail) if part)
    say(f"startup failed: {failed.code}: {said or 'see the settings'}")
    return EXIT_USAGE


def _one_line(reason: str) -> str:
    """A reason that may end with a server's stderr tail, on one line."""
    return " | ".join(line.strip() for line in reason.splitlines() if line.strip())


def attach_and_run(
    admitted: Admitted, options: Options, prompt: str, out: Output, images: Images = ()
) -> int:
    from pathlib import Path

    from magi_code.sessions import SessionError, SessionStore

    provider = options.provider or admitted.provider
    model = options.model or (
        admitted.model if provider == admitted.provider else first_model(admitted, provider)
    )
    thinking = admitted.thinking
    if not isinstance(admitted.settings.get("providers", {}).get(provider), dict):
        say("--provider names no configured provider: `magi-code login` lists the presets")
        return EXIT_USAGE
    if model is None:
        say("the provider lists no models: name one with --model (`magi-code models`)")
        return EXIT_USAGE
    if (options.model or options.provider) and not model_offered(admitted, provider, model):
        from magi_code.providers.known_models import refusal

        conf = admitted.settings["providers"][provider]
        say(refusal(provider, conf, model, admitted.paths.home) or "no such model")
        return EXIT_USAGE
    if provider == "fixture" and options.provider is None and not provider_chosen(admitted):
        say(
            "no provider is configured: using the built-in test model `fixture` (scripted "
            "answers, no AI); `magi-code login NAME` stores a key, `--provider NAME` or "
            '`provider = "NAME"` in the settings chooses one'
        )
    store = SessionStore(Path(admitted.paths.home))
    try:
        attachment = attach(store, admitted, options, (provider, model))
    except SessionError as failed:
        say(f"{failed.code}: {SESSION_HINTS.get(failed.code, 'the session cannot be used')}")
        return EXIT_USAGE
    except LookupError:
        say("no earlier session in this folder to continue: drop --continue to start one")
        return EXIT_USAGE
    saved = attachment.selection
    resumed = options.session is not None or options.continue_latest
    if (
        resumed
        and options.provider is None  # the command line's provider wins over the saved one
        and saved is not None
        and model_offered(admitted, saved.provider, saved.model)
    ):
        provider, model = saved.provider, options.model or saved.model
        thinking = saved.thinking
    try:
        import anyio

        chosen = (provider, model, thinking)
        return anyio.run(run, admitted, attachment, chosen, prompt, options, out, images)
    finally:
        attachment.close()


def attach(
    store: SessionStore, admitted: Admitted, options: Options, selected: tuple[str, str]
) -> Attachment:
    """A new session (with the `selected` provider and model), or the one asked for; raises
    SessionError, LookupError (none to continue)."""
    from magi_code.sessions import Selection, valid_session_id

    session_id = options.session
    if options.continue_latest:
        from magi_code.sessions.retention import latest_for

        session_id = latest_for(store.directory, admitted.cwd)
        if session_id is None:
            raise LookupError
    if session_id is None:
        selection = Selection(*selected, admitted.thinking)
        return store.create(admitted.cwd, selection)
    if not valid_session_id(session_id):
        from magi_code.sessions import SessionError

        raise SessionError("session_missing")
    return store.open(session_id, admitted.cwd)[0]


def provider_chosen(admitted: Admitted) -> bool:
    """Whether the global or the project settings name a `provider` (unreadable: yes, as
    startup admitted them). Both are read as startup reads them: a project file that is no
    regular file (a FIFO, a device) is never opened."""
    from magi_code.config import paths, settings

    for found, regular_only in (
        (admitted.paths.settings, False),
        (paths.project_settings(admitted.cwd), True),
    ):
        try:
            if "provider" in settings.read_toml(found, regular_only=regular_only):
                return True
        except settings.SettingsError:
            return True
    return False


def first_model(admitted: Admitted, provider: str) -> str | None:
    """The model of `--provider` without `--model`: a preset's default, else the first the
    provider's settings list (as Mission Control's --provider)."""
    from magi_code.providers.known_models import default_model

    conf = admitted.settings.get("providers", {}).get(provider)
    return default_model(provider, conf) if isinstance(conf, dict) else None


def model_offered(admitted: Admitted, provider: str, model: str) -> bool:
    """The one rule for a model name (providers/known_models.py), as startup applies it."""
    from magi_code.providers.known_models import refusal

    conf = admitted.settings.get("providers", {}).get(provider)
    return isinstance(conf, dict) and refusal(provider, conf, model, admitted.paths.home) is None


async def run(
    admitted: Admitted,
    attachment: Attachment,
    chosen: tuple[str, str, str | None],
    prompt: str,
    options: Options,
    out: Output,
    images: Images = (),
) -> int:
    from pathlib import Path

    import anyio

    from magi_code.runner.agents import SessionAgents
    from magi_code.runner.entry import start_turn
    from magi_code.runner.setup import parts
    from magi_code.runner.startup import safe_name
    from magi_code.runner.turn import TurnControl, new_id
    from magi_code.tools.approvals import ApprovalBroker

    gc.freeze()
    gc.enable()
    provider, model, _ = chosen
    control = TurnControl()
    # The workspace is canonical, as the tools resolve their paths.
    built = parts(admitted)
    if options.mode is None:  # the `approval_mode` setting's (ask or auto)
        options.mode = "auto" if built.sandbox.auto else "ask"
    built.sandbox.auto = options.mode == "auto"
    rules = (Path(admitted.cwd), built.policy.protected)
    emitter = ExecEmitter(out, options, control, rules)
    emitter.session_id, emitter.run_id = attachment.session_id, new_id()
    broker = emitter.broker = ApprovalBroker(emitter.announce)
    session = {"session_id": attachment.session_id, "provider": safe_name(provider)}
    if options.json and not out.line("session", {**session, "model": safe_name(model)}):
        return EXIT_BROKEN_PIPE
    signalled: list[int] = []
    # The session's melchior and children, as in every face (runner/agents.py).
    agents = await anyio.to_thread.run_sync(SessionAgents.open, admitted, attachment)
    try:
        async with anyio.create_task_group() as group:
            await group.start(watch_signals, control, signalled)  # before any output
            finished = await start_turn(
                admitted,
                attachment,
                chosen,
                prompt,
                run_id=emitter.run_id,
                emitter=emitter,
                control=control,
                approvals=broker,
                agents=agents,
                images=images,
            )
            group.cancel_scope.cancel()
    finally:
        agents.close(wait=False)  # this process exits next; melchior ends on its own
    await close_provider_clients()
    return finish(emitter, finished, signalled)


async def watch_signals(
    control: TurnControl, signalled: list[int], *, task_status: TaskStatus[None]
) -> None:
    """SIGINT and SIGTERM cancel the run; the turn records the cancel before it returns."""
    import anyio

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        task_status.started()
        async for number in received:
            signalled.append(number)
            control.cancel(None)


async def close_provider_clients() -> None:
    if "magi_code.providers.client" in sys.modules:
        from magi_code.providers.client import close_clients

        await close_clients()


def finish(emitter: ExecEmitter, finished: RunFinished, signalled: list[int]) -> int:
    out, options = emitter.out, emitter.options
    if options.json:
        emitter._line(finished)
    elif finished.outcome == "completed":
        text = emitter.final_text()
        out.write((text + ("" if text.endswith("\n") else "\n")).encode("utf-8", "surrogatepass"))
    if finished.outcome != "completed" and not options.json:
        say(f"run {finished.outcome}: {finished.error_code or 'stopped'}")
    if out.broken or finished.error_code == "output_unavailable":
        return EXIT_BROKEN_PIPE
    if signalled:
        return EXIT_SIGNAL_BASE + signalled[0]
    return EXIT_COMPLETED if finished.outcome == "completed" else EXIT_FAILED
