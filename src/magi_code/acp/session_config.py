"""A session's modes and configuration options as ACP shows them. Pure: no I/O.

- Modes are the approval modes every face has (mission_control/observe.py `FacePolicy`): `ask`,
  `edits`, `auto` (what the OS sandbox contains runs unasked) and `full`. They are advertised
  both as the session's `modes` and as its `mode` option.
- The `model` option lists what each configured provider offers (providers/known_models.py),
  as `provider/model`; the session's own selection is always among them.
"""

from collections.abc import Iterable

from acp.schema import (
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

from magi_code.mission_control.observe import APPROVAL_MODES, ApprovalMode

Option = SessionConfigOptionSelect | SessionConfigOptionBoolean
MODE, MODEL = "mode", "model"  # the configuration options' ids
MODES: dict[ApprovalMode, tuple[str, str]] = {
    "ask": ("Ask", "Ask before each call the rules do not allow"),
    "edits": ("Edits", "Edit files in the workspace unasked; ask for the rest"),
    "auto": ("Auto", "Run unasked what the OS sandbox contains; ask for the rest"),
    "full": ("Full access", "Run unasked what the rules would ask about (a deny still holds)"),
}


def approval_mode(value: str) -> ApprovalMode | None:
    """The mode named `value`, or None when there is none by that name."""
    return next((mode for mode in APPROVAL_MODES if mode == value), None)


def modes(current: ApprovalMode) -> SessionModeState:
    shown = [
        SessionMode(id=mode, name=name, description=said) for mode, (name, said) in MODES.items()
    ]
    return SessionModeState(current_mode_id=current, available_modes=shown)


def model_value(provider: str, model: str) -> str:
    return f"{provider}/{model}"


def parse_model(value: str) -> tuple[str, str] | None:
    """(provider, model) from a `model` option value; None for one of no such shape."""
    provider, _, model = value.partition("/")
    return (provider, model) if provider and model else None


def options(mode: ApprovalMode, selected: str, offered: Iterable[tuple[str, str]]) -> list[Option]:
    """The session's options: its mode, and its model among `offered` (provider, model)."""
    mode_choices = [
        SessionConfigSelectOption(value=mode_id, name=name, description=said)
        for mode_id, (name, said) in MODES.items()
    ]
    values = [model_value(provider, model) for provider, model in offered]
    if selected not in values:
        values.insert(0, selected)
    model_choices = [SessionConfigSelectOption(value=value, name=value) for value in values]
    return [
        SessionConfigOptionSelect(
            id=MODE,
            name="Approval mode",
            category="mode",
            type="select",
            current_value=mode,
            options=mode_choices,
        ),
        SessionConfigOptionSelect(
            id=MODEL,
            name="Model",
            category="model",
            type="select",
            current_value=selected,
            options=model_choices,
        ),
    ]
