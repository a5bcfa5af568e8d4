"""`make run`: the main job end to end on the built-in fixture provider, through the real
`magi-code serve --stdio` child and the typed client. No network, no credentials."""

import json
import tempfile
from pathlib import Path

from magi_code.client import LocalAgentClient, environment


def show(label: str, value: object) -> None:
    print(f"{label}: {json.dumps(value, ensure_ascii=False)}", flush=True)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="magi-code-demo-") as tmp:
        workspace, home = Path(tmp) / "workspace", Path(tmp) / "home"
        workspace.mkdir()
        with LocalAgentClient.spawn(cwd=workspace, env=environment(home)) as agent:
            init = agent.request("initialize", {"required_capabilities": ["status", "shutdown"]})
            show("capabilities", init["capabilities"])
            show("status", agent.request("status"))
            show("shutdown", agent.request("shutdown"))
            print(f"child exited with {agent.finish()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
