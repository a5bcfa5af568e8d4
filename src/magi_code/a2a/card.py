"""The agent card `magi-code a2a serve` publishes (sans-I/O): the agent (the profile it runs),
its skills (a general coding skill, then each skill the workspace offers), its bindings at the
server's URL, streaming, and HTTP bearer as its security scheme when tokens are configured."""

from __future__ import annotations

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

from magi_code import __version__
from magi_code.context.loader import Context

BEARER = "bearer"
REST_PREFIX = "/rest"  # the HTTP+JSON binding's paths; JSON-RPC is served at the root
TEXT = ["text/plain"]


def agent_card(context: Context, url: str, *, secured: bool) -> AgentCard:
    """`url` is the server's base URL, ending with `/`."""
    profile = context.profile
    described = profile.description or "a coding agent working in one workspace"
    skills = [
        AgentSkill(
            id="coding",
            name="coding",
            description=f"magi-code ({profile.name}): {described}; reads, edits and runs "
            "code in the server's workspace, under its sandbox and approval policy",
            tags=["coding"],
        )
    ]
    skills += [
        AgentSkill(id=f"skill-{s.name}", name=s.name, description=s.description, tags=["skill"])
        for s in context.skills
    ]
    card = AgentCard(
        name=f"magi-code {profile.name}",
        description=f"magi-code, profile {profile.name}: {described}",
        version=__version__,
        supported_interfaces=[
            _interface(url, TransportProtocol.JSONRPC),
            _interface(url.rstrip("/") + REST_PREFIX, TransportProtocol.HTTP_JSON),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=TEXT,
        default_output_modes=TEXT,
        skills=skills,
    )
    if secured:
        scheme = HTTPAuthSecurityScheme(scheme="Bearer", description="a token the owner gave")
        card.security_schemes[BEARER].CopyFrom(SecurityScheme(http_auth_security_scheme=scheme))
        card.security_requirements.append(SecurityRequirement(schemes={BEARER: StringList()}))
    return card


def _interface(url: str, binding: TransportProtocol) -> AgentInterface:
    return AgentInterface(
        url=url, protocol_binding=binding.value, protocol_version=PROTOCOL_VERSION_CURRENT
    )
