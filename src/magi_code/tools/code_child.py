"""The Code Mode interpreter's bootstrap: run as a script by `python -I`, never imported.

argv: the bridge socket's descriptor, the address-space limit and the `result` bound, in
bytes. The parent writes one JSON line on the bridge, {"program": source, "tools": [names]};
the program then runs with `tools` bound, its stdout and stderr being the process's own.
Each `tools.<name>(**arguments)` is one line {"call": {"id", "name", "arguments"}} answered by
one line {"id", "ok", "output"}: the output text, or `ToolError(output)` when not ok. At the
end one line {"done": {"status", "result"}} (status ok | error | memory) and the exit.

Confinement: the process was started inside the OS sandbox (tools/sandbox: it reads the
workspace and Python's own files, writes nothing, opens no socket, starts no process); here,
before the program's first line, its address space is capped with RLIMIT_AS (soft and hard,
so it cannot be raised). Files and commands are the session's tools' to touch, through `tools`.
"""

import json
import os
import resource
import sys

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
