"""The OS sandbox of what the model runs: shell commands and Code Mode programs (Linux).

settings.py (the `[sandbox]` table, checked; light), plan.py (what is allowed, as Landlock
rules; sans-I/O), seccomp.py (the BPF filter; sans-I/O), landlock.py (the kernel ABI),
confine.py (between fork and exec), contain.py (a shell command's PID namespace: its
init and the process Popen tracks), modes.py (one session's sandbox), spawn.py (a confined
anyio process), command.py (`magi-code sandbox`). Nothing is imported here.
"""
