"""The walls: melchior imports nothing of magi_code, magi_code reaches melchior only through
its CLI, no two modules import each other, however lazily (no import circle), and within the
provider layer not even for their types (the HTTP stack imports only downwards)."""

import ast
from pathlib import Path

from source_imports import imported, run_time_imports

SRC = Path(__file__).resolve().parents[1] / "src"


def test_melchior_imports_nothing_of_magi_code() -> None:
    offenders = []
    files = sorted((SRC / "melchior").rglob("*.py"))
    assert files, "melchior has no modules"
    for path in files:
        offenders += [
            f"{path.name}:{line}" for line, n in imported(path) if n.split(".")[0] == "magi_code"
        ]
    assert offenders == []


def test_the_harness_reaches_melchior_only_through_its_cli() -> None:
    """magi_code imports no melchior module: it runs `melchior serve/tool/fork` and reads their
    JSON (the published vocabulary is data, never a type)."""
    offenders = []
    files = sorted((SRC / "magi_code").rglob("*.py"))
    for path in files:
        offenders += [
            f"{path.name}:{line}" for line, n in imported(path) if n.split(".")[0] == "melchior"
        ]
    assert offenders == []


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            part = []
            while (top := stack.pop()) != module:
                part.append(top)
            if part:
                found.append(sorted([module, *part]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_circle() -> None:
    """A module that needs another's names for its types imports them under TYPE_CHECKING;
    at run time the imports go one way (the MCP manager knows nothing of tools, the settings
    loader reads trust's table and never the other way round)."""
    known = modules()
    graph = {
        name: {m for m in run_time_imports(path) if m in known and m != name}
        for name, path in known.items()
    }
    assert len(graph) > 100
    assert circles(graph) == []


def test_the_provider_layer_has_no_circle_even_for_types() -> None:
    """Within providers/, type-only imports count too: the HTTP stack's layers import only
    those below them (requests > client > pool > http2, http1 > network, origins, policy)."""
    package = "magi_code.providers"
    known = {name: path for name, path in modules().items() if name.startswith(package + ".")}

    def every_import(path: Path) -> set[str]:
        found = {name for _, name in imported(path)}
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.ImportFrom) and node.module == package:
                found |= {f"{package}.{alias.name}" for alias in node.names}
        return found

    graph = {
        name: {m for m in every_import(path) if m in known and m != name}
        for name, path in known.items()
    }
    assert graph[f"{package}.requests"] >= {f"{package}.client", f"{package}.policy"}
    assert circles(graph) == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
