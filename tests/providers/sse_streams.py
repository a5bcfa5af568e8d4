"""Recorded-shape SSE streams shared by the decoder tests and the benchmark."""

import json

CHAT = (
    b"".join(
        b"data: " + json.dumps(d, ensure_ascii=False).encode() + b"\n\n"
        for d in [
            {"choices": [{"delta": {"content": "Hé, ça va? 日本語 🎉"}}]},
            {
                "choices": [
                    {"delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"p'}}]}}
                ]
            },
            {
                "choices": [
                    {
                        "delta": {
                            "tool_calls": [{"index": 0, "function": {"arguments": 'ath": "ü"}'}}]
                        }
                    }
                ]
            },
        ]
    )
    + b"data: [DONE]\n\n"
)

RESPONSES_CRLF = (
    b'event: response.created\r\ndata: {"type":"response.created"}\r\n\r\n'
    b'event: response.output_text.delta\r\ndata: {"delta":"\xe2\x82\xac\xf0\x9f\x98\x80"}\r\n\r\n'
    b": keep-alive\r\n\r\n"
    b'event: response.completed\r\ndata: {"type":"response.completed"}\r\n\r\n'
)

ANTHROPIC_CR = (
    b'event: message_start\rdata: {"type":"message_start"}\r\r'
    b"event: ping\rdata: {}\r\r"
    b'event: content_block_delta\rdata: {"delta":{"text":"\xc3\xa9"}}\r\r'
)

MULTILINE_ID_RETRY = (
    b"id: 7\nretry: 1500\nevent: update\ndata: line one\ndata:line two\ndata\n\n"
    b"\n\n: comment only\n\nid: 8\x00bad\ndata: x\n\n"
)

BOM_FIRST = b"\xef\xbb\xbfdata: first\n\ndata: second\n\n"

TAIL = b"data: done\n\ndata: unterminated"

ALL = {
    "chat": CHAT,
    "responses_crlf": RESPONSES_CRLF,
    "anthropic_cr": ANTHROPIC_CR,
    "multiline": MULTILINE_ID_RETRY,
    "bom": BOM_FIRST,
    "tail": TAIL,
}
