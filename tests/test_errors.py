"""The error tree in magi_code/errors.py is drawn once and whole: every exception class of the
packages it covers is named there, every coded one derives from `MagiError`, and the closed
code sets are the ones the local-agent protocol publishes."""

import importlib
import pkgutil
from typing import get_args

import magi_code
from magi_code.errors import MagiError
from magi_code.local_agent.errors import ALL_ERRORS, SESSION_ERRORS, STARTUP_ERRORS
from magi_code.mcp.errors import McpStartupCode
from magi_code.providers.base import ProviderErrorCode
from magi_code.runner.turn import RunFailedCode
from magi_code.sessions.errors import SessionCode

# Being rewritten elsewhere; the tree covers them when they settle.
NOT_COVERED = ("magi_code.mission_control", "magi_code.exec", "magi_code.acp")


def exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(magi_code.__path__, "magi_code."):
        if info.name.startswith(NOT_COVERED) or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == info.name
            ):
                found[f"{info.name}.{value.__qualname__}"] = value
    return found


def test_every_exception_class_is_in_the_tree() -> None:
    tree = importlib.import_module("magi_code.errors").__doc__ or ""
    classes = exception_classes()
    assert len(classes) > 30
    missing = sorted(name for name, cls in classes.items() if cls.__name__ not in tree)
    assert not missing


def test_every_coded_error_is_a_magi_error() -> None:
    coded = {
        name
        for name, cls in exception_classes().items()
        if issubclass(cls, MagiError) and cls is not MagiError
    }
    assert {
        "magi_code.providers.base.ProviderError",
        "magi_code.sessions.errors.SessionError",
        "magi_code.runner.startup.StartupError",
        "magi_code.runner.turn.RunFailed",
        "magi_code.local_agent.errors.RequestRejected",
        "magi_code.mcp.errors.McpStartupError",
    } <= coded


def test_the_closed_code_sets_are_the_published_ones() -> None:
    assert set(get_args(SessionCode)) == SESSION_ERRORS - {"operation_cancelled"}
    assert set(get_args(McpStartupCode)) <= STARTUP_ERRORS
    assert set(get_args(RunFailedCode)) <= ALL_ERRORS
    assert "execution_failed" in ALL_ERRORS and "content_limit" in ALL_ERRORS
    assert set(get_args(ProviderErrorCode)) == {
        "auth_failed",
        "rate_limited",
        "server_error",
        "transport_failed",
        "malformed_stream",
        "context_overflow",
        "refused",
    }
