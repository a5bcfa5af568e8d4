"""magi-code: a coding agent for the terminal.

Nothing but `sys` is imported here: `magi-code serve --stdio` must start fast, so each face
imports only what its own path needs.
"""

import sys as _sys

__version__ = "0.1.0"  # pyproject.toml's [project] version, read here without metadata lookups

if "".join(_sys.argv[:1]).endswith("/magi-code"):  # the `magi-code` script is starting
    import _signal  # type: ignore[import-not-found]  # `signal` without its enums

    # Until cli.main takes Ctrl-C over, it ends the process as SIGINT does, with no traceback
    # of a half-done import (an ignored SIGINT, as under nohup, stays ignored).
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
