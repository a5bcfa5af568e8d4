"""The ACP client's files and terminals as the tools' HostIO, for one session.

Only what the client declared in `initialize` is offered: `fs.readTextFile`, `fs.writeTextFile`,
`terminal`; files beyond ACP_FILE_BYTES stay local, so no answer can outgrow a message. A
command runs as `/bin/sh -c` in a client terminal under `env -i` with the tools' environment (a
terminal's `env` can only add to the client's own, and the tools' environment holds no
credentials): created, shown (`shown`: in the tool call it runs for), awaited up to its timeout
(then killed), its output read, and always released; on cancellation it is killed and released
first. The terminal's creation and that cleanup are shielded and bounded by CLEANUP_WAIT_MS, so
a cancel never leaves an unknown terminal behind nor waits on a stuck client.
"""

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import anyio
from acp.interfaces import Client
from acp.schema import ClientCapabilities

from magi_code import limits
from magi_code.tools.host_io import HostIO, HostRun
from magi_code.tools.shell import SHELL

ENV = "/usr/bin/env"


Shown = Callable[[str], Awaitable[None]]  # told each terminal's ID once it exists


def host_io(
    client: Client, session_id: str, caps: ClientCapabilities | None, shown: Shown
) -> HostIO | None:
    """The HostIO of what the client offers; None when it offers nothing."""
    fs = caps.fs if caps is not None else None
    reads = bool(fs is not None and fs.read_text_file)
    writes = bool(fs is not None and fs.write_text_file)
    terminal = bool(caps is not None and caps.terminal)
    if not (reads or writes or terminal):
        return None

    async def read_text(path: Path) -> str:
        read = await client.read_text_file(session_id=session_id, path=str(path))
        return read.content

    async def write_text(path: Path, text: str) -> None:
        await client.write_text_file(session_id=session_id, path=str(path), content=text)

    async def run(
        command: str, cwd: Path, env: Mapping[str, str], timeout_s: float, output_bytes: int
    ) -> HostRun:
        argv = ["-i", *(f"{name}={value}" for name, value in env.items()), SHELL, "-c", command]
        return await run_in_terminal(client, session_id, argv, cwd, timeout_s, output_bytes, shown)

    return HostIO(
        file_bytes=limits.ACP_FILE_BYTES,
        read_text=read_text if reads else None,
        write_text=write_text if writes else None,
        run=run if terminal else None,
    )


async def run_in_terminal(
    client: Client,
    session_id: str,
    argv: list[str],
    cwd: Path,
    timeout_s: float,
    output_bytes: int,
    shown: Shown,
) -> HostRun:
    bound = limits.CLEANUP_WAIT_MS / 1000
    with anyio.CancelScope(shield=True), anyio.fail_after(bound):
        made = await client.create_terminal(
            session_id=session_id,
            command=ENV,
            args=argv,
            cwd=str(cwd),
            output_byte_limit=output_bytes,
        )
    terminal = {"session_id": session_id, "terminal_id": made.terminal_id}
    try:
        await shown(made.terminal_id)
        with anyio.move_on_after(timeout_s) as deadline:
            await client.wait_for_terminal_exit(**terminal)
        if deadline.cancelled_caught:
            await client.kill_terminal(**terminal)
        out = await client.terminal_output(**terminal)
    except BaseException:
        with anyio.CancelScope(shield=True), anyio.move_on_after(bound):
            await client.kill_terminal(**terminal)
        raise
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(bound):
            await client.release_terminal(**terminal)
    status = out.exit_status
    return HostRun(
        output=out.output,
        truncated=out.truncated,
        exit_code=None if deadline.cancelled_caught or status is None else status.exit_code,
        signal=status.signal if status is not None else None,
        timed_out=deadline.cancelled_caught,
    )
