"""magi-code over A2A (Agent2Agent): the remote agents a session delegates to (agents.py,
remote.py) and the server other machines reach (`magi-code a2a serve`)."""
