"""The decoder fuzz targets. Each takes any bytes, runs one decoder the way its callers do
(streaming decoders over a split of the input that the input's first byte chooses) and
asserts the result is one the decoder documents; any other exception is a finding.

    frame      local_agent/framing.py   Frame / FrameTooLarge / IncompleteFrame, split-invariant
    envelope   local_agent/envelope.py  Request, or Rejection with a closed code
    sse        providers/sse.py         SSEEvent list or SSEError(closed reason), split-invariant
    wire       melchior/wire.py         message dict or Refusal(code in CODES), all transports
    session    sessions/records+reader  a record or session_invalid; a read is a projection or
                                        a session code; every valid record replays
    settings   config/settings.py       a dict or SettingsError from read_toml, None or
                                        SettingsError from validate

`TARGETS` adds the hostile-server targets (fuzz/hostile.py: HTTP/1.1 and HTTP/2 responses,
ACP lines) to these.
"""

import contextlib
import json
import os
import struct
import tempfile
from typing import Any

from fuzz import hostile
from fuzz.harness import Target, split
from magi_code.config import settings
from magi_code.local_agent import envelope, framing
from magi_code.providers import sse
from magi_code.runner.replay import Replayer
from magi_code.sessions import SESSION_CODES, SessionError
from magi_code.sessions.reader import SessionReader, decode_record
from magi_code.sessions.snapshot import build
from melchior import wire

SID = "s-fuzz"
FRAME_LIMIT = 64  # small, so that inputs of a few hundred bytes reach the oversize path
SSE_LIMIT = 256
ENVELOPE_CODES = frozenset(
    {"invalid_frame", "invalid_request", "protocol_mismatch", "invalid_params"}
)


# ---- frame ---------------------------------------------------------------------------------


def _frames(chunks: list[bytes]) -> list[framing.FrameEvent]:
    decoder = framing.FrameDecoder(FRAME_LIMIT)
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.end()


def fuzz_frame(data: bytes) -> None:
    body, chunks = split(data)
    events = _frames(chunks)
    assert events == _frames([body]), "the split changed the frames"
    for number, event in enumerate(events):
        if isinstance(event, framing.Frame):
            assert b"\n" not in event.data and len(event.data) <= FRAME_LIMIT
        else:
            assert isinstance(event, framing.FrameTooLarge | framing.IncompleteFrame)
            assert number == len(events) - 1, "nothing follows a refusal"


# ---- envelope ------------------------------------------------------------------------------


def fuzz_envelope(data: bytes) -> None:
    result = envelope.parse_request(data)
    if isinstance(result, envelope.Rejection):
        assert result.code in ENVELOPE_CODES
        assert result.id is None or envelope.valid_name(result.id)
    else:
        assert isinstance(result, envelope.Request)
        assert envelope.valid_name(result.id) and envelope.valid_name(result.method)
        assert isinstance(result.params, dict)


# ---- sse -----------------------------------------------------------------------------------


def _sse(chunks: list[bytes]) -> list[sse.SSEEvent] | str:
    decoder = sse.SSEDecoder(SSE_LIMIT)
    try:
        events = [event for chunk in chunks for event in decoder.feed(chunk)]
        return events + decoder.end()
    except sse.SSEError as error:
        assert error.reason in ("malformed_utf8", "event_too_large")
        return error.reason


def fuzz_sse(data: bytes) -> None:
    body, chunks = split(data)
    split_result, whole = _sse(chunks), _sse([body])
    if isinstance(split_result, list) and isinstance(whole, list):
        assert split_result == whole, "the split changed the events"
    for event in split_result if isinstance(split_result, list) else ():
        assert isinstance(event, sse.SSEEvent) and isinstance(event.data, str)


# ---- melchior wire -------------------------------------------------------------------------


def _item_ok(item: object) -> None:
    if isinstance(item, wire.Refusal):
        assert item.code in wire.CODES
    else:
        assert isinstance(item, dict)


def fuzz_wire(data: bytes) -> None:
    body, chunks = split(data)
    _item_ok(wire.parse(body))
    _item_ok(wire.decode_argv(body))
    pipe = wire.PipeDecoder(max_line=256)
    items = [item for chunk in chunks for item in pipe.feed(chunk)] + pipe.close()
    socket = wire.SocketDecoder(max_frame=256)
    items += [item for chunk in chunks for item in socket.feed(chunk)]
    for item in items:
        _item_ok(item)


# ---- session records -----------------------------------------------------------------------


def fuzz_session(data: bytes) -> None:
    body, chunks = split(data)
    replayer = Replayer()
    for line in body.split(b"\n"):
        try:
            record = decode_record(line, SID)
        except SessionError as error:
            assert error.code == "session_invalid"
            continue
        replayer.feed(record)  # every record the reader accepts replays (issue 19.6)
    reader = SessionReader(SID, os.getcwd())
    try:
        for chunk in chunks:
            reader.feed(chunk)
        build(reader.projection())
    except SessionError as error:
        assert error.code in SESSION_CODES


# ---- settings ------------------------------------------------------------------------------

_SETTINGS_FILE = os.path.join(tempfile.mkdtemp(prefix="fuzz-settings-"), "settings.toml")


def fuzz_settings(data: bytes) -> None:
    with open(_SETTINGS_FILE, "wb") as out:
        out.write(data)
    try:
        parsed = settings.read_toml(_SETTINGS_FILE)
    except settings.SettingsError:
        return
    assert isinstance(parsed, dict)
    with contextlib.suppress(settings.SettingsError):
        settings.validate(settings.merge(settings.DEFAULTS, parsed))


# ---- seeds ---------------------------------------------------------------------------------


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps({"session_id": SID, **record}).encode() + b"\n"


SESSION_RECORDS: list[dict[str, Any]] = [
    {"type": "session", "created_at": "2026-01-01T00:00Z"},
    {"type": "user", "run_id": "r1", "message_id": "u1", "text": "hi"},
    {"type": "assistant_chunk", "run_id": "r1", "message_id": "a1", "index": 0, "text": "he"},
    {"type": "assistant", "run_id": "r1", "message_id": "a1"},
    {"type": "tool", "run_id": "r1", "activity_id": "t1", "name": "x", "state": "completed"},
    {"type": "compaction", "text": "sum", "keep_from": "u1"},
    {"type": "reasoning_summary", "run_id": "r1", "item_id": "i", "text": "t"},
    {"type": "run_finished", "run_id": "r1", "outcome": "completed", "error_code": None},
]
SESSION_SEED = b"".join(map(_line, SESSION_RECORDS))

DECODERS: dict[str, Target] = {
    "frame": Target(
        fuzz_frame, [b"\x05" + b'{"a":1}\n' * 3, b"\x00" + b"x" * 70 + b"\n", b"\x03ab"]
    ),
    "envelope": Target(
        fuzz_envelope,
        [
            b'{"protocol":"magi-code.local-agent","version":1,"id":"r1","method":"status",'
            b'"params":{}}',
            b'{"id":"r1","id":"r2"}',
            b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        ],
    ),
    "sse": Target(
        fuzz_sse,
        [
            b"\x04\xef\xbb\xbfevent: a\r\ndata: x\r\ndata: y\r\nid: 1\r\nretry: 5\r\n\r\n",
            b"\x00data: " + b"z" * 300 + b"\n\n",
            b"\x02: comment\ndata:\xc3\xa9\n\n",
        ],
    ),
    "wire": Target(
        fuzz_wire,
        [
            b"\x03" + b'{"call":"status","args":[]}\n{"event":"listening","at":"x"}\n',
            b"\x00" + struct.pack(">I", 20) + b'{"ok":true,"family":1,"n":1,"result":[]}',
            b'\x05{"type":"x"}\n{"ok":false,"family":9}\n',
        ],
    ),
    "session": Target(fuzz_session, [b"\x07" + SESSION_SEED, b"\x00" + SESSION_SEED[:-9]]),
    "settings": Target(
        fuzz_settings,
        [
            b'provider = "fixture"\nmodel = "m"\n[providers.fixture]\nwire_api = "fixture"\n'
            b'models = ["m"]\n[sessions]\nretention_days = 3\n',
            b"a.b.c = [1, {x = 2}]\n",
            b"a = " + b"[" * 480 + b"]" * 480,  # deep, within what tomllib's recursion allows
        ],
    ),
}

TARGETS: dict[str, Target] = {**DECODERS, **hostile.TARGETS}
