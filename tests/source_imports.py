"""The modules a source file imports, read from its syntax tree (for the import walls), and
the modules a fresh interpreter loads running some code (for the import pins)."""

import ast
import subprocess
import sys
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


def run_time_imports(path: Path) -> set[str]:
    """What `path` may import when it runs, at its top or inside a function, outside its
    `if TYPE_CHECKING:` blocks: each module named, and `from M import n` also as `M.n` (n may
    be a submodule)."""
    tree = ast.parse(path.read_bytes())
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def top_level(path: Path) -> set[str]:
    """The top-level packages `path` imports."""
    return {name.split(".")[0] for _, name in imported(path)}


def loaded_running(code: str, watched: tuple[str, ...]) -> list[str]:
    """The modules named in `watched`, or inside a package named there, that a fresh
    interpreter has loaded once it ran `code`."""
    probe = (
        f"{code}\nimport sys\nwatched = {watched!r}\n"
        "print(sorted(m for m in sys.modules if m in watched or m.split('.')[0] in watched))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded: list[str] = eval(done.stdout)
    return loaded
