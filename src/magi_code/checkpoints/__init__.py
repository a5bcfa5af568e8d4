"""Workspace checkpoints, so a person can rewind the code a turn changed (`/rewind`).

manifest.py (what a checkpoint records, pure), plan.py (what a rewind would change and what
it would overwrite that changed outside magi-code, pure), store.py (the checkpoints of one
session on disk, and putting files back), shared.py (the objects the sessions of one workspace
share, and collecting those none names). limits.py holds the bounds.
"""
