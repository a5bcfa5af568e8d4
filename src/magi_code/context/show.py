"""What `magi-code context` prints: the model's instructions, source by source, redacted, then
the tools offered, the subagent profiles and every notice. Pure: a Context in, text out."""

from magi_code.context.loader import Context, ordered_sources
from magi_code.redact import redact


def render(context: Context, *, trusted: bool, tools: list[str]) -> str:
    profile = context.profile
    lines = [
        f"agent: {profile.name} ({profile.origin})",
        f"workspace root: {context.root} ({'trusted' if trusted else 'not trusted'})",
        "",
    ]
    for source, (kind, origin, size) in zip(context.sources, ordered_sources(context), strict=True):
        lines += [f"== {kind}: {origin} ({size} bytes)", redact(source.text), ""]
    lines.append(f"tools offered: {', '.join(tools) or '(none)'}")
    lines.append(f"skills: {', '.join(s.name for s in context.skills) or '(none)'}")
    subagents = context.subagents()
    lines.append(f"subagent profiles: {', '.join(p.name for p in subagents) or '(none)'}")
    lines.append(f"notices: {len(context.notices)}")
    lines += [f"- {redact(notice)}" for notice in context.notices]
    return "\n".join(lines)
