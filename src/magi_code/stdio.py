"""The real stdout, moved aside for a face whose stdout carries its answer or its protocol
only (`exec`, `acp`): the caller writes to the private descriptor, and fd 1 points at stderr,
so no library print and no child process can reach it. Descriptors from `os.dup` are not
inherited by children.
"""

import os


def private_stdout() -> int:
    """A private copy of fd 1; raises OSError when there is no fd 1."""
    try:
        os.fstat(2)
    except OSError:  # no stderr: /dev/null takes fd 2, lest the private copy land there
        devnull = os.open(os.devnull, os.O_WRONLY)
        if devnull != 2:
            os.dup2(devnull, 2)
            os.close(devnull)
    private = os.dup(1)
    os.dup2(2, 1)
    return private
