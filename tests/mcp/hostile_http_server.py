"""A hostile streamable-HTTP MCP server for tests, on raw asyncio sockets (no HTTP library
to tidy its answers): `python hostile_http_server.py DIR`.

It binds 127.0.0.1 at an ephemeral port and writes, in DIR: `pid`, `port` (once listening),
and `requests` (one "METHOD PATH [rpc-method [tool]]" line per request, flushed as it
arrives). Initialize opens a session (`Mcp-Session-Id: s<n>`); a request naming a session the
server does not hold gets 404, as the spec says. Tools (JSON answers unless told):
- echo(text): the text; the good call. nap(seconds): "awake", after that long.
- long_header(): a 200 KB header line.
- bad_chunks(): chunked framing with a chunk size that is no hex number.
- big(size): a JSON answer of exactly `size` bytes (the text padded to fit).
- gzip_bomb(): ~100 KB of gzip that decodes to 100 MiB (Content-Encoding: gzip).
- sse_big(size): an SSE answer whose one event is `size` bytes (its lines, as httpx2 counts).
- null_id(): a JSON-RPC error with `id: null` (status 200), as a server that could not parse
  the request answers.
- forget(): a 200 KB header line, and every session is forgotten (later ones get 404).
"""

import asyncio
import json
import os
import socket
import sys
import zlib
from pathlib import Path
from typing import Any

MIB = 1024 * 1024
TOOLS = [
    "echo",
    "nap",
    "long_header",
    "bad_chunks",
    "big",
    "gzip_bomb",
    "sse_big",
    "null_id",
    "forget",
]


class Hostile:
    def __init__(self, log: Path) -> None:
        self.log = log
        self.sessions: set[str] = set()
        self.issued = 0

    def note(self, line: str) -> None:
        with self.log.open("a") as handle:
            handle.write(line.rstrip() + "\n")

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self.exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """One request and its answer; False once the connection is to be closed."""
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *lines = head.decode("latin-1").split("\r\n")
        method, path, _ = request_line.split(" ", 2)
        headers = {}
        for line in lines:
            if ":" in line:
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        if method != "POST":
            self.note(f"{method} {path}")
            if method == "DELETE":
                self.sessions.discard(headers.get("mcp-session-id", ""))
                return await send(writer, 200, b"")
            return await send(writer, 405, b"")
        message = json.loads(body)
        rpc, params = message.get("method", ""), message.get("params") or {}
        tool = params.get("name", "") if rpc == "tools/call" else ""
        self.note(f"POST {path} {rpc} {tool}")
        session = headers.get("mcp-session-id")
        if rpc == "initialize":
            self.issued += 1
            session = f"s{self.issued}"
            self.sessions.add(session)
            result = {
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
            return await answer(writer, message["id"], result, {"Mcp-Session-Id": session})
        if session not in self.sessions:
            return await send(writer, 404, b"")
        if "id" not in message:  # a notification
            return await send(writer, 202, b"")
        if rpc == "tools/list":
            listed = [{"name": name, "inputSchema": {"type": "object"}} for name in TOOLS]
            return await answer(writer, message["id"], {"tools": listed})
        if rpc != "tools/call":
            return await answer(writer, message["id"], {})
        return await self.call(writer, message["id"], tool, params.get("arguments") or {})

    async def call(
        self, writer: asyncio.StreamWriter, call_id: Any, tool: str, arguments: dict[str, Any]
    ) -> bool:
        if tool == "echo":
            return await answer(writer, call_id, text_result(arguments["text"]))
        if tool == "nap":
            await asyncio.sleep(float(arguments["seconds"]))
            return await answer(writer, call_id, text_result("awake"))
        if tool in ("long_header", "forget"):
            if tool == "forget":
                self.sessions.clear()
            writer.write(b"HTTP/1.1 200 OK\r\nX-Junk: " + b"a" * (200 * 1024) + b"\r\n\r\n")
            await writer.drain()
            return False
        if tool == "bad_chunks":
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"
            )
            await writer.drain()
            return False
        if tool == "big":
            return await big(writer, call_id, int(arguments["size"]))
        if tool == "gzip_bomb":
            return await send(writer, 200, bomb(call_id), {"Content-Encoding": "gzip"})
        if tool == "sse_big":
            return await sse_big(writer, call_id, int(arguments["size"]))
        if tool == "null_id":
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse"}}
            return await send(writer, 200, json.dumps(error).encode())
        return await answer(writer, call_id, text_result("unknown tool"))


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


async def big(writer: asyncio.StreamWriter, call_id: Any, size: int) -> bool:
    """A JSON-RPC answer of exactly `size` bytes (one text block of ASCII padding), streamed."""
    empty = json.dumps({"jsonrpc": "2.0", "id": call_id, "result": text_result("")}).encode()
    head, tail = empty.split(b'"text": ""')
    head += b'"text": "'
    tail = b'"' + tail
    status = f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n"
    writer.write(status.encode() + b"Content-Type: application/json\r\n\r\n" + head)
    await pad(writer, size - len(empty))
    writer.write(tail)
    await writer.drain()
    return True


async def pad(writer: asyncio.StreamWriter, count: int) -> None:
    """`count` bytes of ASCII padding, a MiB at a time."""
    while count > 0:
        writer.write(b"x" * min(count, MIB))
        count -= MIB
        await writer.drain()


def bomb(call_id: Any) -> bytes:
    """~100 KB of gzip whose JSON answer decodes to over 100 MiB (a text of spaces)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    empty = json.dumps({"jsonrpc": "2.0", "id": call_id, "result": text_result("")}).encode()
    head, tail = empty.split(b'"text": ""')
    out = [packer.compress(head + b'"text": "')]
    block = b" " * MIB
    out += [packer.compress(block) for _ in range(100)]
    out += [packer.compress(b'"' + tail), packer.flush()]
    return b"".join(out)


async def sse_big(writer: asyncio.StreamWriter, call_id: Any, size: int) -> bool:
    """An SSE answer whose one event is `size` bytes as httpx2 counts it (its lines, line
    breaks left out): `event: message` and a `data:` line with the padded JSON answer."""
    empty = json.dumps({"jsonrpc": "2.0", "id": call_id, "result": text_result("")}).encode()
    head, tail = empty.split(b'"text": ""')
    event, data = b"event: message", b"data: " + head + b'"text": "'
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        + event
        + b"\r\n"
        + data
    )
    await pad(writer, size - len(event) - len(b"data: ") - len(empty))
    writer.write(b'"' + tail + b"\r\n\r\n")
    await writer.drain()
    return False


async def answer(
    writer: asyncio.StreamWriter, call_id: Any, result: Any, extra: dict[str, str] | None = None
) -> bool:
    body = json.dumps({"jsonrpc": "2.0", "id": call_id, "result": result}).encode()
    return await send(writer, 200, body, extra)


async def send(
    writer: asyncio.StreamWriter, status: int, body: bytes, extra: dict[str, str] | None = None
) -> bool:
    head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}"]
    if body:
        head.append("Content-Type: application/json")
    head += [f"{key}: {value}" for key, value in (extra or {}).items()]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    await writer.drain()
    return True


async def main() -> None:
    folder = Path(sys.argv[1])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    (folder / "pid").write_text(str(os.getpid()))
    hostile = Hostile(folder / "requests")
    server = await asyncio.start_server(hostile.serve, sock=sock, limit=MIB)
    (folder / "port.tmp").write_text(str(sock.getsockname()[1]))
    os.replace(folder / "port.tmp", folder / "port")
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
