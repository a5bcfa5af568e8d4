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


def exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(magi_code.__path__, "magi_code."):
        if info.name.endswith("__main__"):
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
        "magi_code.config.ConfigError",
        "magi_code.context.ContextError",
        "magi_code.tools.ToolsError",
    } <= coded


def test_one_coded_base_per_package_and_a_code_on_every_concrete_error() -> None:
    """Every class that names a code derives from MagiError; every MagiError a package raises
    has a code, and one of its package base's (config, context, tools)."""
    from magi_code.config import ConfigError
    from magi_code.context import ContextError
    from magi_code.tools import ToolsError

    classes = exception_classes()
    for name, cls in classes.items():
        if "code" in vars(cls):
            assert issubclass(cls, MagiError), name
    bases = {"config": ConfigError, "context": ContextError, "tools": ToolsError}
    for name, cls in classes.items():
        package = name.split(".")[1]
        if package in bases and cls is not bases[package] and issubclass(cls, MagiError):
            assert issubclass(cls, bases[package]), name
    for cls in (ConfigError, ContextError):
        assert isinstance(cls.code, str)
    assert ToolsError.__subclasses__()  # the base is abstract in its code: its children set it


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


def test_startups_codes_are_the_wires() -> None:
    """StartupCode (a type only: startup's path imports no `typing`) is the wire's set."""
    import ast
    import inspect

    import magi_code.runner.startup as startup

    tree = ast.parse(inspect.getsource(startup))
    (codes,) = [
        {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant)}
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "StartupCode" for t in node.targets)
    ]
    assert codes == STARTUP_ERRORS
