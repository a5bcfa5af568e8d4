"""Bounds of the built-in tools, once. Tests import them from here and never restate a number.

Protocol bounds (summary bytes, approval expiry) stay in `magi_code.limits`.
"""

# Arguments the model sends for one call (write_file content rides in here).
ARGUMENTS_BYTES = 4 * 1024 * 1024

# Text returned to the model.
TEXT_BYTES = 64 * 1024  # read_file, list_dir, glob and grep output
OUTPUT_BYTES = 96 * 1024  # backstop on any tool's output, notes included
EVENT_OUTPUT_BYTES = 16 * 1024  # of a tool's output (redacted) an `exec --json` event carries
# A running command's output as a person watches it (tools/live_output.py)
LIVE_OUTPUT_INTERVAL_MS = 100  # at most one `tool.output.delta` this often
LIVE_OUTPUT_BYTES = 4096  # of what arrived since the last one, the newest kept
LINE_CHARS = 2000  # one displayed line (read_file, grep) before it is cut
LINE_READ_BYTES = 16 * 1024  # of one line kept when reading a file; the rest is read past

CANCEL_CHECK_LINES = 4096  # a worker thread reading lines checks for cancellation this often

# read_file
READ_DEFAULT_LINES = 2000
READ_MAX_LINES = 10_000

# Files and trees
BINARY_SNIFF_BYTES = 8192  # a NUL byte in this prefix marks a file as binary
EDIT_FILE_BYTES = 16 * 1024 * 1024  # edit_file loads the whole file
LIST_ENTRIES = 1000
GLOB_RESULTS = 1000
GREP_MATCHES = 200
GREP_FILE_BYTES = 16 * 1024 * 1024  # larger files are skipped
WALK_ENTRIES = 200_000  # directory entries one glob/grep may visit
LINK_CHECK_ENTRIES = 100_000  # protected files a hard link is compared against (by inode)
GREP_TIMEOUT_S = 60.0  # the search child is killed after this
GREP_KILL_GRACE_S = 1.0
GREP_REPLY_BYTES = 4 * TEXT_BYTES  # the child's JSON reply (escaping can grow the text)
GREP_SNIFF_BYTES = 64 * 1024  # a NUL in this head makes a file binary to grep (rg's first read)
RG_RECORD_BYTES = 256 * 1024  # one `rg --json` line parsed; a longer match shows no text
RG_READ_BYTES = 16 * 1024 * 1024  # of rg's output read by one grep; past it the search stops
IGNORE_FILE_BYTES = 1024 * 1024  # of one .gitignore/.ignore read; later lines do not count
IGNORE_EXPRESSIONS = 1000  # wildcard names, and paths, of one ignore file that count (not more)
GLOB_PATTERN_CHARS = 4096  # a glob longer than the longest path (PATH_MAX) is refused
BRACE_EXPANSIONS = 256  # patterns one glob's braces may expand to; more is refused

# shell
SHELL_TIMEOUT_S = 120.0
SHELL_MAX_TIMEOUT_S = 600.0
SHELL_OUTPUT_BYTES = 64 * 1024  # combined stdout+stderr kept: head and tail halves
SHELL_DRAIN_S = 0.5  # after the shell exits, how long background writers may hold the pipe
SHELL_KILL_GRACE_S = 2.0  # SIGTERM to SIGKILL
# After a sandboxed command ends, what it left in its PID namespace lives at most this long
# (tools/sandbox/contain.py), even when no one ends its group (the agent died): longer than
# SHELL_DRAIN_S + SHELL_KILL_GRACE_S, so that the shell tool's own ending always comes first.
SANDBOX_LEFTOVER_S = 5.0
# A contained command's init adds a rule for its own /proc to the ruleset it shares with the
# commands before it (confine.py): after this many spawns a ruleset is made anew from the kept
# plan (about 0.7 ms), so those rules, inert once their command has ended, never pile up.
SANDBOX_RULESET_SPAWNS = 64

# Images (tools/images.py): read_file, and what a face attaches to a prompt
IMAGE_FILE_BYTES = 20 * 1024 * 1024  # the largest image file read; a larger one is refused
IMAGE_PIXELS = 50_000_000  # width x height an image may declare; more is refused undecoded
# An image as sent to the model and stored in the session: its longest side and its bytes.
# Anthropic scales down past 1568 px and refuses a side over 2000 px once a request holds
# many images; its 5 MiB bound per image (in base64) is the smallest of the wires'. An image
# over either bound is downscaled (and re-encoded as JPEG while still too large).
IMAGE_EDGE_PX = 2000
IMAGE_BYTES = 5 * 1024 * 1024 * 3 // 4  # 3.75 MiB: 5 MiB in base64
PROMPT_IMAGES = 16  # images one prompt may carry (exec --image, ACP, Mission Control)

# web_fetch (tools/web_fetch.py)
WEB_BODY_BYTES = 5 * 1024 * 1024  # of a response's body read; the rest is cut, and said so
WEB_FETCH_S = 30.0  # one fetch, its redirects included, from the first connect to the end
WEB_REDIRECTS = 5  # redirects followed; one more ends the fetch
# Of an HTML page's markup, its scripts and styles out, converted to Markdown: far more than
# the TEXT_BYTES shown of it; parsing and converting dense markup took 4 to 8 s a MiB on a
# loaded CI core, so this stays well within WEB_FETCH_S.
WEB_MARKUP_BYTES = 512 * 1024
APPROVAL_NOTE_CHARS = 2000  # of the note a person gives with a denial, read by the model

# update_plan (tools/plan.py): a checklist a person reads at a glance, in every face
PLAN_STEPS = 50  # steps one plan holds; more is refused (merge steps)
PLAN_STEP_CHARS = 300  # characters of one step (one line); a longer one is refused
PLAN_EXPLANATION_CHARS = 2000  # characters of the optional note on why the plan changed
