"""The host side of the Lua client, for tests: the source as `melchior lua-api` prints it, a
runtime of each of the five Lua implementations (lupa), a stream over a real AF_UNIX socket,
and conversions between Lua values and Python ones. No tests live here."""

from __future__ import annotations

import functools
import importlib
import socket
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

from mel_harness import DEADLINE, MELCHIOR

RUNTIMES = ("lua51", "lua52", "lua53", "lua54", "luajit21")
# Runtimes whose numbers are all doubles (no integer subtype).
DOUBLES = ("lua51", "lua52", "luajit21")

# What a host supplies: the stream constructor, wrapping Python's socket in a Lua object with
# s:read(n), s:write(data), s:close(). `load(src)` on 5.2+ and LuaJIT, `loadstring` on 5.1.
HOST_LUA = b"""
local dial, getenv, src, version = ...
local function stream(path)
  local s, why = dial(path)
  if s == nil then
    return nil, why
  end
  return {
    read = function(_, n) return s.read(n) end,
    write = function(_, data) return s.write(data) end,
    close = function() s.close() end,
  }
end
local chunk
if version == "lua51" then
  chunk = assert(loadstring(src))
else
  chunk = assert(load(src))
end
local melchior = chunk(stream, { getenv = getenv })
local H = { melchior = melchior, stream = stream }
function H.kind(v)
  if v == melchior.null then return "null" end
  if melchior.is_array(v) then return "array" end
  if melchior.is_object(v) then return "object" end
  return "plain"
end
-- Run f(...) and return true and its first result, or false and the refusal's code.
function H.try(f, ...)
  local ok, value = pcall(f, ...)
  if ok then
    return true, value
  end
  return false, melchior.code_of(value) or ("not a refusal: " .. tostring(value))
end
function H.decode(transport, data, max_frame, bytewise)
  local wire, items = melchior.wire, {}
  if transport == "argv" then
    return { wire.decode_argv(data) }
  end
  local dec
  if transport == "socket" then
    dec = wire.socket_decoder(max_frame)
  else
    dec = wire.pipe_decoder(max_frame)
  end
  local function add(list)
    for _, it in ipairs(list) do
      items[#items + 1] = it
    end
  end
  if bytewise then
    for i = 1, #data do
      add(dec.feed(data:sub(i, i)))
    end
  else
    add(dec.feed(data))
  end
  if transport == "pipe" then
    add(dec.close())
  end
  return items
end
return H
"""


@functools.cache
def lua_source() -> bytes:
    """The client exactly as a sibling would copy it: the real CLI, run as a process."""
    done = subprocess.run([*MELCHIOR, "lua-api"], capture_output=True, timeout=30, check=True)
    return done.stdout


class Stream:
    """The host's stream: read(n) gives exactly n bytes or None at end of input."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def read(self, n: float) -> bytes | None:
        want, buf = int(n), bytearray()
        while len(buf) < want:
            data = self.sock.recv(want - len(buf))
            if not data:
                return None
            buf += data
        return bytes(buf)

    def write(self, data: bytes) -> bool:
        self.sock.sendall(data)
        return True

    def close(self) -> None:
        self.sock.close()


def dial(path: bytes) -> tuple[Stream | None, bytes | None]:
    """Connect as melchior's own client does, naming a failure by the same codes."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(DEADLINE)
    try:
        sock.connect(path)
    except FileNotFoundError:
        code = b"unknown_session"
    except (ConnectionRefusedError, NotADirectoryError):
        code = b"gone"
    except TimeoutError:
        code = b"timeout"
    else:
        return Stream(sock), None
    sock.close()
    return None, code


class Host:
    """One Lua runtime with the client loaded, its environment given by `env`."""

    def __init__(
        self,
        version: str,
        env: Mapping[str, str] | None = None,
        sandboxed: bool = False,
        dialler: Callable[[bytes], tuple[Any, bytes | None]] | None = None,
    ) -> None:
        lupa = importlib.import_module(f"lupa.{version}")
        self.version = version
        self.lua = lupa.LuaRuntime(encoding=None, unpack_returned_tuples=True)
        if sandboxed:  # a host that gives Lua no io library
            self.lua.execute(b"io = nil")
        self.lua_type: Callable[[Any], str | None] = lupa.lua_type
        self.env = dict(env or {})
        host = self.lua.execute(
            HOST_LUA, dialler or dial, self.getenv, lua_source(), version.encode()
        )
        self.h, self.m = host, host.melchior

    def getenv(self, name: bytes) -> bytes | None:
        value = self.env.get(name.decode())
        return None if value is None else value.encode()

    def eval(self, code: str) -> Any:
        return self.lua.eval(code)

    def try_(self, f: Any, *args: Any) -> tuple[bool, Any]:
        ok, value = self.h[b"try"](f, *args)
        return bool(ok), value

    def refusal(self, f: Any, *args: Any) -> str:
        """The code of the refusal `f(*args)` raised in Lua (the call must fail)."""
        ok, value = self.try_(f, *args)
        assert not ok, f"expected a refusal, got {self.py(value)!r}"
        assert isinstance(value, bytes)
        return value.decode()

    # ------------------------------------------------------------ values

    def py(self, value: Any) -> Any:
        """A Lua value as Python: arrays to lists, objects to dicts, strings to str."""
        if isinstance(value, bytes):
            return value.decode("utf-8")
        if self.lua_type(value) != "table":
            return value
        kind = self.h.kind(value)
        if kind == b"null":
            return None
        if kind == b"array":
            return [self.py(value[i]) for i in range(1, len(value) + 1)]
        return {k.decode("utf-8"): self.py(v) for k, v in value.items()}

    def lua_value(self, value: Any) -> Any:
        """A Python JSON value as the client's Lua values (marked arrays and objects)."""
        if value is None:
            return self.m.null
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, list):
            return self.m.array(self.lua.table_from([self.lua_value(v) for v in value]))
        if isinstance(value, dict):
            items = {k.encode("utf-8"): self.lua_value(v) for k, v in value.items()}
            return self.m.object(self.lua.table_from(items))
        return value

    def items(self, lua_items: Any) -> list[dict[str, Any]]:
        """Decoder items ({message = v} or {refused = code}) as the vectors spell them."""
        out: list[dict[str, Any]] = []
        for i in range(1, len(lua_items) + 1):
            it = lua_items[i]
            if it[b"refused"] is not None:
                out.append({"refused": it[b"refused"].decode()})
            else:
                out.append({"message": self.py(it[b"message"])})
        return out


def same(a: Any, b: Any) -> bool:
    """JSON equality that keeps booleans apart from numbers (Python's True == 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def same_items(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> bool:
    return len(got) == len(want) and all(
        g.keys() == w.keys()
        and same(g.get("message"), w.get("message"))
        and g.get("refused") == w.get("refused")
        for g, w in zip(got, want, strict=True)
    )
