"""The runner's one entry: parts built once per process, one RunFinished per turn, a crash
made visible with MC_DEBUG_STDERR=1 and never raised."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from magi_code.runner import setup
from magi_code.runner.entry import start_turn
from magi_code.runner.events import MessageDelta, RunEvent, RunFinished
from magi_code.runner.startup import admit
from magi_code.runner.turn import TurnControl
from magi_code.sessions import Selection, SessionStore
from magi_code.tools.approvals import ApprovalBroker


class Collect:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def delta(self, event: MessageDelta) -> None:
        self.events.append(event)

    async def critical(self, event: RunEvent) -> None:
        self.events.append(event)

    async def announce(self, *args: Any) -> None:
        self.events.append(args)


def one_turn(
    tmp_path: Path, prompt: str, selection: tuple[str | None, None, None] = (None, None, None)
) -> tuple[RunFinished, Any]:
    """One turn through `start_turn` with `selection` (none: the session's own)."""
    home = tmp_path / "home"
    admitted = admit(str(tmp_path), {"MC_HOME": str(home), "PATH": os.environ["PATH"]})
    store = SessionStore(Path(admitted.paths.home))
    attachment = store.create(admitted.cwd, Selection(admitted.provider, admitted.model, None))
    collect = Collect()

    async def go() -> RunFinished:
        return await start_turn(
            admitted,
            attachment,
            selection,
            prompt,
            run_id="r1",
            emitter=collect,
            control=TurnControl(),
            approvals=ApprovalBroker(collect.announce),
        )

    try:
        return anyio.run(go), admitted
    finally:
        attachment.close()


def test_parts_are_built_once_and_reused_by_every_turn(tmp_path: Path) -> None:
    finished, admitted = one_turn(tmp_path, "hello")
    assert finished.outcome == "completed"
    built = setup.parts(admitted)
    provider = built.provider(admitted.provider)
    assert setup.parts(admitted) is built
    assert built.provider(admitted.provider) is provider
    again = setup.turn_setup(
        admitted, (None, None, None), "s", "r2", ApprovalBroker(Collect().announce)
    )
    assert again.provider is provider and again.policy is built.policy


def test_a_setup_failure_is_not_started_and_never_raises(tmp_path: Path) -> None:
    # turn_setup raises KeyError
    finished, _ = one_turn(tmp_path, "hello", ("no-such-provider", None, None))
    assert (finished.outcome, finished.persistence) == ("failed", "not_started")


@pytest.mark.parametrize("debug", ["1", None])
def test_an_absorbed_crash_is_shown_only_when_asked(tmp_path: Path, debug: str | None) -> None:
    script = textwrap.dedent(
        """
        from magi_code.debug import absorbed
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            absorbed("a test")
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "MC_DEBUG_STDERR"}
    if debug:
        env["MC_DEBUG_STDERR"] = debug
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == ""
    if debug:
        assert "absorbed in a test" in done.stderr and "RuntimeError: boom" in done.stderr
    else:
        assert done.stderr == ""
