"""MCP servers: approval of canonical definitions, a cancellable strict startup, tool bridges.

Nothing here imports the MCP SDK at module import except `transport`, `manager` and `tool`,
which only load once a server is enabled: the SDK costs 0.6 s and must stay off the path from
`serve --stdio` to the `initialize` result.
"""
