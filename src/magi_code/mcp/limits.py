"""Bounds of MCP server connections, once. Tests import them from here."""

# Startup: spawn + initialize handshake + tools/list of one server, under one deadline.
CONNECT_S = 10.0
LIST_PAGES = 32  # tools/list pages followed per server
TOOLS_PER_SERVER = 512  # a server listing more fails startup

# A turn's tool list waits at most this long for a re-list announced by a server.
RELIST_WAIT_S = 2.0

# One JSON-RPC message from a server: one stdout line (LF excluded), a longer line ending the
# connection; over HTTP one answer body or one server-sent event, a larger one failing its call.
MESSAGE_BYTES = 16 * 1024 * 1024

# Streamable HTTP: connect, write and pool timeouts of one request (reads wait CALL_TIMEOUT_S,
# since a server may hold a response stream open that long).
HTTP_TIMEOUT_S = 30.0

# `mcp login`: how long the loopback listener waits for the browser, and the most bytes of one
# request to it (the request line with the authorization response, and headers).
LOGIN_S = 300.0
CALLBACK_BYTES = 16 * 1024

# One tools/call, from request to result.
CALL_TIMEOUT_S = 300.0

# Tool metadata handed to the model.
TOOL_NAME_CHARS = 64
DESCRIPTION_CHARS = 4096

# Shutdown: stdin is closed first; a server still running after STDIN_GRACE_S gets SIGTERM
# on its process group, then SIGKILL after TERM_GRACE_S.
STDIN_GRACE_S = 0.5
TERM_GRACE_S = 0.5
CLOSE_S = 2.0  # what McpManager.close waits for, by default, before SIGKILL

# How often a thread waiting on startup looks at its cancel event.
CANCEL_POLL_S = 0.02

# Images of one tools/call or resources/read result sent to the model; later ones are described.
RESULT_IMAGES = 8

# A server's `instructions` (from initialize) kept for the context; the rest is cut.
INSTRUCTIONS_CHARS = 4096
# Resources one resources/list answers with (every page); the rest are not shown.
RESOURCES_PER_SERVER = 512

# A stdio server's stderr kept to say why it failed: its last bytes, then its last lines of
# those; and how long its stderr is read for once the server ended.
STDERR_TAIL_BYTES = 2048
STDERR_TAIL_LINES = 20
STDERR_DRAIN_S = 0.5

# Restarts of one stdio server that stopped after startup, over the life of its manager: one
# per call that finds it stopped; a stop after the last one, or a failed restart, fails it.
RESTARTS = 3

# prompts/list: the prompts of one server offered as commands (every page); the rest are not.
PROMPTS_PER_SERVER = 128

# Before a prompt is sent: its `@server:uri` mentions read (at most MENTIONS of them), or a
# prompt command's messages got, each within ATTACH_S; the text they add is cut at
# ATTACHED_BYTES, saying so.
MENTIONS = 8
ATTACH_S = 30.0
ATTACHED_BYTES = 64 * 1024

# An elicitation form (elicitation.py) is shown only within these bounds, else declined saying
# why: its fields, and the choices of one field. Its message and each label or description
# are cut at FORM_TEXT_CHARS for the screen; a text answer is at most ANSWER_CHARS.
FORM_FIELDS = 32
FORM_CHOICES = 64
FORM_TEXT_CHARS = 2048
ANSWER_CHARS = 4096

# Live progress of one tool call (live.py): at most one report forwarded per this interval
# (the latest wins); its message cut at PROGRESS_MESSAGE_CHARS.
PROGRESS_INTERVAL_S = 0.25
PROGRESS_MESSAGE_CHARS = 200
