"""`make run`: the main job end to end on the built-in fixture provider, through the real
`magi-code serve --stdio` child and the typed client. No network, no credentials.

In a scratch workspace holding a small script with a typo, one turn has the (scripted) model
read the file, edit it and run it; the edit and the command ask for approval and this client
answers yes. Then a fresh child reopens the session and pages its history, and both children
shut down. The fixture provider is a scripted stand-in for a real model (see
providers/fixture.py): the point is the protocol, the runner, the tools and the store.
"""

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from magi_code.client import LocalAgentClient, environment

SCRIPT = [
    {
        "text": "Let me read the script.",
        "tools": [{"name": "read_file", "arguments": {"path": "hello.py"}}],
    },
    {
        "text": "The greeting has a typo; I will fix it.",
        "tools": [
            {
                "name": "edit_file",
                "arguments": {"path": "hello.py", "old": "Helo", "new": "Hello"},
            }
        ],
    },
    {
        "text": "Now let me run it.",
        "tools": [{"name": "shell", "arguments": {"command": f"{sys.executable} hello.py"}}],
    },
    {"text": "Fixed: the script now prints the greeting correctly.", "deltas": 4},
]


def say(line: str) -> None:
    print(line, flush=True)


def turn(agent: LocalAgentClient, session_id: str, prompt: str) -> dict[str, Any]:
    run_id = agent.request("turn.start", {"session_id": session_id, "prompt": prompt})["run_id"]
    say(f"turn.start accepted: run {run_id}")
    parts: dict[str, list[str]] = {}  # reconciliation parts per assistant message
    while True:
        event = agent.next_event()
        data = event.data
        if event.name == "input.persisted":
            say(f"  your prompt is on disk (message {data['message_id']})")
        elif event.name == "message.reconcile":
            parts.setdefault(data["message_id"], []).append(data["text"])
            if data["last_part"]:
                say(f"  assistant: {''.join(parts.pop(data['message_id']))}")
        elif event.name == "activity":
            say(f"  [{data['name']} {data['state']}] {data['summary']}")
        elif event.name == "approval.requested":
            answer = {"session_id": session_id, "run_id": run_id}
            answer |= {"approval_id": data["approval_id"], "allow": True}
            agent.request("approval.answer", answer)
            say(f"  approval asked: {data['summary']!r} -> the client allows it")
        elif event.name == "diagnostic":
            say(f"  diagnostic {data['code']}: {data['summary']}")
        elif event.name == "run.finished":
            say(f"run.finished: {data['outcome']}, history {data['persistence']}")
            return data


def history(agent: LocalAgentClient, session_id: str, revision: str) -> None:
    cursor = None
    while True:
        page = agent.request(
            "history.page", {"session_id": session_id, "revision": revision, "cursor": cursor}
        )
        for entry in page["entries"]:
            text = entry["text"] if len(entry["text"]) < 90 else entry["text"][:87] + "..."
            say(f"  {entry['kind']:>10}: {text}")
        if page["next_cursor"] is None:
            say(f"  (complete: {page['complete']})")
            return
        cursor = page["next_cursor"]


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="magi-code-demo-") as tmp:
        workspace, home = Path(tmp) / "workspace", Path(tmp) / "home"
        workspace.mkdir()
        (workspace / "hello.py").write_text('print("Helo, world!")\n')
        env = environment(home)
        with LocalAgentClient.spawn(cwd=workspace, env=env) as agent:
            init = agent.request("initialize", {"required_capabilities": ["turn.start"]})
            status = init["status"]
            say(f"initialized: {status['provider']}/{status['model']}, {status['readiness']}")
            say(f"capabilities: {', '.join(init['capabilities'])}")
            session = agent.request("session.create")
            session_id = session["session_id"]
            say(f"session.create: {session_id} (durable: {session['durable']})")
            turn(agent, session_id, "fixture:" + json.dumps(SCRIPT))
            say(f"hello.py now reads: {(workspace / 'hello.py').read_text().strip()}")
            say(f"shutdown: {agent.request('shutdown')['state']}; exit {agent.finish()}")
        with LocalAgentClient.spawn(cwd=workspace, env=env) as agent:
            agent.request("initialize", {"required_capabilities": ["session.open"]})
            opened = agent.request("session.open", {"session_id": session_id})
            say(f"a fresh child reopened {session_id} (durable: {opened['durable']}); history:")
            history(agent, session_id, opened["revision"])
            say(f"shutdown: {agent.request('shutdown')['state']}; exit {agent.finish()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
