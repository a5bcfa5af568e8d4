"""A tiny real MCP stdio server for tests: `python prompts_server.py COUNT`. It offers COUNT
prompts (`p0`, `p1`, ..., each answering its own name) and one resource, `img://dot`: a PNG
image as a blob."""

import base64
import sys

# A 1x1 PNG.
DOT = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def main() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("prompts")
    for n in range(int(sys.argv[1])):
        server.prompt(name=f"p{n}")(lambda n=n: f"prompt {n}")

    @server.resource("img://dot", mime_type="image/png")
    def dot() -> bytes:
        return DOT

    server.run("stdio")


if __name__ == "__main__":
    main()
