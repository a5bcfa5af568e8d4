"""Settings files the tests write: `local_provider` names a local server (a LocalServer or a
HostileServer, anything with a `url`) as the provider `local` with model `m`, over one wire
API, in MC_HOME's settings.toml; `local_provider_settings` is that text alone, for a test that
adds to it or writes it elsewhere; `places` makes an MC_HOME holding given settings and a
workspace beside it."""

from pathlib import Path
from typing import Protocol


class Server(Protocol):
    @property
    def url(self) -> str: ...


def local_provider_settings(
    server: Server, wire: str = "openai-chat", *, top: str = "", table: str = ""
) -> str:
    """`provider = "local"`, `model = "m"`, then `top` (more top-level settings or tables),
    then `[providers.local]` with `wire_api = WIRE`, `base_url = "{server.url}/v1"` and
    `table` (more keys of that table, or tables after it)."""
    if top and not top.endswith("\n"):
        top += "\n"
    return (
        f'provider = "local"\nmodel = "m"\n{top}[providers.local]\nwire_api = "{wire}"\n'
        f'base_url = "{server.url}/v1"\n{table}'
    )


def local_provider(
    home: Path, server: Server, wire: str = "openai-chat", *, top: str = "", table: str = ""
) -> Path:
    """MC_HOME `home` (made if need be) whose settings.toml holds `local_provider_settings`;
    that file's path."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "settings.toml"
    path.write_text(local_provider_settings(server, wire, top=top, table=table))
    return path


def places(tmp_path: Path, settings: str) -> tuple[Path, Path]:
    """MC_HOME `tmp_path/home` whose settings.toml holds `settings`, and a workspace
    `tmp_path/ws` beside it: (home, workspace)."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    (home / "settings.toml").write_text(settings)
    return home, workspace
