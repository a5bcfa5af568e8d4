"""The runner: one turn loop shared by every face, emitting typed run events."""
