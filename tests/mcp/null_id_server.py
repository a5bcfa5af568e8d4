"""A raw MCP stdio server for tests that answers like one that could not parse a request:
`python null_id_server.py`. Tools: `garble()` is answered with a JSON-RPC error whose id is
null; `hold()` is never answered; `echo(text)` returns the text. No SDK: the lines are its own.
"""

import json
import sys


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, params = message.get("method"), message.get("params") or {}
        if "id" not in message or method is None:
            continue  # a notification, or an answer
        if method == "initialize":
            result: dict[str, object] = {
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "null-id", "version": "1"},
            }
        elif method == "tools/list":
            names = ["garble", "hold", "echo"]
            result = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in names]}
        elif params.get("name") == "garble":
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse"}})
            continue
        elif params.get("name") == "hold":
            continue
        elif params.get("name") == "echo":
            text = params["arguments"]["text"]
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            result = {}
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main()
