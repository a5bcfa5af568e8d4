"""The runner's one entry for every face: `start_turn` runs one prompt on an attached session.

The local agent, Mission Control, `exec`, ACP and subagents all call it; none of them builds a
turn itself. It takes the per-process parts from the admitted snapshot (built once, see
runner/setup.py), journals into the attached session and returns exactly one `RunFinished`.
It never raises for a failed run: a failure before the turn could be set up is
failed/not_started, a crash after it started is failed/degraded (with MC_DEBUG_STDERR=1 the
crash is written to stderr). Cancellation through `control` is owned by the turn loop; every
approval still pending when it returns is denied. The face delivers the returned
`RunFinished` itself (it is not emitted here), after its own cleanup.
"""

from collections.abc import Callable

from magi_code.providers.base import ImagePart
from magi_code.runner.agents import SessionAgents, run_turn_with_peers
from magi_code.runner.events import RunFinished
from magi_code.runner.journal import SessionJournal
from magi_code.runner.setup import Selection, turn_setup
from magi_code.runner.startup import Admitted
from magi_code.runner.turn import Emitter, TurnControl, TurnSetup
from magi_code.sessions import Attachment
from magi_code.tools.approvals import ApprovalBroker
from magi_code.tools.host_io import HostIO


async def start_turn(
    admitted: Admitted,
    attachment: Attachment,
    selection: Selection,
    prompt: str,
    *,
    run_id: str,
    emitter: Emitter,
    control: TurnControl,
    approvals: ApprovalBroker,
    agents: SessionAgents | None = None,
    observe: Callable[[TurnSetup], None] | None = None,
    host_io: HostIO | None = None,
    images: tuple[ImagePart, ...] = (),
) -> RunFinished:
    """Run one turn of `prompt` on `attachment` with `selection` (provider, model, thinking;
    None picks the admitted one). `agents` is the session's melchior and children
    (runner/agents.py; the face opens it with the attachment and closes it after): with it the
    turn has the melchior and `agent` tools, its delegated ceiling, and its peers' messages.
    `observe` lets a face wrap the turn's provider, tools and policy before it starts
    (Mission Control's usage, previews and session grants). `host_io` is the client's file and
    terminal I/O when the face has one (ACP); the tools use the local disk without it.
    `images` are what the prompt carries beside its text (tools/images.py made them)."""
    finished = RunFinished("failed", "not_started", None, "execution_failed")
    try:
        session_id = attachment.session_id
        if agents is not None:
            await agents.prepare()  # the melchior vocabulary, read beside the session's open
        setup = turn_setup(admitted, selection, session_id, run_id, approvals, agents, host_io)
        if observe is not None:
            observe(setup)
        finished = RunFinished("failed", "degraded", None, "execution_failed")
        journal = SessionJournal(attachment)
        return await run_turn_with_peers(agents, setup, journal, emitter, control, prompt, images)
    except Exception:  # noqa: BLE001 - a crashed run still ends in one RunFinished
        from magi_code.debug import absorbed

        absorbed("a turn")
        return finished
    finally:
        approvals.deny_all()
