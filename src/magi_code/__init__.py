"""magi-code: a coding agent for the terminal.

Nothing is imported here: `magi-code serve --stdio` must start fast, so each face
imports only what its own path needs.
"""

__version__ = "0.1.0"  # pyproject.toml's [project] version, read here without metadata lookups
