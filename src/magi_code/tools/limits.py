"""Bounds of the built-in tools, once. Tests import them from here and never restate a number.

Protocol bounds (summary bytes, approval expiry) stay in `magi_code.limits`.
"""

# Arguments the model sends for one call (write_file content rides in here).
ARGUMENTS_BYTES = 4 * 1024 * 1024

# Text returned to the model.
TEXT_BYTES = 64 * 1024  # read_file, list_dir, glob and grep output
OUTPUT_BYTES = 96 * 1024  # backstop on any tool's output, notes included
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

# shell
SHELL_TIMEOUT_S = 120.0
SHELL_MAX_TIMEOUT_S = 600.0
SHELL_OUTPUT_BYTES = 64 * 1024  # combined stdout+stderr kept: head and tail halves
SHELL_DRAIN_S = 0.5  # after the shell exits, how long background writers may hold the pipe
SHELL_KILL_GRACE_S = 2.0  # SIGTERM to SIGKILL
