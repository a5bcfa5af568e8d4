"""Who a process is: the MAGI_MELCHIOR_* environment a session was started with, and `fork`,
which mints the name and secret for a session about to be started.

The secret goes to the minter (who hands it to the child's environment) and nowhere else;
the registry keeps only its sha256. A process without the secret cannot act as the session.
"""

from __future__ import annotations

import os

from melchior import names, registry
from melchior.limits import TOKEN_BYTES
from melchior.policy import effective_talk

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

ENV_PROJECT = "MAGI_MELCHIOR_PROJECT"
ENV_ID = "MAGI_MELCHIOR_ID"
ENV_PARENT = "MAGI_MELCHIOR_PARENT"
ENV_TOKEN = "MAGI_MELCHIOR_TOKEN"
# Settings, not identity: the harness sets them from its user and project settings.
ENV_TALK = "MAGI_MELCHIOR_TALK"
ENV_PROJECT_TALK = "MAGI_MELCHIOR_PROJECT_TALK"


class Identity:
    """A session as its environment names it; `token` is its secret."""

    __slots__ = ("id", "parent", "project", "talk", "token")

    def __init__(self, project: str, sid: str, token: str, parent: str | None, talk: str) -> None:
        self.project, self.id, self.token, self.parent, self.talk = (
            project,
            sid,
            token,
            parent,
            talk,
        )


def talk_from(env: Mapping[str, str]) -> str:
    return effective_talk(env.get(ENV_TALK), env.get(ENV_PROJECT_TALK))


def from_env(env: Mapping[str, str]) -> Identity | None:
    project, sid, token = env.get(ENV_PROJECT, ""), env.get(ENV_ID, ""), env.get(ENV_TOKEN, "")
    if not (names.valid_project(project) and names.valid_id(sid) and token):
        return None
    parent = env.get(ENV_PARENT) or None
    if parent is not None and not names.valid_id(parent):
        return None
    return Identity(project, sid, token, parent, talk_from(env))


def default_project(cwd: str) -> str:
    """A project label from a directory name, made to fit the label rules."""
    base = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "-" for c in cwd)
    base = os.path.basename(base.rstrip("/")).strip(".-_") or "default"
    return base[:64]


def fork(env: Mapping[str, str], role: str, project: str | None) -> dict[str, Any]:
    """Mint a child of the calling session (or a root, if the caller has no identity).

    A caller with an identity must prove it (its own secret) and stays in its own project.
    """
    me = from_env(env)
    parent: str | None = None
    parent_key: str | None = None  # the digest of the minter's secret, bound to the child
    if role not in names.ROLES:
        raise registry.RegistryError("usage")
    if me is not None:
        if project not in (None, me.project):
            raise registry.RegistryError("forbidden")
        directory = registry.project_dir(me.project, env)
        key = registry.verify(directory, me.id, me.token)
        if key is None:
            raise registry.RegistryError("unauthenticated")
        project, parent, parent_key = me.project, me.id, key.sha256
    else:
        if env.get(ENV_ID) or env.get(ENV_TOKEN):
            raise registry.RegistryError("no_identity")
        project = project or env.get(ENV_PROJECT) or default_project(os.getcwd())
        directory = registry.project_dir(project, env)
    # `secrets.token_urlsafe`, without its OpenSSL (and without base64's `re`)
    from binascii import b2a_base64

    raw = b2a_base64(os.urandom(TOKEN_BYTES), newline=False)
    token = raw.translate(bytes.maketrans(b"+/", b"-_")).rstrip(b"=").decode("ascii")
    avoid = registry.reported(directory, env)
    sid = registry.mint(directory, role, parent, token, avoid, parent_key)
    environment = {ENV_PROJECT: project, ENV_ID: sid, ENV_TOKEN: token}
    if parent is not None:
        environment[ENV_PARENT] = parent
    return {
        "project": project,
        "role": role,
        "id": sid,
        "parent": parent,
        "token": token,
        "environment": environment,
    }
