"""The wall between melchior and the harness: melchior imports nothing of magi_code."""

from pathlib import Path

from source_imports import imported

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
