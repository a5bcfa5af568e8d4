"""Built-in tools, the permission policy, the approval broker and summary redaction.

Nothing is imported here: the runner imports the modules it needs (`tools.builtin`,
`tools.policy`, `tools.approvals`), and `serve --stdio` pays for none of them at start.
Only the package's coded-error base is defined here (it imports nothing heavy).
"""

from __future__ import annotations

from magi_code.errors import MagiError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal, TypeAlias

    from magi_code.tools.base import InputErrorCode

    ToolsCode: TypeAlias = (
        InputErrorCode | Literal["configuration_invalid", "glob_invalid", "sandbox_unavailable"]
    )


class ToolsError(MagiError):
    """A tool's input, pattern or settings that cannot be used; the code is all a wire may
    carry."""

    code: ToolsCode
