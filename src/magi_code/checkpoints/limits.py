"""Bounds of workspace checkpoints, once. Tests import them from here."""

# A file larger than this is named in its checkpoint but not stored: a rewind cannot restore it.
CHECKPOINT_FILE_BYTES = 8 * 1024 * 1024
# What one session's checkpoints add to the objects its workspace's sessions share (each
# content once: what another session stored first is not counted again); past it, a changed
# file is named but not stored, as a file over CHECKPOINT_FILE_BYTES is.
CHECKPOINT_STORE_BYTES = 1024 * 1024 * 1024
# The file system's clock tick, with room to spare. A file whose change time is this close to
# a checkpoint's start is read again by the next checkpoint (a later change within the tick
# keeps its size and times); a file a rewind's target lacks is deleted only if it changed
# after the target's start less this (older, it was there unseen).
STAT_GRAIN_NS = 100_000_000
# Paths a rewind question names, of those it would overwrite or cannot restore; the rest counted.
NAMED_PATHS = 8
# A checkpoint's manifest is written whole every this many; those between hold what changed.
CHECKPOINT_WHOLE_EVERY = 32
# What is read of the note naming the workspace's newest checkpoint (checkpoints/shared.py
# `last`: a session's store and a manifest's file name, far shorter).
LAST_NOTE_BYTES = 4096
