"""A small A2A agent for the tests, on the a2a-sdk's own server classes (JSON-RPC over HTTP,
streaming over SSE), run as its own process:

    python remote_agent.py PORT_FILE LOG [--token T] [--card-port-offset]

It listens on two ports (two origins) and writes them to PORT_FILE as "A B". Every request is
logged to LOG as one JSON line: the port it came to, its method and path, and its
Authorization header (or null). Requests to the JSON-RPC endpoint without `Bearer T` get 401
when --token is given. With --card-names-b the card's interface URL is on port B. A path under
/moved/ on port A answers 307 to the same path on port B.

What it does with a prompt: `hang` works until cancelled (and logs `cancelled`); `ask: X` asks
for input X; `fail` fails; `big N` replies N bytes of `x`; anything else is echoed back in two
streamed chunks (`echo: ` then the prompt).
"""

import asyncio
import json
import socket
import sys
from pathlib import Path

import uvicorn
from a2a.helpers.proto_helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send


def log(path: Path, entry: dict[str, object]) -> None:
    with path.open("a") as out:
        out.write(json.dumps(entry) + "\n")


class Executor(AgentExecutor):
    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        prompt = context.get_user_input()
        task_id, context_id = context.task_id or "", context.context_id or ""
        if context.current_task is None:
            status = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
            await event_queue.enqueue_event(
                Task(id=task_id, context_id=context_id, status=status, history=[context.message])
            )
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()

        def said(text: str) -> object:
            return new_text_message(
                text, context_id=context_id, task_id=task_id, role=Role.ROLE_AGENT
            )

        if prompt == "hang":
            await updater.update_status(TaskState.TASK_STATE_WORKING, said("working on it"))
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                log(self.log_path, {"event": "cancelled", "task": task_id})
                raise
        elif prompt.startswith("ask: "):
            await updater.requires_input(said(prompt.removeprefix("ask: ")))
        elif prompt == "fail":
            await updater.failed(said("the disk is full"))
        elif prompt.startswith("big "):
            await updater.add_artifact([Part(text="x" * int(prompt.split()[1]))])
            await updater.complete()
        else:
            await updater.add_artifact([Part(text="echo: ")], artifact_id="reply")
            await updater.add_artifact([Part(text=prompt)], artifact_id="reply", append=True)
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        log(self.log_path, {"event": "cancel_requested", "task": context.task_id})
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


def main() -> None:
    port_file, log_path = Path(sys.argv[1]), Path(sys.argv[2])
    token = sys.argv[sys.argv.index("--token") + 1] if "--token" in sys.argv else None
    sockets = []
    for _ in range(2):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()  # connections wait in the backlog until the server takes them
        sockets.append(sock)
    port_a, port_b = (s.getsockname()[1] for s in sockets)
    named = port_b if "--card-names-b" in sys.argv else port_a
    card = AgentCard(
        name="Test Remote",
        description="echoes, hangs, asks or fails, as told",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{named}/rpc",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        skills=[AgentSkill(id="echo", name="echo", description="echoes", tags=["test"])],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )
    handler = DefaultRequestHandlerV2(Executor(log_path), InMemoryTaskStore(), card)

    async def moved(request: Request) -> Response:
        rest = request.url.path.removeprefix("/moved")
        return RedirectResponse(f"http://127.0.0.1:{port_b}{rest}", status_code=307)

    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/rpc")]
    routes.append(Route("/moved/{rest:path}", moved, methods=["GET", "POST"]))
    a2a_app = Starlette(routes=routes)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        """Logs each request; refuses the JSON-RPC endpoint without the token."""
        if scope["type"] != "http":
            return await a2a_app(scope, receive, send)
        request = Request(scope)
        auth = request.headers.get("authorization")
        entry = {"port": scope["server"][1], "method": request.method, "path": request.url.path}
        log(log_path, {**entry, "authorization": auth})
        if token and request.url.path == "/rpc" and auth != f"Bearer {token}":
            return await JSONResponse({"error": "unauthorized"}, status_code=401)(
                scope, receive, send
            )
        return await a2a_app(scope, receive, send)

    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    port_file.write_text(f"{port_a} {port_b}")
    server.run(sockets=sockets)


if __name__ == "__main__":
    main()
