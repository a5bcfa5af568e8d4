"""The Code Mode interpreter's bootstrap: run as a script by `python -I`, never imported.

argv: the bridge socket's descriptor, the address-space limit and the `result` bound, in
bytes. The parent writes one JSON line on the bridge, {"program": source, "tools": [names]};
the program then runs with `tools` bound, its stdout and stderr being the process's own.
Each `tools.<name>(**arguments)` is one line {"call": {"id", "name", "arguments"}} answered by
one line {"id", "ok", "output"}: the output text, or `ToolError(output)` when not ok. At the
end one line {"done": {"status", "result"}} (status ok | error | memory) and the exit.

Confinement, set before the program's first line (defense in depth, not an OS sandbox): the
address space is capped with RLIMIT_AS (soft and hard, so it cannot be raised), and an audit
hook refuses what would go around the bridge: opening files other than Python's own for
reading, listing other folders, changing files, starting processes, sockets, signals to others, and
importing ctypes. Files and commands are the session's tools' to touch, through `tools`.
"""

import json
import os
import resource
import sys

_MUTATING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_REFUSED_EVENTS = frozenset(
    {
        "os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn",
        "subprocess.Popen", "os.kill", "os.killpg", "os.remove", "os.rename", "os.rmdir",
        "os.mkdir", "os.chmod", "os.chown", "os.link", "os.symlink", "os.truncate", "os.utime",
        "os.chdir", "os.putenv", "os.unsetenv", "os.startfile",
        "shutil.rmtree", "shutil.copyfile", "shutil.move", "shutil.chown", "socket.__new__",
        "socket.connect", "socket.bind", "socket.getaddrinfo", "socket.sendto", "socket.sendmsg",
        "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "resource.setrlimit", "resource.prlimit",
        "pty.spawn", "glob.glob", "sys.remote_exec", "webbrowser.open",
    }
)  # fmt: skip
_REFUSED_IMPORTS = frozenset({"ctypes", "_ctypes", "_posixsubprocess", "mmap"})
_MEMORY_NOTE = b"MemoryError: the program reached its memory limit\n"


class ToolError(Exception):
    """A bridged call that failed or was not allowed; the message is what the tool said."""


class Tools:
    """The session's tools as functions: `tools.read_file(path="x")` returns the tool's text."""

    def __init__(self, names: list[str], reader: object, writer: object) -> None:
        self._names, self._reader, self._writer, self._next = names, reader, writer, 0

    def __dir__(self) -> list[str]:
        return list(self._names)

    def __getattr__(self, name: str) -> object:
        if name.startswith("_") or name not in self._names:
            raise AttributeError(f"no tool named {name!r}; tools: {', '.join(self._names)}")
        return lambda **arguments: self.call(name, **arguments)

    def __getitem__(self, name: str) -> object:
        return self.__getattr__(name)

    def call(self, name: str, **arguments: object) -> str:
        self._next += 1
        request = {"call": {"id": self._next, "name": name, "arguments": arguments}}
        self._writer.write(json.dumps(request).encode() + b"\n")  # type: ignore[attr-defined]
        self._writer.flush()  # type: ignore[attr-defined]
        line = self._reader.readline()  # type: ignore[attr-defined]
        if not line:
            raise SystemExit(3)  # the parent went away: nothing left to do
        reply = json.loads(line)
        if not reply.get("ok"):
            raise ToolError(reply.get("output", ""))
        return str(reply.get("output", ""))


def confine(memory: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    roots = {
        os.path.realpath(p)
        for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *sys.path)
        if p
    }
    roots.discard("/")
    prefixes = tuple(root.rstrip("/") + "/" for root in roots)

    def pythons_own(path: object) -> bool:
        if not isinstance(path, str | bytes):
            return False
        return (os.path.realpath(os.fsdecode(path)) + "/").startswith(prefixes)

    def refuse(event: str, args: tuple[object, ...]) -> None:
        if event == "open":
            flags = args[2]
            if isinstance(flags, int) and flags & _MUTATING:
                raise PermissionError("Code Mode: write files through tools, not open()")
            if not pythons_own(args[0]):
                raise PermissionError("Code Mode: read files through tools.read_file, not open()")
        elif event in ("os.listdir", "os.scandir"):  # imports list Python's own folders
            if not pythons_own(args[0]):
                raise PermissionError("Code Mode: list folders through tools.list_dir")
        elif event in _REFUSED_EVENTS:
            raise PermissionError(f"Code Mode: {event} is not allowed; use the tools")
        if event == "import" and str(args[0]).split(".")[0] in _REFUSED_IMPORTS:
            raise ImportError(f"Code Mode: importing {args[0]} is not allowed")

    sys.addaudithook(refuse)


def main() -> None:
    fd, memory, result_bytes = (int(a) for a in sys.argv[1:4])
    # Plain reads and writes on the socket's descriptor: no `socket` module to import.
    reader, writer = os.fdopen(fd, "rb"), os.fdopen(os.dup(fd), "wb")
    start = json.loads(reader.readline())
    tools = Tools(list(start["tools"]), reader, writer)
    scope: dict[str, object] = {"__name__": "__main__", "tools": tools, "ToolError": ToolError}
    status, result = "ok", None
    try:
        code = compile(start["program"], "<program>", "exec")
        del start
        confine(memory)
        exec(code, scope)
    except MemoryError:
        scope.clear()
        status = "memory"
        os.write(2, _MEMORY_NOTE)
    except SystemExit as stop:
        status = "ok" if stop.code in (None, 0) else "error"
    except BaseException:  # noqa: BLE001 - the program's own failure, shown as it is
        status = "error"
        import traceback  # only now: it costs milliseconds at every start

        traceback.print_exc()
    if status != "memory" and "result" in scope:
        try:
            result = json.dumps(scope["result"], ensure_ascii=False)
        except (TypeError, ValueError):
            result = json.dumps("(result is not JSON: " + type(scope["result"]).__name__ + ")")
        if len(result.encode("utf-8", "replace")) > result_bytes:
            result = json.dumps(f"(result over {result_bytes} bytes of JSON)")
    sys.stdout.flush()
    sys.stderr.flush()
    done = {"done": {"status": status, "result": result}}
    writer.write(json.dumps(done).encode() + b"\n")
    writer.flush()
    os._exit(0 if status == "ok" else 1)


if __name__ == "__main__":
    main()
