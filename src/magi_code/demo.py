"""`make run`: the main job end to end on the built-in fixture provider, through the real
`magi-code serve --stdio` child and the typed client. No network, no credentials.

It initializes, creates a session, runs a turn in which the scripted model lists the
workspace (allowed by default) and writes a file (which asks: the demo approves it), pages
the history, reopens the session in a fresh child, and shuts down.
"""

import json
import tempfile
from pathlib import Path
from typing import Any

from magi_code.client import LocalAgentClient, environment

SCRIPT = [
    {"text": "Let me look at the workspace.", "tools": [{"name": "list_dir", "arguments": {}}]},
    {
        "text": "I will write a note.",
        "tools": [{"name": "write_file", "arguments": {"path": "NOTE.md", "content": "hi\n"}}],
    },
    {"text": "Done: NOTE.md holds a greeting.", "deltas": 4},
]


def show(label: str, value: object) -> None:
    print(f"{label}: {json.dumps(value, ensure_ascii=False)}", flush=True)


def turn(agent: LocalAgentClient, session_id: str, prompt: str) -> dict[str, Any]:
    agent.request("turn.start", {"session_id": session_id, "prompt": prompt})
    while True:
        event = agent.next_event()
        data = {k: v for k, v in event.data.items() if k not in ("session_id", "run_id")}
        show(f"  event {event.name}", data)
        if event.name == "approval.requested":
            answer = {"session_id": session_id, "run_id": event.data["run_id"]}
            answer |= {"approval_id": event.data["approval_id"], "allow": True}
            show("  approval.answer", agent.request("approval.answer", answer))
        if event.name == "run.finished":
            return event.data


def history(agent: LocalAgentClient, session_id: str, revision: str) -> None:
    cursor = None
    while True:
        page = agent.request(
            "history.page", {"session_id": session_id, "revision": revision, "cursor": cursor}
        )
        for entry in page["entries"]:
            print(f"  [{entry['kind']}] {entry['text'][:70]}")
        if page["next_cursor"] is None:
            print(f"  complete: {page['complete']}")
            return
        cursor = page["next_cursor"]


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="magi-code-demo-") as tmp:
        workspace, home = Path(tmp) / "workspace", Path(tmp) / "home"
        workspace.mkdir()
        env = environment(home)
        with LocalAgentClient.spawn(cwd=workspace, env=env) as agent:
            init = agent.request("initialize", {"required_capabilities": ["turn.start"]})
            show("capabilities", init["capabilities"])
            show("status", agent.request("status"))
            session = agent.request("session.create")
            show("session.create", session)
            finished = turn(agent, session["session_id"], "fixture:" + json.dumps(SCRIPT))
            print(f"NOTE.md on disk: {(workspace / 'NOTE.md').read_text()!r}")
            print("history:")
            history(agent, session["session_id"], finished["revision"])
            show("shutdown", agent.request("shutdown"))
            print(f"child exited with {agent.finish()}")
        with LocalAgentClient.spawn(cwd=workspace, env=env) as agent:
            agent.request("initialize", {"required_capabilities": ["session.open"]})
            opened = agent.request("session.open", {"session_id": session["session_id"]})
            show("reopened in a fresh child", opened)
            history(agent, opened["session_id"], opened["revision"])
            agent.request("shutdown")
            print(f"child exited with {agent.finish()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
