"""Everything one run needs from the admitted snapshot: provider, tools, policy, prompt.

What does not change between turns is built once per process, on the first turn, and kept on
the snapshot (`Admitted.parts`): the permission policy and the profile's view of the built-in
tools, the tools' environment, the credential store, and one provider per provider id (each
keeping its pooled HTTP client). MCP tools are asked for each turn, as a server may change
them.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Any

from magi_code import limits
from magi_code.config.credentials import CredentialStore
from magi_code.context.loader import Context, offers
from magi_code.providers.base import Provider
from magi_code.runner import compaction, environment
from magi_code.runner.checkpointing import TurnCheckpoints
from magi_code.runner.startup import Admitted
from magi_code.runner.turn import TurnSetup
from magi_code.sessions import SessionStore
from magi_code.tools.approvals import ApprovalBroker
from magi_code.tools.base import Tool
from magi_code.tools.builtin import builtin_tools
from magi_code.tools.host_io import HostIO
from magi_code.tools.narrowing import narrowed, with_skill_reads
from magi_code.tools.paths import Protected
from magi_code.tools.policy import Policy
from magi_code.tools.sandbox.modes import Sandbox, SandboxSettings
from magi_code.tools.sandbox.settings import MODE_ENV
from magi_code.tools.skill import SkillTool

if TYPE_CHECKING:
    from magi_code.runner.agents import SessionAgents
    from magi_code.runner.hook_runs import HookRunner
    from magi_code.runner.hooks import Hook

Selection = tuple[str | None, str | None, str | None]  # provider, model, thinking


def tool_env(admitted: Admitted) -> dict[str, str]:
    """The environment tools run with (shell commands, Code Mode, hooks): only the allowed
    names and what the global `[shell] env_keep` names, less anything credential-like (every
    provider's `api_key_env`, *TOKEN*, *SECRET*, ..., a value holding a URL password or a
    token); runner/environment.py has the lists."""
    named = {
        str(conf.get("api_key_env"))
        for table in (admitted.settings.get("providers", {}), admitted.credential_providers)
        for conf in table.values()
        if isinstance(conf, dict) and conf.get("api_key_env")
    }
    keep = environment.env_keep(admitted.settings)
    return environment.tool_environment(admitted.env, keep, named)


def sandbox(admitted: Admitted) -> Sandbox:
    """The session's OS sandbox: the `[sandbox]` settings, a face's MAGI_SANDBOX_MODE over
    their mode (startup has validated both)."""
    chosen = SandboxSettings.from_settings(
        admitted.settings.get("sandbox"), admitted.env.get(MODE_ENV)
    )
    return Sandbox(chosen, Path(admitted.cwd), admitted.paths.home, admitted.env.get("HOME"))


def policy(admitted: Admitted) -> Policy:
    """The permission policy, with MC_HOME and the user's credential files protected."""
    protected = Protected.for_homes(admitted.paths.home, admitted.env.get("HOME"))
    return Policy.from_settings(admitted.settings.get("permissions"), protected)


class TurnParts:
    """The per-process parts of every turn, built from the admitted snapshot once."""

    def __init__(self, admitted: Admitted) -> None:
        self.admitted = admitted
        web = admitted.settings.get("web") or {}
        builtin = builtin_tools(allow_private=web.get("allow_private") is True)
        self.tools, self.policy = context_tools(admitted.context, builtin, policy(admitted))
        self.web_search = web.get("search") is True
        self.env = tool_env(admitted)
        self.sandbox = sandbox(admitted)
        self.sandbox.auto = admitted.settings.get("approval_mode") == "auto"
        self.code_policy = code_mode_policy(admitted) if code_mode(admitted) else None
        self.hooks = _hooks(admitted.settings.get("hooks"))
        self.providers: dict[str, Provider] = {}
        self._credentials: CredentialStore | None = None
        self.remote_agents = _remote_agent_tools(admitted)  # kept: each caches its agent card

    def provider(self, provider_id: str) -> Provider:
        built = self.providers.get(provider_id)
        if built is None:
            built = self.providers[provider_id] = self._build(provider_id)
        return built

    def _build(self, provider_id: str) -> Provider:
        from magi_code.config.credentials import CredentialStore
        from magi_code.providers.failures import advised
        from magi_code.providers.registry import build_provider

        admitted = self.admitted
        if self._credentials is None:
            self._credentials = CredentialStore(admitted.paths.home)
        conf = admitted.settings["providers"][provider_id]
        sent_to = admitted.credential_providers.get(provider_id)
        built = build_provider(provider_id, conf, self._credentials, admitted.env, sent_to=sent_to)
        return advised(provider_id, conf, built)  # its failures say what to do

    def turn_tools(self) -> dict[str, Tool[Any]]:
        """The built-in tools, the remote A2A agents' and the MCP servers' tools as they are
        now, that the profile offers."""
        tools, mcp = self.tools, self.admitted.mcp
        if self.remote_agents:
            profile = self.admitted.context.profile
            remote = {n: t for n, t in self.remote_agents.items() if offers(profile, n)}
            tools = {**tools, **remote}
        if mcp is not None:
            profile = self.admitted.context.profile
            from magi_code.mcp.tool import mcp_tools

            offered = {n: t for n, t in mcp_tools(mcp).items() if offers(profile, n)}
            tools = {**tools, **offered}
        if self.code_policy is None:
            return tools
        from magi_code.tools.code_mode import CodeTool

        code = CodeTool(tuple(tools))
        return {**tools, code.name: code}


def parts(admitted: Admitted) -> TurnParts:
    if admitted.parts is None:
        admitted.parts = TurnParts(admitted)
    built: TurnParts = admitted.parts
    return built


def turn_setup(
    admitted: Admitted,
    selection: Selection,
    session_id: str,
    run_id: str,
    approvals: ApprovalBroker,
    agents: "SessionAgents | None" = None,
    host_io: HostIO | None = None,
) -> TurnSetup:
    from magi_code.providers.images import takes_images

    provider_id, model, thinking = selection
    provider_id, model = provider_id or admitted.provider, model or admitted.model
    conf = admitted.settings["providers"][provider_id]
    built = parts(admitted)
    tools, turn_policy, code_policy = built.turn_tools(), built.policy, built.code_policy
    if agents is not None:  # melchior tools and `agent` the profile offers, under the ceiling
        profile = admitted.context.profile
        offered = {n: t for n, t in agents.tools().items() if offers(profile, n)}
        tools, turn_policy = {**tools, **offered}, agents.policy(turn_policy)
        if code_policy is not None:  # the ceiling holds for bridged calls too
            code_policy = agents.policy(code_policy)
    return TurnSetup(
        session_id=session_id,
        run_id=run_id,
        model=model,
        instructions=admitted.instructions,
        thinking=thinking,
        provider=built.provider(provider_id),
        tools=tools,
        policy=turn_policy,
        workspace=Path(admitted.cwd),
        env=built.env,
        approvals=approvals,
        context_window=context_window(conf),
        hooks=_hook_runner(built.hooks, session_id, admitted, built.env),
        code_policy=code_policy,
        host_io=host_io,
        sandbox=built.sandbox,
        images=takes_images(provider_id, conf, model),
        web_search=built.web_search,
        max_rounds=admitted.settings.get("turn", {}).get("max_rounds", limits.TURN_MODEL_ROUNDS),
        checkpoints=TurnCheckpoints(
            SessionStore(Path(admitted.paths.home)).checkpoints_of(session_id),
            Path(admitted.cwd),
            built.env,
            run_id,
        ),
    )


def code_mode(admitted: Admitted) -> bool:
    """The profile's `code_mode` when it sets one, else the `code_mode` setting (then, under a
    tool allow-list, only when the list admits `code`)."""
    profile = admitted.context.profile
    if profile.code_mode is not None:
        return profile.code_mode
    return admitted.settings.get("code_mode") is True and offers(profile, "code")


def code_mode_policy(admitted: Admitted) -> Policy:
    """The Code Mode policy: the `[permissions.code_mode]` table, under the same protections,
    skill reads and profile rules as the direct policy, but none of its own rules. (The `code`
    tool itself is added each turn, over the tools offered then.)"""
    protected = Protected.for_homes(admitted.paths.home, admitted.env.get("HOME"))
    code_policy = Policy.for_code_mode(admitted.settings.get("permissions"), protected)
    _, code_policy = context_tools(admitted.context, {}, code_policy)
    return code_policy


def context_tools(
    context: Context, tools: dict[str, Tool[Any]], policy: Policy
) -> tuple[dict[str, Tool[Any]], Policy]:
    """The selected profile's view: the skill tool when skills exist, only the tools its
    allow-list names, and its permission rules narrowing the global policy."""
    if context.skills:
        skill = SkillTool(context.skills)
        tools = {**tools, skill.name: skill}
        policy = with_skill_reads(policy, (s.directory for s in context.skills), skill.name)
    offered = {name: tool for name, tool in tools.items() if offers(context.profile, name)}
    return offered, narrowed(policy, context.profile.permissions)


def context_window(conf: dict[str, object]) -> int:
    window = conf.get("context_window")
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        return window
    return compaction.DEFAULT_CONTEXT_WINDOW


def _remote_agent_tools(admitted: Admitted) -> dict[str, Tool[Any]]:
    """An `a2a_NAME` tool per `[a2a.agents.NAME]` (startup has checked them); the A2A modules
    load only when the settings name an agent."""
    table = admitted.settings.get("a2a")
    if not isinstance(table, dict) or not table.get("agents"):
        return {}
    from magi_code.a2a.agents import remote_agents
    from magi_code.a2a.remote import remote_agent_tools

    return dict(remote_agent_tools(remote_agents(admitted.settings), admitted.env))


def _hooks(table: object) -> "dict[str, tuple[Hook, ...]]":
    """The configured hooks by event; the hook modules load only when there are some."""
    if table is None:
        return {}
    from magi_code.runner.hooks import parse

    return parse(table)


def _hook_runner(
    hooks: "dict[str, tuple[Hook, ...]]", session_id: str, admitted: Admitted, env: dict[str, str]
) -> "HookRunner | None":
    if not hooks:
        return None
    from magi_code.runner.hook_runs import HookRunner

    events = {n.removeprefix("hooks.") for n in admitted.project if n.startswith("hooks.")}
    cwd, home = Path(admitted.cwd), admitted.paths.home
    return HookRunner(hooks, session_id, cwd, env, home=home, project_events=events)
