"""The server/runtime line (local_agent/sides.py): each side is a real abstract class at run
time, holds the other only as that class, and uses nothing of it but its methods."""

import ast
from pathlib import Path

import pytest

from magi_code.local_agent import runtime, server, wiring
from magi_code.local_agent.runtime import LocalRuntime
from magi_code.local_agent.server import Server
from magi_code.local_agent.sides import Host, Runtime
from source_imports import loaded_running


def uses(module: object, holder: str) -> list[tuple[str, bool]]:
    """Each `self.<holder>.<name>` in `module`'s source, and whether it is called there."""
    tree = ast.parse(Path(str(getattr(module, "__file__", ""))).read_text())
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == holder
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "self"
        ):
            found.append((node.attr, id(node) in called))
    return found


def test_each_side_is_its_abstract_class() -> None:
    assert issubclass(Server, Host)
    assert issubclass(LocalRuntime, Runtime)
    assert not Server.__abstractmethods__ and not LocalRuntime.__abstractmethods__

    class Partial(Runtime):
        def warm(self) -> None: ...

    with pytest.raises(TypeError, match="abstract"):
        Partial()  # type: ignore[abstract]


def test_the_runtime_only_calls_the_hosts_methods() -> None:
    seen = uses(runtime, "server")
    assert seen, "the runtime no longer reaches its host as self.server"
    assert [u for u in seen if u[0] not in Host.__abstractmethods__ or not u[1]] == []


def test_the_server_only_calls_the_runtimes_methods() -> None:
    seen = uses(server, "runtime")
    assert seen, "the server no longer reaches its runtime as self.runtime"
    assert [u for u in seen if u[0] not in Runtime.__abstractmethods__ or not u[1]] == []


def test_wiring_reads_nothing_of_the_server() -> None:
    tree = ast.parse(Path(str(wiring.__file__)).read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert "server" not in names and "Server" not in names


def test_the_line_costs_the_initialize_path_no_typing() -> None:
    code = "import magi_code.local_agent.server, magi_code.local_agent.wiring"
    assert loaded_running(code, ("typing", "dataclasses", "inspect")) == []
