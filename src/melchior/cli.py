"""`melchior` command line: one subcommand per verb of the layer.

    melchior serve      bind this session's socket and answer for it (a child, never a daemon)
    melchior tool       the vocabulary a model calls, one exec per request
    melchior fork       a name and a secret for a session this one is about to start
    melchior verbs      what a session answers over its socket, as data
    melchior lua-api    the Lua client library, plain Lua, for copying into a config directory

Each subcommand's module is imported only when chosen, so `tool` stays cheap to start.
Exit codes: 0 ok, 1 refused (the refusal is on stdout), 2 bad command line.
"""

from __future__ import annotations

import os
import sys

USAGE = "usage: melchior {serve|tool|fork|verbs|lua-api|models} [--option=value ...]"


def _options(argv: list[str], allowed: tuple[str, ...]) -> dict[str, str] | None:
    out: dict[str, str] = {}
    for arg in argv:
        key, eq, value = arg.removeprefix("--").partition("=")
        if not arg.startswith("--") or not eq or key not in allowed or key in out:
            return None
        out[key] = value
    return out


def _print(value: object) -> None:
    from melchior import strict_json

    sys.stdout.write(strict_json.dumps(value) + "\n")
    sys.stdout.flush()


def _refuse(code: str, exit_code: int) -> int:
    from melchior import wire

    sys.stdout.buffer.write(wire.encode_argv(wire.refusal(code)))
    sys.stdout.flush()
    return exit_code


def fork(argv: list[str]) -> int:
    from melchior import identity, registry

    opts = _options(argv, ("role", "project"))
    if opts is None:
        return _refuse("usage", 2)
    try:
        spec = identity.fork(os.environ, opts.get("role", "main"), opts.get("project"))
    except registry.RegistryError as err:
        return _refuse(err.code, 2 if err.code == "usage" else 1)
    _print(spec)
    return 0


# What the printed Lua client is told of melchior's bounds, filled in where the shipped file
# says __MELCHIOR_CONSTANTS__, so no number is written twice.
LUA_LIMITS = (
    "FAMILY",
    "MIN_FAMILY",
    "FRAME_HEADER",
    "MAX_FRAME",
    "MAX_LINE",
    "MAX_ARGV",
    "MAX_CALL",
    "MAX_REPORT",
    "REPORT_CHUNK",
    "ID_MAX",
    "PROJECT_MAX",
    "PROJECT_DIGEST",
    "SUN_PATH_MAX",
)


def lua_api() -> str:
    """The Lua client's source, with melchior's constants written in."""
    from importlib import resources

    from melchior import limits, wire

    source = (resources.files("melchior") / "lua" / "melchior.lua").read_text(encoding="utf-8")
    fields = [f"{name} = {getattr(limits, name)}" for name in LUA_LIMITS]
    foreign = ", ".join(f'"{name}"' for name in sorted(wire.FOREIGN_TAGS))
    fields.append(f"FOREIGN_TAGS = {{ {foreign} }}")
    return source.replace("__MELCHIOR_CONSTANTS__", "{ " + ", ".join(fields) + " }", 1)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    command, rest = (args[0], args[1:]) if args else ("", [])
    if command == "tool":
        from melchior import tool

        return tool.main(rest, os.environ)
    if command == "serve":
        from melchior import serve

        opts = _options(rest, ("role", "project"))
        return _refuse("usage", 2) if opts is None else serve.main(opts, os.environ)
    if command == "fork":
        return fork(rest)
    if command == "verbs" and not rest:
        from melchior import vocabulary

        _print(vocabulary.SOCKET)
        return 0
    if command == "lua-api":
        if rest:
            print("usage: melchior lua-api", file=sys.stderr)
            return 2
        sys.stdout.buffer.write(lua_api().encode("ascii"))
        sys.stdout.flush()
        return 0
    if command == "models":
        return _models(rest)
    print(USAGE, file=sys.stderr)
    return 2


def _models(rest: list[str]) -> int:
    """`melchior models` belongs to melchior.models (written elsewhere); dispatch if present."""
    import importlib
    import importlib.util

    if importlib.util.find_spec("melchior.models") is None:
        print("melchior models: not available in this build", file=sys.stderr)
        return 2
    entry = getattr(importlib.import_module("melchior.models"), "main", None)
    if not callable(entry):
        print("melchior models: not available in this build", file=sys.stderr)
        return 2
    return int(entry(rest))


if __name__ == "__main__":
    raise SystemExit(main())
