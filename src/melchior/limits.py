"""Every bound melchior names, in one place. Tests import these; nothing restates them.

This module owns numbers only: it must never import another melchior module or do I/O.
"""

from __future__ import annotations

import sys

# The wire revision this code writes, and the oldest one it still reads.
FAMILY = 1
MIN_FAMILY = 1

# Socket framing: four bytes of big-endian length, then at most MAX_FRAME bytes of JSON.
FRAME_HEADER = 4
MAX_FRAME = 1 << 20
# A pipe line (without its newline) is bounded by the same number.
MAX_LINE = MAX_FRAME
# The argv transport's one object may carry a whole report (escaped): bounded apart.
MAX_ARGV = 8 * (16 << 20)

# Text a peer may send in one tell or ask, in UTF-8 bytes.
MAX_TEXT = 64 * 1024
# A call name is a short word.
MAX_CALL = 64

# Reports: stored whole, moved in chunks and pages that fit a frame whatever the escaping
# (a control character becomes six bytes of JSON: 6 * 128 KiB < MAX_FRAME).
MAX_REPORT = 16 << 20
REPORT_CHUNK = 128 * 1024
REPORT_PAGE = 128 * 1024

# One session's server: proven connections from peers, open asks it keeps.
MAX_CONNECTIONS = 64
MAX_TASKS = 256
# Connections that have not proven themselves (`hello`) yet. When all are held, a new one takes
# the oldest one's place: a flood of half-open connections delays a caller, never locks it out.
MAX_UNPROVEN = 16
# Proven connections only the session itself may take beyond MAX_CONNECTIONS, so its own tool
# (`status`, `report`) still gets in when peers hold every slot.
RESERVED_SELF = 4

# A caller waits this long (seconds) for a connect or a reply before giving up.
CALL_TIMEOUT = 10.0
# Server-side deadlines (seconds). A new connection must complete a successful `hello` this
# soon after it is accepted, whatever it sends meanwhile.
HELLO_TIMEOUT = 2.0
# From a frame's first byte to its last, however the bytes are paced (a frame is at most
# MAX_FRAME, and local sockets move that in milliseconds); replies are written under it too.
FRAME_TIMEOUT = 10.0
# A proven connection that starts no frame for this long is closed.
IDLE_TIMEOUT = 60.0

# What a `report` note may carry beside its text: the revision (a count, or a short printable
# ASCII label of at most REVISION_MAX characters), the body's sha256 (SHA256_HEX lowercase hex
# digits) and its size in bytes (at most MAX_REPORT).
REVISION_MAX = 64
REVISION_COUNT_MAX = (1 << 53) - 1  # exact in every JSON reader, doubles included
SHA256_HEX = 64

# Names. An id is a word pair, perhaps with a number; a project name is a short label.
ID_MAX = 24
PROJECT_MAX = 128
# Hex digits of sha256 kept when a project name is shortened to fit sun_path.
PROJECT_DIGEST = 16
# Usable bytes of sun_path (the platform's array minus the terminating NUL).
SUN_PATH_MAX = 107 if sys.platform.startswith("linux") else 103

# The secret minted by `fork`: bytes of randomness before encoding.
TOKEN_BYTES = 32

# `melchior models`: how long the harness CLI may take to list its catalog.
HARNESS_TIMEOUT_S = 120.0
