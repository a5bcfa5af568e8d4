"""What the model is told and may load: instructions, skills and agent profiles (`loader`
is the one entry every face and subagent uses)."""

from __future__ import annotations

from magi_code.errors import MagiError

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import Literal

    ContextCode = Literal[
        "configuration_invalid", "profile_invalid", "skill_invalid", "front_matter_invalid"
    ]


class ContextError(MagiError):
    """Instructions, skills or profiles that cannot be used; the message says why, without
    file text."""

    code: ContextCode = "configuration_invalid"
