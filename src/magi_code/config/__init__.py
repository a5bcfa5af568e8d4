"""Configuration: MC_HOME paths, settings, credentials, and the admitted snapshot."""
