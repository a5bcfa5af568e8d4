"""An MCP server's question (mcp/elicitation.py `Form`) as ACP's `elicitation/create` in form
mode, and the editor's response as the person's `Answer`. Pure: no I/O.

Rules:
- Asked only of a client that declared `elicitation.form` in `initialize` (`offers_forms`);
  scoped to the session and to the tool call it came during.
- The schema sent is the form as it was checked (mcp/elicitation.py): each field with its
  title, description, default, range or length, format, and its choices as titled options.
- The response's action is the person's; its content is checked against the form by
  elicitation.py before the server sees it.
"""

from typing import Any

from acp.schema import (
    AcceptElicitationResponse,
    CancelElicitationResponse,
    ClientCapabilities,
    DeclineElicitationResponse,
    ElicitationFormSessionMode,
    ElicitationSchema,
    OtherElicitationResponse,
)

from magi_code.mcp.elicitation import Answer, Field, Form

Response = (
    AcceptElicitationResponse
    | DeclineElicitationResponse
    | CancelElicitationResponse
    | OtherElicitationResponse
)


def offers_forms(caps: ClientCapabilities | None) -> bool:
    return caps is not None and caps.elicitation is not None and caps.elicitation.form is not None


def form_mode(form: Form, session_id: str, tool_call_id: str | None) -> ElicitationFormSessionMode:
    properties = {item.name: _property(item) for item in form.fields}
    required = [item.name for item in form.fields if item.required]
    schema = ElicitationSchema.model_validate(
        {"type": "object", "properties": properties, "required": required or None}
    )
    return ElicitationFormSessionMode(
        session_id=session_id, tool_call_id=tool_call_id, requested_schema=schema
    )


def _property(item: Field) -> dict[str, Any]:
    said: dict[str, Any] = {"title": item.label}
    if item.description:
        said["description"] = item.description
    if item.default is not None:
        said["default"] = item.default
    options = [{"const": value, "title": label} for value, label in item.choices]
    bounds = ("minimum", "maximum")
    if item.kind == "text":
        said |= {"type": "string", "format": item.format}
        bounds = ("minLength", "maxLength")
    elif item.kind in ("number", "integer", "boolean"):
        said["type"] = item.kind
    elif item.kind == "choice":
        said |= {"type": "string", "oneOf": options}
    else:
        said |= {"type": "array", "items": {"anyOf": options}}
        bounds = ("minItems", "maxItems")
    for key, bound in zip(bounds, (item.minimum, item.maximum), strict=True):
        if bound is not None and item.kind != "boolean":
            whole = key not in ("minimum", "maximum") or item.kind == "integer"
            said[key] = int(bound) if whole else bound
    return {key: value for key, value in said.items() if value is not None}


def answer(response: Response) -> Answer:
    """The person's answer; an action ACP may add later counts as cancel."""
    if isinstance(response, AcceptElicitationResponse):
        return Answer("accept", dict(response.content or {}))
    if isinstance(response, DeclineElicitationResponse):
        return Answer("decline")
    return Answer("cancel")
