"""Every bound of the local-agent protocol and of the layers beneath it, once.

What `initialize` publishes under `limits` is read from these constants; code and tests
import them from here and never restate a number.
"""

PROTOCOL = "magi-code.local-agent"
PROTOCOL_VERSION = 1

# Frames
FRAME_BYTES = 65_536  # input: excluding LF; output: including LF
JSON_DEPTH = 32  # containers
ID_BYTES = 64  # request ids, method and capability names, cursors, revisions
READ_BATCH_BYTES = 4096
REQUIRED_CAPABILITIES_MAX = 16

# Requests and output
REQUESTS_PER_CHILD = 4096
PENDING_OUTPUT_FRAMES = 32
OUTPUT_DEADLINE_MS = 2000
CLOSING_DEADLINE_MS = 2000
CLEANUP_WAIT_MS = 2000
# The GIL switch interval while the runtime warms (runtime.py): a request waits at most this
# long for a warming import to let go (Python's default is 5 ms).
WARM_SWITCH_INTERVAL_S = 0.0005

# Names reported in status
NAME_BYTES = 256

# Prompts and content
PROMPT_BYTES = 16_384
# What Mission Control and exec accept from a person or a script (not the spec's bound: the
# local agent and ACP keep PROMPT_BYTES), so a pasted diff or log goes whole.
FACE_PROMPT_BYTES = 1024 * 1024
HISTORY_CHUNK_BYTES = 16_384
LIVE_CHUNK_BYTES = 4000
LIVE_REDACTION_HOLD_CHARS = 4096  # live text held back while it may still become a secret
HISTORY_PAGE_BYTES = 32_768
HISTORY_PAGE_ENTRIES = 100
HISTORY_SNAPSHOT_BYTES = 8 * 1024 * 1024
HISTORY_SNAPSHOT_PARTS = 10_000
STORED_HISTORY_BYTES = 64 * 1024 * 1024
STORED_HISTORY_LINES = 100_000
HISTORY_NEAR_SHARE = 0.9  # of any history bound above: warn the client; fold at a compaction
SESSION_ID_BYTES = 64
DEFAULT_RETENTION_DAYS = 30  # CLI retention; 0 disables the automatic sweep

# Runs
WORKER_EVENTS = 32
CRITICAL_EVENT_WAIT_MS = 2000
RUN_CONTENT_BYTES = 8 * 1024 * 1024
RUN_CONTENT_SEGMENTS = 512
RUN_ACTIVITY_IDS = 4096
# Model requests one turn makes (not the spec's): a model that keeps calling tools is stopped
# there. Above RUN_CONTENT_SEGMENTS, so that a run may use every segment the spec allows. The
# `[turn] max_rounds` setting sets another.
TURN_MODEL_ROUNDS = 1000
ACTIVITY_INTERNAL_ID_BYTES = 1024
SUMMARY_BYTES = 1024
APPROVAL_EXPIRY_MS = 60_000

# ACP (`magi-code acp`): one JSON-RPC message, as a line on stdin
ACP_MESSAGE_BYTES = 1024 * 1024
# The largest file the tools read or write through the client (`fs/*`); larger ones stay on the
# local disk. An eighth of a message: JSON escapes a byte to at most six.
ACP_FILE_BYTES = ACP_MESSAGE_BYTES // 8

# Providers (melchior.md, "Provider response boundaries")
ERROR_BODY_BYTES = 64 * 1024
ERROR_BODY_DEADLINE_S = 10.0
STREAM_INACTIVITY_S = 180.0
DISCOVERY_CACHE_S = 24 * 60 * 60

# Context: what the model is told (instructions, skills, agent profiles)
INSTRUCTION_FILE_BYTES = 64 * 1024  # one instruction file (AGENTS.md, profile body, extra path)
INSTRUCTIONS_TOTAL_BYTES = 256 * 1024  # every instruction source together
FRONT_MATTER_BYTES = 8 * 1024  # the front matter of one SKILL.md or profile, read at startup
SKILL_NAME_CHARS = 64  # Agent Skills spec
SKILL_DESCRIPTION_CHARS = 1024  # Agent Skills spec
SKILLS_LISTED = 200  # skills whose names and descriptions the model is shown
SKILL_LISTING_BYTES = 64 * 1024  # the whole listing of skills in the instructions
SKILL_BODY_BYTES = 64 * 1024  # one SKILL.md as the skill tool returns it
SKILL_RESOURCES_LISTED = 100  # resource files the skill tool names
SKILLS_SCANNED = 1000  # skill folders looked at in one scope
PROFILES_SCANNED = 1000  # profile files looked at in one scope
PROFILE_NAME_CHARS = 64  # agent profile names, like skill names

# Settings files: tables and arrays nested deeper than this are refused (configuration_invalid)
SETTINGS_DEPTH = 32
# A settings file's parse is cached (MC_HOME/cache) only once the file has been unchanged this
# long: a later change then always shows in its modification or change time.
SETTINGS_SETTLED_NS = 2_000_000_000
# A settings error or warning shows a name or value from the file (a key, the TOML parser's
# phrase, a bad value, a model's name) only up to this many characters.
SETTINGS_SHOWN_CHARS = 80

# JSON from outside (untrusted_json.py): provider events, ACP messages, Code Mode calls
UNTRUSTED_JSON_DEPTH = 200  # containers; deeper is refused, well before Python's recursion limit

# Hooks (runner/hooks.py): processes the settings run on runner events
HOOK_TIMEOUT_MS = 10_000  # a hook's `timeout_ms` when it sets none
HOOK_MAX_TIMEOUT_MS = 60_000  # the largest `timeout_ms` a hook may set
HOOK_STDOUT_BYTES = 64 * 1024  # of a hook's stdout read as its answer; more is a diagnostic
HOOK_REASON_BYTES = 4096  # a block reason (stdout `reason` or stderr) as the model gets it
HOOK_CONTEXT_BYTES = 16 * 1024  # `additional_context` of one event's hooks, together
HOOKS_PER_EVENT = 32  # hooks one event may list
HOOK_KILL_GRACE_S = 0.5  # SIGTERM to SIGKILL for a hook past its timeout
HOOK_DRAIN_S = 0.5  # once a hook exits, how long something it left may hold its pipes

# Code Mode (tools/code_mode.py): the `code` tool's interpreter
CODE_TIMEOUT_S = 60.0  # the wall clock of a program when the call sets none
CODE_MAX_TIMEOUT_S = 600.0
CODE_MEMORY_BYTES = 512 * 1024 * 1024  # RLIMIT_AS of the interpreter
CODE_OUTPUT_BYTES = 32 * 1024  # of stdout, and again of stderr: head and tail halves
CODE_RESULT_BYTES = 16 * 1024  # the JSON of `result`
CODE_BRIDGE_LINE_BYTES = 5 * 1024 * 1024  # one bridged call's request line (arguments inside)
CODE_BRIDGED_CALLS = 1000  # bridged calls one program may make
CODE_KILL_GRACE_S = 0.2  # SIGTERM to SIGKILL when a program is stopped
CODE_DRAIN_S = 0.5  # once a program exits, how long something it left may hold its pipes

# Subagents and peers (melchior): per session; settings may lower the first two, never raise
SUBAGENTS_CONCURRENT = 4  # children of one session running at once
SUBAGENT_DEPTH = 2  # a top session is depth 0; its children 1, theirs 2, and no deeper
SUBAGENT_TEXT_BYTES = 16 * 1024  # a child's final text as the parent's tool returns it
SUBAGENT_REPORT_BYTES = 16 * 1024  # a child's stored report as the parent's tool returns it
CHILD_EXIT_MS = 2000  # a cancelled or finished child (and its socket) is gone within this
MELCHIOR_START_MS = 5000  # `melchior serve` says `listening` within this, or is given up
MELCHIOR_TOOL_MS = 15_000  # one `melchior tool`/`fork` exec
PEER_INBOX = 64  # peer messages queued for the next turn boundary; older ones are dropped
PEER_TEXT_BYTES = 8 * 1024  # one peer message as the model is shown it

# Remote agents over A2A (`a2a_NAME` tools, a2a/remote.py)
A2A_REPLY_BYTES = 16 * 1024  # the remote's final text as the tool returns it; longer is cut
A2A_CONNECT_S = 10.0  # to connect to the remote (or its proxy)
A2A_QUIET_S = 180.0  # the remote's stream may stay silent this long before the call fails
A2A_CANCEL_S = 5.0  # a cancelled turn's `tasks/cancel` to the remote gets this long
A2A_SAID_BYTES = 2048  # of what a remote said when it failed or asked for input
A2A_AGENT_NAME_CHARS = 48  # of NAME in `[a2a.agents.NAME]` (the tool is `a2a_NAME`)

# Mission Control (the terminal face)
UI_FRAME_MS = 50  # streamed text reaches the screen at most this often (20 frames a second)
UI_YIELD_MS = 8  # a provider stream gives the screen a turn at least this often
# A reply is drawn as Markdown pages (mission_control/pages.py): a frame redraws the last only.
UI_PAGE_CHARS = 800  # a page ends at the first top-level block that begins past this
UI_PAGE_MAX_CHARS = 2000  # a single longer block (a long code fence) is cut between its lines
# A running tool's card (mission_control/live_tail.py): its elapsed time and output tail
UI_LIVE_OUTPUT_MS = 100  # are redrawn at most this often
UI_LIVE_OUTPUT_LINES = 12  # the output's last lines shown
UI_LIVE_OUTPUT_CHARS = 2000  # of the output kept for them
UI_PLAN_STEPS = 8  # steps the plan checklist shows at once: a window around the one in progress
APPROVAL_ARM_MS = 300  # keys arriving sooner after an approval opens never answer it
QUIT_CONFIRM_MS = 2000  # a second Ctrl-C at an empty prompt within this quits
REWIND_KEYS_MS = 800  # a second Esc within this, no turn running, opens the rewind list
INPUT_HISTORY_PROMPTS = 200  # prompts Up/Down can recall, newest sessions of this workspace
PASTE_INLINE_LINES = 5  # a paste of more lines shows as a `[Pasted text #N, L lines]` token
PASTE_INLINE_CHARS = 4000  # ... and so does a paste of more characters
MENTION_WALK_ENTRIES = 20_000  # workspace entries the `@` picker walks: a huge tree stays quick
SUGGESTIONS_SHOWN = 8  # rows of the `/` command list and the `@` file picker
# A longer line of a prompt is split at white space only, not as a shell would, when looking for
# image paths in it (shlex takes time that grows with the square of a word's length).
SHELL_SPLIT_LINE_CHARS = 16 * 1024
# Of a prompt shown in the conversation (a pasted one can be FACE_PROMPT_BYTES): the rest is
# counted, and sent.
UI_PROMPT_SHOWN_CHARS = 4000

# The tools' environment (runner/environment.py): a URL user name taken for a token
URL_TOKEN_USER_CHARS = 20  # this long, with letters and digits
URL_LONG_USER_CHARS = 40  # this long, whatever it holds
