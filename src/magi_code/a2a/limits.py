"""Every bound of `magi-code a2a serve`, once; tests take them from here.

The message bound is exec's (a script's prompt, FACE_PROMPT_BYTES): an A2A caller is a
program too. The request body may be larger than the text it carries (JSON escapes, parts'
framing) but never unbounded: a body past REQUEST_BODY_BYTES is refused before the app
sees any of it.
"""

from magi_code.limits import FACE_PROMPT_BYTES

DEFAULT_PORT = 8042  # `a2a serve` without --port
MESSAGE_BYTES = FACE_PROMPT_BYTES  # the UTF-8 text of one message's parts, together
REQUEST_BODY_BYTES = 8 * FACE_PROMPT_BYTES  # one HTTP request body, as received
TASKS_PER_TOKEN = 4  # turns one caller (one token; all callers without tokens) runs at once
TASKS_PER_CONTEXT = 1  # turns one context runs at once: a context is one session
# Contexts kept attached (their session's lease and melchior held) between turns; past it the
# least recently used idle ones are closed, and reopened from disk by their next message.
ATTACHED_CONTEXTS = 32
CANCEL_WAIT_MS = 2000  # how long `tasks/cancel` waits for the turn to record its cancel
# A task waiting for input lets go of the SDK's live state for it (its queues and watcher)
# after this long; a later message on it takes it up again from the task store.
INPUT_WAIT_RELEASE_S = 600
# Tasks kept, in memory and on disk (task_store.py): past it the oldest finished ones go (their
# sessions stay: a context continues from its session, not from its tasks).
STORED_TASKS = 1000
