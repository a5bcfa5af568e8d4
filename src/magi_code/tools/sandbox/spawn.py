"""A child process started inside a confinement (anyio), or as it is when there is none.

anyio's `open_process` takes no `preexec_fn`; its backend's does (the keywords go to
`subprocess.Popen`), so that is what is called with one. The confinement (its ruleset
descriptor) stays the sandbox's, for the next spawn. A confinement the child could not apply
fails the spawn with SandboxFailed: nothing ran.
"""

import subprocess
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.abc
from anyio._core._eventloop import get_async_backend

TYPE_CHECKING = False
if TYPE_CHECKING:
    from magi_code.tools.sandbox.confine import Confinement


class SandboxFailed(OSError):
    """The child could not enter its sandbox (the kernel refused a step)."""


async def open_process(
    command: Sequence[str], confinement: "Confinement | None", **options: Any
) -> anyio.abc.Process:
    if confinement is None:
        return await anyio.open_process(command, **options)
    streams = {name: options.pop(name, None) for name in ("stdin", "stdout", "stderr")}
    try:
        return await get_async_backend().open_process(
            command, **streams, **options, preexec_fn=confinement.apply
        )
    except subprocess.SubprocessError as failed:
        raise SandboxFailed("the sandbox could not be applied") from failed
