"""Sans-I/O: one line from the ACP client, checked before the ACP SDK reads it.

The SDK's receive loop takes every line for a JSON-RPC object it can route: a batch `[...]`,
`"hi"`, `1`, an id it cannot hash or an error that is no object raise inside it and end the
process, and a line that is not JSON is dropped with a traceback and no answer. Here each line
is judged first, and what JSON-RPC 2.0 asks is answered in its stead (id null where the id
could not be read):
  blank -> skipped, unanswered;
  not UTF-8 JSON, or nested deeper than UNTRUSTED_JSON_DEPTH -> -32700 Parse error;
  not an object; an id that is not a string, an integer or null; a method that is not a
  string; neither a method nor an id -> -32600 Invalid Request (with the id when it is valid);
  a response with neither a result nor an error object -> handed on as a plain error, so that
  the request waiting for it fails, not the loop;
  anything else -> handed on as it came.
A line past ACP_MESSAGE_BYTES never gets here: main.py skips it and answers TOO_LARGE.
"""

import json

from magi_code import untrusted_json
from magi_code.limits import ACP_MESSAGE_BYTES, UNTRUSTED_JSON_DEPTH
from magi_code.records import record


@record
class Judged:
    line: bytes | None  # what the SDK reads, if anything
    answer: bytes | None  # the error written back to the client, if any


Id = str | int | None

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603


def _line(message: dict[str, object]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def error(code: int, message: str, request_id: Id = None) -> bytes:
    return _line({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


NOT_JSON = error(
    PARSE_ERROR, f"Parse error: not JSON, or nested deeper than {UNTRUSTED_JSON_DEPTH} levels"
)
NOT_A_MESSAGE = "Invalid Request: not a JSON-RPC request, notification or response"
TOO_LARGE = error(INVALID_REQUEST, f"Invalid Request: a message over {ACP_MESSAGE_BYTES} bytes")


def judge(line: bytes) -> Judged:
    if not line.strip():
        return Judged(None, None)
    try:
        message = untrusted_json.loads(line)
    except ValueError:
        return Judged(None, NOT_JSON)
    if not isinstance(message, dict) or not _valid_id(message.get("id")):
        return Judged(None, error(INVALID_REQUEST, NOT_A_MESSAGE))
    request_id: Id = message.get("id")
    if "method" in message:
        if isinstance(message["method"], str):
            return Judged(line, None)
        return Judged(None, error(INVALID_REQUEST, NOT_A_MESSAGE, request_id))
    if "id" not in message:
        return Judged(None, error(INVALID_REQUEST, NOT_A_MESSAGE))
    if "result" in message or isinstance(message.get("error"), dict):
        return Judged(line, None)
    plain = {"code": INTERNAL_ERROR, "message": "the client answered with a malformed error"}
    return Judged(_line({"jsonrpc": "2.0", "id": request_id, "error": plain}), None)


def _valid_id(value: object) -> bool:
    return value is None or isinstance(value, str) or type(value) is int
