"""Starting `melchior serve`: prove the identity in the environment (or mint a root one), bind
the socket, write the parent note, hand the pipe to the server. Owns process setup only.

stdout carries pipe events only: the real stdout moves to a private descriptor and fd 1 points
at stderr, so that nothing else in this process can write onto the harness's pipe.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from melchior import identity, registry, wire
from melchior.server import Server, bind


def _fail(out: Any, code: str) -> int:
    out.write(wire.encode_pipe(wire.event("refused", code=code)))
    out.flush()
    return 2 if code in ("usage", "no_identity") else 1


def main(opts: dict[str, str], env: Mapping[str, str]) -> int:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    me = identity.from_env(env)
    extra: dict[str, Any] = {}
    try:
        if me is None:
            spec = identity.fork(env, opts.get("role", "main"), opts.get("project"))
            extra = {"id": spec["id"], "environment": spec["environment"]}
            me = identity.from_env({**env, **spec["environment"]})
            assert me is not None
        elif opts:
            return _fail(out, "usage")  # a forked session's name was fixed by its minter
        directory = registry.project_dir(me.project, env)
        key = registry.verify(directory, me.id, me.token)
        if key is None or key.minter != me.parent:
            return _fail(out, "unauthenticated")
        listener = bind(directory, me.id)
        if me.parent is not None:
            registry.write_atomic(registry.join(directory, f"{me.id}.parent"), me.parent.encode())
    except registry.RegistryError as err:
        return _fail(out, err.code)
    server = Server(directory, me.project, me.id, key.role, me.token, me.talk, env)
    server.run(listener, 0, out, **extra)
    return 0
