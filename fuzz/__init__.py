"""Fuzz targets for the decoders: every input maps to its documented result, never an
unexpected exception. targets.py holds the targets and their seeds (pure: bytes in, an
assertion out); mutate.py a seeded, time-boxed mutation loop that needs nothing installed
(`make test` runs a few seconds of each with it); `python -m fuzz` runs each target under
atheris (the optional extra `fuzz`) for FUZZ_SECONDS, each in its own process.
"""
