"""Elicitation: what an MCP server asks the person during one of our tool calls, decided here
once for every face. A face only shows a `Form` and hands back the person's `Answer`.

Rules:
- Only form mode is answered. The requested schema must be MCP's restricted one: a flat
  object whose properties are strings (with `minLength`, `maxLength`, `format` email, uri,
  date or date-time), numbers, integers (`minimum`, `maximum`), booleans, single-select
  enums (`enum`, with `enumNames`, or `oneOf` of const and title) and multi-select enums
  (`type: array` of such items, `minItems`, `maxItems`); titles, descriptions, defaults and
  `required` are kept. Anything else, URL mode, or a form past its bounds (FORM_FIELDS,
  FORM_CHOICES) is declined, and the tool's result says why (live.py notes).
- Nobody to ask (exec, the local agent, an editor that offers no elicitation): declined, and
  the tool's result says so. No call of ours running on that server: declined.
- An answer is checked against the form (`checked`) before anything is sent: a face shows
  the problems and keeps what was typed; an answer that still does not fit (an editor's) is
  declined, saying why. `accept` sends the checked values; `decline` and `cancel` send none.
- What a server wrote (message, titles, descriptions) is shown redacted, without control
  characters, cut at FORM_TEXT_CHARS. Pure but for `decide`, which awaits the face. The SDK's
  types are named here for their checks only: the manager, which holds the SDK, answers it.
"""

import datetime
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from magi_code.mcp.limits import ANSWER_CHARS, FORM_CHOICES, FORM_FIELDS, FORM_TEXT_CHARS
from magi_code.records import field, record
from magi_code.redact import redact
from magi_code.tools.summaries import clip_utf8, one_line, scrub_surrogates

if TYPE_CHECKING:
    import mcp_types

    from magi_code.mcp.live import LiveCall

Kind = Literal["text", "number", "integer", "boolean", "choice", "choices"]
Action = Literal["accept", "decline", "cancel"]
Value = str | int | float | bool | list[str]
Raw = Value | None  # what a face hands back for one field: text typed, or a value

FORMATS = ("email", "uri", "date", "date-time")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")
_CONTROLS = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
NO_PERSON = "nobody here can answer it, so it was declined"


@record
class Field:
    name: str  # the property's key, sent back
    label: str  # its title, else its name
    kind: Kind
    description: str = ""
    required: bool = False
    default: Value | None = None
    choices: tuple[tuple[str, str], ...] = ()  # (value, label) of a choice(s) field
    minimum: float | None = None  # a number's, or a text's or a list's length
    maximum: float | None = None
    format: str | None = None  # a text's: one of FORMATS


@record
class Form:
    server: str
    message: str
    fields: tuple[Field, ...]


@record
class Answer:
    action: Action
    values: Mapping[str, Raw] = field(default_factory=dict)


def form_of(server: str, params: "mcp_types.ElicitRequestParams") -> Form | str:
    """The form a request asks the person to fill, or why it cannot be shown."""
    if params.mode != "form":
        return "it asked to open a URL, which this client does not do"
    schema = params.requested_schema
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping) or schema.get("type", "object") != "object":
        return "its form is not a flat object of fields"
    if len(properties) > FORM_FIELDS:
        return f"its form has {len(properties)} fields, more than {FORM_FIELDS}"
    required = schema.get("required") or []
    if not isinstance(required, list):
        return "its form's `required` is not a list"
    fields = []
    for name, prop in properties.items():
        made = _field(str(name), prop, name in required)
        if isinstance(made, str):
            return f"its field {shown(str(name))!r} {made}"
        fields.append(made)
    return Form(shown(server), shown(params.message), tuple(fields))


def _field(name: str, prop: object, required: bool) -> Field | str:
    if not isinstance(prop, Mapping):
        return "is no schema"
    kind, choices = _kind(prop)
    if kind is None:
        return f"has a type this form does not take ({shown(str(prop.get('type')))})"
    if len(choices) > FORM_CHOICES:
        return f"offers {len(choices)} choices, more than {FORM_CHOICES}"
    form_format = prop.get("format")
    if kind == "text" and form_format is not None and form_format not in FORMATS:
        return f"has a format this form does not check ({shown(str(form_format))})"
    low, high = ("minimum", "maximum") if kind in ("number", "integer") else ("", "")
    if kind == "text":
        low, high = "minLength", "maxLength"
    if kind == "choices":
        low, high = "minItems", "maxItems"
    default = prop.get("default")
    return Field(
        name,
        shown(str(prop.get("title") or name)),
        kind,
        shown(str(prop.get("description") or "")),
        required,
        default if isinstance(default, (str, int, float, bool, list)) else None,
        choices,
        _number(prop.get(low)) if low else None,
        _number(prop.get(high)) if high else None,
        form_format if kind == "text" else None,
    )


def _kind(prop: Mapping[str, Any]) -> tuple[Kind | None, tuple[tuple[str, str], ...]]:
    """The field's kind and, for a choice, its (value, label) pairs."""
    declared = prop.get("type")
    if declared == "array":
        items = prop.get("items")
        choices = _choices(items) if isinstance(items, Mapping) else None
        return ("choices", choices) if choices else (None, ())
    if declared == "string":
        choices = _choices(prop)
        if choices is not None:
            return ("choice", choices) if choices else (None, ())
        return "text", ()
    if declared in ("number", "integer", "boolean"):
        kinds: dict[str, Kind] = {"number": "number", "integer": "integer", "boolean": "boolean"}
        return kinds[declared], ()
    return None, ()


def _choices(schema: Mapping[str, Any]) -> tuple[tuple[str, str], ...] | None:
    """The choices of an enum schema (`enum` with `enumNames`, `oneOf`/`anyOf` of const and
    title); None when it is no enum, () when it is a malformed one."""
    if isinstance(schema.get("enum"), list):
        values = schema["enum"]
        names = schema.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(values) else values
        if not all(isinstance(v, str) for v in values):
            return ()
        return tuple((v, shown(str(label))) for v, label in zip(values, labels, strict=True))
    options = schema.get("oneOf", schema.get("anyOf"))
    if not isinstance(options, list):
        return None
    pairs = []
    for option in options:
        if not isinstance(option, Mapping) or not isinstance(option.get("const"), str):
            return ()
        pairs.append((option["const"], shown(str(option.get("title") or option["const"]))))
    return tuple(pairs)


def _number(value: object) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok else None  # type: ignore[arg-type]


def shown(text: str) -> str:
    """Server text fit for a person's screen: redacted, no control characters but newlines,
    at most FORM_TEXT_CHARS."""
    return clip_utf8(redact(_CONTROLS.sub("", scrub_surrogates(text))), FORM_TEXT_CHARS)


# ---- answers ---------------------------------------------------------------------------------


def checked(form: Form, raw: Mapping[str, Raw]) -> dict[str, Value] | list[str]:
    """The values to send for a person's answer, or what is wrong with it (one line a field,
    naming it: what to change)."""
    values: dict[str, Value] = {}
    problems: list[str] = []
    for item in form.fields:
        given = raw.get(item.name)
        if given is None or given == "" or given == []:
            if item.required:
                problems.append(f"{item.label}: required")
            continue
        value = _value(item, given)
        if isinstance(value, _Problem):
            problems.append(f"{item.label}: {value.said}")
        else:
            values[item.name] = value
    return problems or values


@record
class _Problem:
    said: str


def _value(item: Field, given: Value) -> Value | _Problem:
    if item.kind == "boolean":
        return given if isinstance(given, bool) else _Problem("must be yes or no")
    if item.kind == "choices":
        offered = {value for value, _ in item.choices}
        if not isinstance(given, list) or not set(given) <= offered:
            return _Problem("pick among the choices shown")
        return _length(given, item, "choices") or list(given)
    if item.kind in ("number", "integer"):
        return _numeric(item, given)
    if not isinstance(given, str):
        return _Problem("must be text")
    if item.kind == "choice":
        if given not in {value for value, _ in item.choices}:
            return _Problem("pick one of the choices shown")
        return given
    if len(given) > ANSWER_CHARS:
        return _Problem(f"at most {ANSWER_CHARS} characters")
    return _length(given, item, "characters") or _formatted(item, given)


def _numeric(item: Field, given: Value) -> int | float | _Problem:
    """A number typed (text) or given (an editor's value), within the field's range."""
    whole = item.kind == "integer"
    wrong = _Problem("must be a whole number" if whole else "must be a number")
    if isinstance(given, (bool, list)):
        return wrong
    try:
        number: int | float = int(given) if whole else float(given)
    except (ValueError, OverflowError):
        return wrong
    if whole and isinstance(given, float) and number != given:
        return wrong
    if number != number or number in (float("inf"), float("-inf")):
        return _Problem("must be a finite number")
    if item.minimum is not None and number < item.minimum:
        return _Problem(f"at least {item.minimum:g}")
    if item.maximum is not None and number > item.maximum:
        return _Problem(f"at most {item.maximum:g}")
    return number


def _length(given: str | list[str], item: Field, unit: str) -> _Problem | None:
    if item.minimum is not None and len(given) < item.minimum:
        return _Problem(f"at least {item.minimum:g} {unit}")
    if item.maximum is not None and len(given) > item.maximum:
        return _Problem(f"at most {item.maximum:g} {unit}")
    return None


def _formatted(item: Field, given: str) -> str | _Problem:
    if item.format == "email" and not _EMAIL.fullmatch(given):
        return _Problem("must be an email address (name@example.com)")
    if item.format == "uri" and not _URI.fullmatch(given):
        return _Problem("must be a URI (https://example.com)")
    try:
        if item.format == "date":
            datetime.date.fromisoformat(given)
        elif item.format == "date-time":
            datetime.datetime.fromisoformat(given)
    except ValueError:
        example = "2026-12-31" if item.format == "date" else "2026-12-31T23:59:00"
        return _Problem(f"must be a {item.format} ({example})")
    return given


def initial(item: Field) -> Raw:
    """What a field shows before the person types: its default, as a face hands it back."""
    default = item.default
    if item.kind == "choices":
        return [str(v) for v in default] if isinstance(default, list) else []
    if item.kind == "boolean":
        return default if isinstance(default, bool) else None
    if default is None or isinstance(default, (bool, list)):
        return None
    return f"{default:g}" if isinstance(default, float) else str(default)


# ---- the decision ----------------------------------------------------------------------------


async def decide(
    server: str, params: "mcp_types.ElicitRequestParams", live: "LiveCall | None"
) -> tuple[Action, dict[str, Value] | None]:
    """The answer a server gets, as its action and, for `accept`, the checked values to send
    (the manager makes it the SDK's result): the person's, through the face of the call it
    came during (`live`), or a decline saying why in that call's result."""
    if live is None:  # no call of ours is running: nobody to show it to, nowhere to say so
        return "decline", None
    form = form_of(server, params)
    if isinstance(form, str):
        live.note(f"the MCP server {server} asked for input, but {form}; it was declined")
        return "decline", None
    if not live.answers:
        live.note(
            f"the MCP server {server} asked for input ({one_line(form.message)}); {NO_PERSON}"
        )
        return "decline", None
    answer = await live.ask(form)
    if answer.action != "accept":
        live.note(f"the person chose {answer.action} when the MCP server {server} asked for input")
        return answer.action, None
    values = checked(form, answer.values)
    if isinstance(values, list):
        said = "; ".join(values)
        live.note(f"the answer to the MCP server {server} did not fit its form ({said}); declined")
        return "decline", None
    return "accept", values
