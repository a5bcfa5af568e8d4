"""Roots, against the reference server `@modelcontextprotocol/server-filesystem` (installed by
npm, conftest.py) started with no folder: it then serves only the client's roots, and our one
root is the workspace. Through the real `magi-code exec`: listing and reading files in the
workspace work, reading one outside it is refused by the server."""

import json
from pathlib import Path

from test_mcp_everything import run, scripted, settings


def test_the_workspace_is_the_servers_one_root(filesystem: Path, tmp_path: Path) -> None:
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / "inside.txt").write_text("in the workspace\n")
    (outside / "secret.txt").write_text("not for the server\n")
    root = workspace.resolve()
    calls: tuple[tuple[str, dict[str, object]], ...] = (
        ("mcp__ev__list_allowed_directories", {}),
        ("mcp__ev__list_directory", {"path": str(root)}),
        ("mcp__ev__read_text_file", {"path": str(root / "inside.txt")}),
        ("mcp__ev__read_text_file", {"path": str(outside.resolve() / "secret.txt")}),
    )
    definition = {"command": "node", "args": [str(filesystem)], "enabled": True}
    _, records = run(tmp_path, settings(definition), scripted(*calls), "--approval-mode", "full")
    ended = [r for r in records if r["type"] == "tool" and "result" in r]
    allowed, listed, inside, refused = (r["result"] for r in ended)
    assert allowed == f"Allowed directories:\n{root}"
    assert "[FILE] inside.txt" in listed
    assert inside == "in the workspace\n"
    assert [r["state"] for r in ended] == ["completed"] * 3 + ["failed"]
    assert "Access denied - path outside allowed directories" in refused
    assert "not for the server" not in json.dumps(records)
