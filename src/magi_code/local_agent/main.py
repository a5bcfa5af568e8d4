"""Process setup for `magi-code serve --stdio`: private protocol fds, then the loop, then exit.

Before anything else the real stdin/stdout are moved to private, non-inheritable fds and
fds 0, 1 (and 2, unless MC_DEBUG_STDERR=1) are pointed at /dev/null, so no library print,
traceback or child process can write to the wire or block on a full stderr pipe.
The process ends with os._exit: after the cleanup wait, slow teardown is left to exit.
"""

import os
import sys
import threading

from magi_code.limits import CLEANUP_WAIT_MS


def run() -> int:
    in_fd, out_fd = os.dup(0), os.dup(1)  # os.dup makes non-inheritable fds
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    if os.environ.get("MC_DEBUG_STDERR") != "1":
        os.dup2(devnull, 2)
        threading.excepthook = lambda args: None
    os.close(devnull)

    from magi_code.local_agent.server import Server
    from magi_code.local_agent.wiring import RUNTIME_METHODS, attach

    server = Server(in_fd, out_fd, os.getcwd(), dict(os.environ), attach, RUNTIME_METHODS)
    try:
        code = server.serve()
    except Exception:  # noqa: BLE001 - a bug in the loop must end the child, never leave it idle
        from magi_code.debug import absorbed

        absorbed("the protocol loop")
        code = 1
    server.cleanup(CLEANUP_WAIT_MS / 1000)
    if (checkpoints := sys.modules.get("magi_code.checkpoints.store")) is not None:
        checkpoints.settle_all(CLEANUP_WAIT_MS / 1000)  # a turn's `after` checkpoint, bounded
    os._exit(code)
