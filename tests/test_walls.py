"""The wall between melchior and the harness: melchior imports nothing of magi_code."""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def test_melchior_imports_nothing_of_magi_code() -> None:
    offenders = []
    files = sorted((SRC / "melchior").rglob("*.py"))
    assert files, "melchior has no modules"
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [
                f"{path.name}:{node.lineno}" for n in names if n.split(".")[0] == "magi_code"
            ]
    assert offenders == []


def test_the_harness_reaches_melchior_only_through_its_cli() -> None:
    """magi_code imports no melchior module: it runs `melchior serve/tool/fork` and reads their
    JSON (the published vocabulary is data, never a type)."""
    offenders = []
    files = sorted((SRC / "magi_code").rglob("*.py"))
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [
                f"{path.name}:{node.lineno}" for n in names if n.split(".")[0] == "melchior"
            ]
    assert offenders == []
