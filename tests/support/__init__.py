"""Helpers shared by the test packages, one module a need: `npm` installs the npm peers, `exec`
runs the `magi-code` binary (`exec` above all), `acp` drives `magi-code acp` through the ACP SDK,
`local_agent` runs turns over `serve --stdio`, `sessions` scripts the fixture model and reads
session files, `settings` writes the settings a test needs (a local server as the provider),
and `wires` holds what a local server answers over each wire API."""
