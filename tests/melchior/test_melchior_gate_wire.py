"""gate-wire: the tag key is `event`, everywhere. Any other tag key in a wire definition or a
fixture fails here, in Python sources, Lua sources and the shared vectors alike."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from melchior import wire

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "melchior"
VECTORS = Path(__file__).parent / "wire_vectors.json"
FOREIGN = wire.FOREIGN_TAGS


def python_offences(path: Path) -> list[str]:
    """String literals used as dict keys, subscripts or .get() keys that name a foreign tag."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        keys: list[ast.expr] = []
        if isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None]
        elif isinstance(node, ast.Subscript):
            keys = [node.slice]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in {"get", "pop", "setdefault"} and node.args:
                keys = [node.args[0]]
        elif isinstance(node, ast.keyword) and node.arg in FOREIGN:
            out.append(f"{path.name}:{node.value.lineno} {node.arg}=")
        for key in keys:
            if isinstance(key, ast.Constant) and key.value in FOREIGN:
                out.append(f"{path.name}:{key.lineno} {key.value!r}")
    return out


LUA_KEY = re.compile(r"""(?:\[\s*["'](\w+)["']\s*\]|\.(\w+)\b|[{,]\s*(\w+)\s*=)""")


def lua_offences(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    hits = {g for m in LUA_KEY.finditer(text) for g in m.groups() if g}
    return [f"{path.name} {h}" for h in sorted(hits & FOREIGN)]


def keys_in(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys_in(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys_in(v)}
    return set()


def test_python_wire_definitions_use_only_event() -> None:
    files = sorted(PKG.rglob("*.py"))
    assert files
    assert [o for f in files for o in python_offences(f)] == []


def test_lua_sources_use_only_event() -> None:
    assert [o for f in sorted((PKG / "lua").glob("*.lua")) for o in lua_offences(f)] == []


def test_vectors_accept_only_event_and_refuse_every_other_tag() -> None:
    doc = json.loads(VECTORS.read_text(encoding="utf-8"))
    accepted = [i["message"] for v in doc["vectors"] for i in v["items"] if "message" in i]
    assert not keys_in(accepted) & FOREIGN
    # Each foreign key, used as a tag, is refused by the decoder.
    for key in sorted(FOREIGN):
        assert wire.parse(json.dumps({key: "message"}).encode()) == wire.Refusal("bad_tag")
        assert wire.parse(json.dumps({"event": "m", key: "x"}).encode()) == wire.Refusal("bad_tag")


def test_gate_catches_an_offence(tmp_path: Path) -> None:
    """The gate can fail: a planted foreign key in each language is found."""
    sample, lua = tmp_path / "sample.py", tmp_path / "sample.lua"
    sample.write_text('M = {"type": "message"}\nx = M.get("kind")\n', encoding="utf-8")
    lua.write_text('local m = {type = "message"}\nprint(m["kind"])\n', encoding="utf-8")
    assert len(python_offences(sample)) == 2
    assert len(lua_offences(lua)) == 2
