"""`melchior` command line: one subcommand per verb of the layer.

    melchior serve      bind this session's socket and answer for it (a child, never a daemon)
    melchior tool       the vocabulary a model calls, one exec per request
    melchior fork       a name and a secret for a session this one is about to start
    melchior verbs      what a session answers over its socket, as data
    melchior lua-api    the Lua client (not yet: exit 2)

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
    from melchior import jsonc

    sys.stdout.write(jsonc.dumps(value) + "\n")
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
        print("melchior lua-api: not yet (the Lua client is another issue)", file=sys.stderr)
        return 2
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
