"""The local-agent face: `magi-code serve --stdio`, the strict JSON-lines protocol."""
