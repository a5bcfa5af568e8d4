"""The modules a source file imports, read from its syntax tree (for the import walls)."""

import ast
from pathlib import Path


def imported(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every `import` and `from ... import` in `path`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def top_level(path: Path) -> set[str]:
    """The top-level packages `path` imports."""
    return {name.split(".")[0] for _, name in imported(path)}
