"""Admitted startup, shared by every face: paths, settings, instructions, provider readiness,
MCP servers.

`admit` is the only code that creates MC_HOME's runtime directories, reads settings and
credentials, checks provider readiness and connects the enabled, globally approved MCP servers
(last, once everything else passed). It never performs a network request of its own. Its
result, `Admitted`, is the one configuration snapshot a process uses; settings changes need a
restart. Whoever receives an `Admitted` owns its `mcp` manager and closes it at teardown.
Failures are `StartupError` with one of the protocol's startup codes. Folder trust decides
what the project file may set (config/trust.py): `trusted` says the verdict, `dropped` the
project keys that were ignored and the keys of either file that are no setting (a face may
warn; the local agent says nothing), and
`credential_providers` the provider tables, from defaults, presets and global settings only,
that say where each provider's credential may be sent.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from magi_code.config import paths, settings, trust
from magi_code.context import loader, profiles
from magi_code.errors import MagiError
from magi_code.limits import NAME_BYTES
from magi_code.records import KW_ONLY, field, record

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    import threading
    from typing import Any, Literal

    from magi_code.config.paths import Paths
    from magi_code.context.loader import Context
    from magi_code.mcp.manager import McpManager

    StartupCode = Literal[
        "configuration_invalid",
        "provider_unavailable",
        "profile_invalid",
        "mcp_unavailable",
        "startup_cancelled",
        "startup_failed",
    ]


class StartupError(MagiError):
    """`code` goes on the wire; `detail`, a precise message for a terminal, never does."""

    def __init__(self, code: StartupCode, detail: str | None = None) -> None:
        super().__init__(code)
        self.code: StartupCode = code
        self.detail = detail


@record(frozen=False)
class Admitted:
    """The one configuration snapshot of a process (read-only by convention, but for the
    turn's parts it builds once). Its repr shows no setting, environment or credential."""

    _: KW_ONLY
    paths: Paths
    cwd: str  # canonical; a plain string so pathlib stays off the path to the init result
    settings: dict[str, Any] = field(repr=False)
    provider: str
    model: str
    thinking: str | None
    instructions: str = field(repr=False)
    context_id: str
    env: Mapping[str, str] = field(repr=False)
    context: Context = field(repr=False)  # the profile, instruction sources, skills, notices
    mcp: McpManager | None = None  # connected MCP servers, None when none is enabled
    trusted: bool = False  # the workspace is trusted (config/trust.py)
    dropped: tuple[trust.Dropped, ...] = ()
    # each provider's settings, credentials among them ({}: no credentials at all)
    credential_providers: Mapping[str, Any] = field(default_factory=dict, repr=False)
    project: frozenset[str] = frozenset()  # startup.project_defined: the project's own
    # runner/setup.py's TurnParts, built on the first turn (never passed in)
    parts: Any = field(default=None, repr=False)

    @property
    def notices(self) -> list[str]:
        """Startup notices for faces to show: context files skipped, cut or shadowed."""
        return self.context.notices


def context_id(cwd: str, roots: list[str]) -> str:
    """SHA-256 of the canonical cwd and canonical storage roots; reveals neither."""
    canonical = [os.path.realpath(cwd), *sorted(os.path.realpath(r) for r in roots)]
    return _sha256_hex(json.dumps(canonical).encode())


def _sha256_hex(data: bytes) -> str:
    """CPython's builtin SHA-256 (3.11: _sha256, 3.12+: _sha2): `hashlib` would load OpenSSL,
    milliseconds on the way to the initialize result, for one short digest."""
    for builtin in ("_sha256", "_sha2"):
        try:
            return str(__import__(builtin).sha256(data).hexdigest())
        except ImportError:
            continue
    import hashlib  # a build without the builtin hashes

    return hashlib.sha256(data).hexdigest()


def safe_name(name: str | None) -> str | None:
    """A provider/model name fit for status: short, printable and not secret-looking."""
    if name is None or len(name.encode()) > NAME_BYTES:
        return None
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in name):
        return None
    from magi_code.redact import looks_secret

    return None if looks_secret(name) else name


def admit(
    cwd: str,
    env: Mapping[str, str],
    cancel: threading.Event | None = None,
    *,
    agent: str | None = None,  # --agent: the primary profile, over the `agent` setting
    skip_failed_mcp: bool = False,  # an MCP server that fails is left out (`mcp.failed`)
    elicits: bool = False,  # the face puts MCP servers' questions to a person
) -> Admitted:
    """The admitted snapshot; `cancel` (set by shutdown) stops a pending MCP startup."""
    home = paths.resolve_home(env)
    try:
        where = paths.ensure_runtime_dirs(home)
    except OSError as exc:
        raise StartupError("startup_failed") from exc
    canonical_cwd = os.path.realpath(cwd)
    subagent, may_trust = delegated(env)
    try:
        loaded = settings.load_layers(
            where.settings,
            paths.project_settings(canonical_cwd),
            may_trust=may_trust,
            cache_home=where.home,
        )
        context = loader.load(
            where.home, canonical_cwd, loaded, agent=subagent or agent, subagent=bool(subagent)
        )
        conf = loader.with_profile_selection(loaded.settings, context.profile)
        settings.check_model(conf, where.home, loaded.warnings())  # one rule, every face
    except profiles.ProfileError as exc:
        raise StartupError("profile_invalid", str(exc)) from exc
    except (settings.SettingsError, loader.ContextSettingsError) as exc:
        raise StartupError("configuration_invalid") from exc
    check_mcp(conf)
    check_permissions(conf)
    check_sandbox(conf, env)
    check_hooks_and_code_mode(conf)
    check_network(conf, env)
    check_remote_agents(conf)
    credential_providers = loaded.base["providers"]
    check_provider(conf, where, env, credential_providers)
    project = project_defined(loaded.project)
    manager = start_mcp(
        conf, env, canonical_cwd, cancel, where.home, project, skip_failed_mcp, elicits
    )
    if manager is not None:  # each server's instructions, under its name
        context.add_servers(manager.instructions())
    return Admitted(
        paths=where,
        cwd=canonical_cwd,
        settings=conf,
        provider=conf["provider"],
        model=conf["model"],
        thinking=conf.get("thinking"),
        instructions=context.instructions,
        context_id=context_id(canonical_cwd, [where.home]),
        env=env,
        mcp=manager,
        context=context,
        trusted=loaded.trusted,
        dropped=tuple(loaded.warnings()),  # with the keys that are no setting
        credential_providers=credential_providers or {},
        project=project,
    )


def project_defined(layer: Mapping[str, Any]) -> frozenset[str]:
    """What the admitted project layer defines of the user's own commands (only a trusted
    project's reaches here): `mcp.servers.<name>` and `hooks.<event>`. They keep the workspace
    as their folder; the global ones start elsewhere (config/own_commands.py)."""
    found: set[str] = set()
    mcp = layer.get("mcp")
    servers = mcp.get("servers") if isinstance(mcp, Mapping) else None
    if isinstance(servers, Mapping):
        found |= {f"mcp.servers.{name}" for name in servers}
    hooks = layer.get("hooks")
    if isinstance(hooks, Mapping):
        found |= {f"hooks.{event}" for event in hooks}
    return frozenset(found)


def delegated(env: Mapping[str, str]) -> tuple[str | None, bool]:
    """(the subagent profile, whether trust is allowed) from a parent's delegation; (None,
    True) for a process that is not a subagent. A malformed delegation fails closed."""
    raw = env.get("MAGI_CODE_DELEGATION")
    if not raw:
        return None, True
    from magi_code.runner.delegation import parse

    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested past the parser's stack
        raise StartupError("configuration_invalid") from None
    given = parse(value)
    if given is None:  # not an object, or a malformed one
        raise StartupError("configuration_invalid")
    profile = value.get("profile", "general")
    if not isinstance(profile, str) or not profile:
        raise StartupError("configuration_invalid")
    return profile, given.trusted


def check_mcp(conf: Mapping[str, Any]) -> None:
    """Every server definition has a good shape and every enabled one is globally approved
    (`settings.load` keeps only the global `mcp.approved`). Spawns nothing; imports the MCP
    definitions only when a server is enabled."""
    if not _mcp_enabled(conf):
        return
    from magi_code.mcp.definitions import approved_digests, enabled_servers, require_approved
    from magi_code.mcp.errors import DefinitionError, McpUnavailable

    try:
        require_approved(enabled_servers(conf), approved_digests(conf))
    except DefinitionError as exc:
        raise StartupError("configuration_invalid") from exc
    except McpUnavailable as exc:
        raise StartupError("mcp_unavailable", mcp_detail(exc)) from exc


def start_mcp(
    conf: Mapping[str, Any],
    env: Mapping[str, str],
    cwd: str,
    cancel: threading.Event | None,
    home: str | None = None,
    project: frozenset[str] = frozenset(),
    skip_failed: bool = False,
    elicits: bool = False,
) -> McpManager | None:
    """Connect every enabled, approved server (the SDK loads only then); None when none is.
    A server that fails names itself and why in `detail` (for a terminal, never the wire);
    with `skip_failed` it is left out instead (the manager's `failed`)."""
    if not _mcp_enabled(conf):
        return None
    from magi_code.mcp.definitions import approved_digests
    from magi_code.mcp.errors import McpLoginRequired, McpStartupError, McpUnavailable
    from magi_code.mcp.manager import McpManager

    try:
        return McpManager.start(
            conf["mcp"]["servers"],
            cancel,
            approved=approved_digests(conf),
            env=env,
            cwd=cwd,
            home=home,
            project_servers={n.removeprefix("mcp.servers.") for n in project if "servers." in n},
            skip_failed=skip_failed,
            elicits=elicits,
        )
    except McpLoginRequired as exc:
        advice = f"MCP server {exc.server!r} needs a login: run `magi-code mcp login {exc.server}`"
        raise StartupError(exc.code, advice) from exc
    except McpUnavailable as exc:
        raise StartupError(exc.code, mcp_detail(exc)) from exc
    except McpStartupError as exc:
        raise StartupError(exc.code) from exc


def mcp_detail(failed: Any) -> str | None:
    """`MCP server 'NAME' failed to start: WHY` (an mcp.errors.McpUnavailable), for a face."""
    if failed.server is None or failed.reason is None:
        return None
    return f"MCP server {failed.server!r} failed to start: {failed.reason}"


def _mcp_enabled(conf: Mapping[str, Any]) -> bool:
    table = conf.get("mcp", {})
    servers = table.get("servers", {}) if isinstance(table, Mapping) else None
    if not isinstance(servers, Mapping):
        raise StartupError("configuration_invalid")
    return any(isinstance(s, Mapping) and s.get("enabled") for s in servers.values())


def check_permissions(conf: Mapping[str, Any]) -> None:
    """A bad permission policy fails startup; the policy module loads only when one is set."""
    if "permissions" not in conf:
        return
    from magi_code.tools.policy import Policy, PolicyError

    try:
        Policy.from_settings(conf.get("permissions"))
    except PolicyError as exc:
        raise StartupError("configuration_invalid") from exc


def check_sandbox(conf: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """A bad `[sandbox]` table, MAGI_SANDBOX_MODE or `approval_mode` fails startup; the
    settings module loads only when one is set."""
    mode_env = "MAGI_SANDBOX_MODE"  # settings.MODE_ENV, before the module is worth loading
    if "sandbox" not in conf and "approval_mode" not in conf and mode_env not in env:
        return
    from magi_code.tools.sandbox.settings import APPROVAL_SETTINGS, MODE_ENV, SandboxError, checked

    if conf.get("approval_mode", "ask") not in APPROVAL_SETTINGS:
        raise StartupError("configuration_invalid", "approval_mode takes ask or auto")
    try:
        checked(conf.get("sandbox"), env.get(MODE_ENV))
    except SandboxError as exc:
        detail = (
            "[sandbox]: mode is read-only, workspace-write or full-access; network is true or "
            "false; writable_roots and deny_read are lists of paths"
        )
        raise StartupError("configuration_invalid", detail) from exc


def check_network(conf: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """A bad `[network]` table fails startup; it and `env`'s proxy and certificate variables
    are what every later request of the process goes by (providers/network.py)."""
    from magi_code.providers import network

    try:
        network.configure(conf.get("network"), env)
    except settings.SettingsError as exc:
        raise StartupError("configuration_invalid", str(exc)) from exc


def check_remote_agents(conf: Mapping[str, Any]) -> None:
    """A bad `[a2a.agents.NAME]` table fails startup, saying what to change (a2a/agents.py,
    loaded only when the settings name an agent)."""
    table = conf.get("a2a")
    if not isinstance(table, Mapping) or not table.get("agents"):
        return
    from magi_code.a2a.agents import AgentDefinitionError, remote_agents

    try:
        remote_agents(conf)
    except AgentDefinitionError as exc:
        raise StartupError("configuration_invalid", str(exc)) from exc


def check_hooks_and_code_mode(conf: Mapping[str, Any]) -> None:
    """Bad `hooks` tables or a `code_mode` that is not a boolean fail startup; the hooks
    module loads only when hooks are set."""
    if not isinstance(conf.get("code_mode", False), bool):
        raise StartupError("configuration_invalid")
    if "hooks" not in conf:
        return
    from magi_code.runner.hooks import HookConfigError, parse

    try:
        parse(conf["hooks"])
    except HookConfigError as exc:
        raise StartupError("configuration_invalid") from exc


def check_provider(
    conf: Mapping[str, Any],
    where: paths.Paths,
    env: Mapping[str, str],
    credential_providers: Mapping[str, Any],
) -> None:
    provider_conf = conf["providers"][conf["provider"]]
    from magi_code.providers import registry

    try:
        needed = registry.credential_needed(conf["provider"], provider_conf)
    except registry.ConfigurationInvalid as exc:  # its text: the key, value and choices
        raise StartupError("configuration_invalid", str(exc)) from exc
    if not needed:  # the store is not even loaded for a row that needs none (the fixture)
        return
    from magi_code.config.credentials import CredentialStore

    code = registry.check_readiness(
        conf["provider"],
        provider_conf,
        CredentialStore(where.home),
        env,
        sent_to=credential_providers.get(conf["provider"]),
    )
    if code is not None:
        raise StartupError(code, credentials_hint(conf))


def credentials_hint(conf: Mapping[str, Any]) -> str:
    """What to do when the selected provider has no usable credentials (names only if safe)."""
    name = safe_name(conf["provider"])
    variable = conf["providers"][conf["provider"]].get("api_key_env")
    how = f"run `magi-code login {name}`" if name else "run `magi-code login NAME`"
    if isinstance(variable, str) and safe_name(variable):
        how += f", or set {variable}"
    return f"the provider {name or ''} has no usable credentials: {how}".replace("  ", " ")
