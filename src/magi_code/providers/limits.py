"""Bounds of the provider layer that the specs leave to us; spec-named bounds live in
`magi_code.limits` and are never restated here."""

# One SSE event (its field lines, LF-joined, excluding the dispatching blank line). Generous:
# a single tool call's arguments may carry a whole file.
SSE_EVENT_BYTES = 16 * 1024 * 1024

# Transport retries for connection failures, 429 and 5xx: attempts in total, and backoff (full
# jitter: a random share of the base delay doubled per attempt, capped).
RETRY_ATTEMPTS = 4
RETRY_BASE_DELAY_S = 0.5
RETRY_MAX_DELAY_S = 30.0  # also the longest Retry-After waited for: a longer one fails at once

# Connecting and sending a request (not the response stream, which has the inactivity bound).
CONNECT_TIMEOUT_S = 30.0
# A response's whole head (any 1xx heads before it included), from the request's end: a total,
# however its bytes are spaced. As long as one inactivity wait, since a local model's server
# may send its head only with the first token.
RESPONSE_HEAD_S = 180.0
# A request with its retries: no attempt starts, none waits for its head, and no retry waits
# for its first event later than this after the first attempt began. The first attempt's body
# has the inactivity bound alone: a slow model may keep its stream alive with comments.
REQUEST_DEADLINE_S = 240.0

# A response's head: its status line, header lines and the blank line that ends them, however
# the bytes arrive (httpcore2's allowance). Each 1xx head skipped before it is bounded alike,
# and so is a chunked body's trailer section (its lines and the blank line).
RESPONSE_HEAD_BYTES = 100 * 1024
# Informational (1xx) heads skipped before a response's final head; one more is refused.
INFORMATIONAL_HEADS = 8
# One line of a chunked body that gives a chunk's size (its extensions and line end included).
CHUNK_LINE_BYTES = 4096

# Discovery listings are control responses: bounded like error bodies.
CATALOG_BODY_BYTES = 4 * 1024 * 1024
# What a provider's error body said, as a person's face shows it (providers/failures.py): at
# most this many characters, after redaction (a longer message is cut, ending in "…").
PROVIDER_MESSAGE_CHARS = 300

# Anthropic's Messages API requires max_tokens; used when a request leaves it open.
ANTHROPIC_DEFAULT_MAX_TOKENS = 8192
# Thinking budget per effort word, for Anthropic extended thinking.
ANTHROPIC_THINKING_BUDGETS = {"low": 2048, "medium": 8192, "high": 24576}

# Codex sign-in: refresh an access token this long before it expires.
TOKEN_REFRESH_MARGIN_S = 60.0
# Sign-in: the longest wait for the user; the device flow's poll interval floor.
SIGN_IN_WAIT_S = 900.0
DEVICE_POLL_MIN_S = 1.0

# A pooled connection is reused only if its response was read to its end: after the terminal
# event, the rest of a stream is read and dropped, within these bounds (else the connection
# is closed and the next request opens a new one).
STREAM_DRAIN_S = 0.5
STREAM_DRAIN_BYTES = 64 * 1024
# How long an idle pooled connection is kept for the next request (of this turn or the next),
# and how many idle connections one origin keeps (more close the one idle longest).
KEEPALIVE_S = 30.0
IDLE_CONNECTIONS_PER_ORIGIN = 8
# Taking an idle HTTP/1.1 connection whose stream's buffers cannot be looked at (not anyio's
# asyncio socket or TLS stream): how long a receive may take to hand over bytes already
# buffered on our side (then the connection is not quiet, and closes).
QUIET_CHECK_S = 0.001
# Closing an HTTP/2 connection: how long its GOAWAY may take to go out before the socket
# closes without it.
GOODBYE_S = 1.0

# A provider's own web search: the sources a reply's citations name, listed at its end.
CITED_SOURCES = 50  # sources listed; more are left out
CITED_TITLE_CHARS = 200  # of one source's title
ANTHROPIC_WEB_SEARCHES = 5  # searches Anthropic's web_search tool may run in one request
