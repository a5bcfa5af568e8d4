"""`magi-code acp`: an Agent Client Protocol agent over stdio, for editors (Zed, JetBrains, ...).

Built on the `agent-client-protocol` SDK, which owns JSON-RPC and the schema; this package maps
ACP sessions onto stored sessions and runs prompts through the runner's one entry,
`start_turn`. The SDK (and pydantic with it) is imported only under `magi-code acp`.
"""
