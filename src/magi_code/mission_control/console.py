"""Mission Control's entry: the pre-UI startup, the session to attach, then the Textual app.

Order: the first-run screen when no provider is configured (first_run.py) -> the folder-trust
question (below; asked once, on the plain terminal, in an untrusted folder holding project
definitions; `--prompt` never asks) -> `driver.startup` (admitted
snapshot, retention sweep), its dropped-key warnings and context notices printed on stderr
-> the command line's selection and session (`--model`, `--provider`, `--continue`,
`resume ID`) -> the app, inline in the terminal. A startup failure is one short explanation
on stderr and exit 1: what is wrong and what to run or edit, never a traceback or a secret.
Textual is imported here and below only, never on the `serve --stdio` or `exec` paths.
"""

import gc
import os
import sys
from importlib.metadata import version

from rich.console import Console

from magi_code.config import paths, trust, trust_file
from magi_code.config.settings import trusted_for
from magi_code.config.trust import UNKNOWN
from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver, Launch, LaunchError, startup
from magi_code.mission_control.first_run import offer
from magi_code.mission_control.mcp_failed import continue_without
from magi_code.sessions import SessionError
from magi_code.tools.sandbox.settings import MODE_ENV


def banner(driver: Driver) -> str:
    session = driver.attachment.session_id if driver.attachment else "new"
    trust = "trusted" if driver.admitted.trusted else "not trusted"
    return (
        f"magi-code {version('magi-code')} · {driver.provider}/{driver.model} · "
        f"workspace {driver.admitted.cwd} ({trust}) · session {session}\n"
        f"sandbox {driver.sandbox.describe()}"
    )


TRUST_QUESTION = (
    "magi-code: this folder has project settings or definitions and is not trusted:\n"
    "{found}\n"
    "  [t] trust it (recorded in {settings})\n"
    "  [c] continue without them\n"
    "  [q] quit\n"
    "choice [t/c/Q]: "
)


class Quit(Exception):
    """The person chose to quit before startup."""


def ask_trust(cwd: str, mc_home: str) -> bool:
    """Ask whether to trust `cwd` when it needs asking; False means quit."""
    settings_file = paths.Paths(mc_home).settings
    found = trust.project_definitions(cwd, mc_home)
    if not found or trusted_for(cwd, settings_file):
        return True
    listed = "\n".join(f"  {path}" for path in found)
    print(TRUST_QUESTION.format(found=listed, settings=settings_file), end="", file=sys.stderr)
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer in ("t", "trust"):
        try:
            trust_file.trust(settings_file, cwd)
        except trust_file.TrustFileError as failed:
            print(f"magi-code: {failed}", file=sys.stderr)
            return False
        return True
    return answer in ("c", "continue")


def prepare(launch: Launch, env: dict[str, str]) -> Driver:
    """Everything before the screen; raises LaunchError, or Quit at the trust question."""
    cwd = os.path.realpath(os.getcwd())
    if launch.prompt is None and not ask_trust(cwd, paths.resolve_home(env)):
        raise Quit
    if launch.sandbox is not None:
        env[MODE_ENV] = launch.sandbox  # subagents inherit it
    admitted, pruned = startup(cwd, env, launch.agent, skip_failed_mcp=launch.prompt is None)
    if admitted.mcp is not None and not continue_without(admitted.mcp.failed):
        admitted.mcp.close()
        raise Quit
    for dropped in admitted.dropped:
        print(f"magi-code: {dropped.warning()}", file=sys.stderr)
    for notice in admitted.notices:
        print(f"magi-code: {notice}", file=sys.stderr)
    driver = Driver(admitted)

    ignored = [d for d in admitted.dropped if d.reason != UNKNOWN]  # (not a setting: said)
    if ignored:
        driver.notices.append(
            f"{len(ignored)} project setting(s) ignored in this untrusted folder, "
            "listed above; `magi-code trust` trusts it"
        )
    if admitted.notices:
        driver.notices.append(f"{len(admitted.notices)} context notice(s), listed above")
    try:
        driver.set_approval_mode(launch.approval_mode or driver.approval_setting())
        resume = launch.resume
        if launch.continue_latest:
            resume = driver.latest_here()
            if resume is None:
                driver.notices.append("No earlier session in this workspace: a new one starts.")
        if resume:
            try:
                driver.notices += driver.open_session(resume)
            except SessionError as failed:
                raise LaunchError(failed.code, "the session to resume cannot be opened") from None
        if launch.provider or launch.model:  # the command line wins over a saved selection
            driver.select(launch.provider, launch.model)
        elif not driver.available(driver.provider, driver.model):
            raise LaunchError("model_unknown", "the `model` setting names no model of its provider")
        if pruned:
            driver.notices.append(f"magi-code: removed {pruned} expired sessions")
    except BaseException:
        driver.close()
        raise
    return driver


def run(launch: Launch) -> int:
    first_run = offer(launch, dict(os.environ), os.path.realpath(os.getcwd()))
    if first_run.exit_code is not None:
        return first_run.exit_code
    try:
        driver = prepare(launch, dict(os.environ))
    except LaunchError as failed:
        print(failed.explain(), file=sys.stderr)
        return 1
    except Quit:
        return 1
    if first_run.notice:
        driver.notices.append(first_run.notice)

    app = MissionControl(
        driver,
        launch.prompt,
        banner(driver),
        pick_session=launch.resume == "",
        first_prompt=launch.first_prompt,
    )
    # What startup made (modules, settings, servers) lives as long as the process: frozen, it
    # is no longer walked by each full garbage collection while a reply streams.
    gc.freeze()
    try:
        code = app.run(inline=True)
    finally:
        driver.close()
    if app.transcript:
        scrollback = Console()
        for shown in app.transcript:
            scrollback.print(shown)
    # The process ends next: the screen's objects are left to the OS, not to a last garbage
    # collection at exit (under load, up to half a second of waiting for nothing).
    gc.freeze()
    return 1 if code is None else code
