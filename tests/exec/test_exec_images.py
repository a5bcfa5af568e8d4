"""Images reach the model as each wire's own image part, over real processes: `magi-code exec`
against a real local HTTP server speaking each wire API. read_file on a PNG answers the
model's call with the image (Chat `image_url` in a user message after the tool message,
Responses `input_image` in the function call's output, Anthropic an `image` block in the
tool_result); `--image PATH` attaches one to the prompt; a model that takes no images (the
`images` setting, the catalog, or the wire's default) is sent the image's description
instead. The session stores the image, so a later turn shows the model the same one."""

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from providers.local_server import LocalServer, Reply
from support.exec import exec_run, json_lines
from support.settings import local_provider
from support.wires import WIRES, image_parts

SSE = {"content-type": "text/event-stream"}
READ = json.dumps({"path": "shot.png"})


def png(size: tuple[int, int] = (32, 24)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (10, 120, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


def configure(home: Path, server: LocalServer, wire: str, images: bool | None) -> None:
    setting = "" if images is None else f"images = {str(images).lower()}\n"
    local_provider(home, server, wire, table=setting)


def exec_json(workspace: Path, home: Path, *args: str) -> list[dict[str, Any]]:
    done = exec_run(["--json", *args], workspace, home, timeout=120)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return json_lines(done.stdout)


@pytest.mark.parametrize("wire", list(WIRES))
def test_an_image_read_reaches_the_model_as_the_wires_image_part(
    wire: str, workspace: Path, tmp_path: Path
) -> None:
    data = png()
    (workspace / "shot.png").write_bytes(data)
    path, call, text = WIRES[wire]
    with LocalServer() as server:
        configure(tmp_path / "home", server, wire, True)
        server.script(
            path,
            Reply(chunks=[call("read_file", READ)], headers=SSE),
            Reply(chunks=[text("a blue box")], headers=SSE),
        )
        lines = exec_json(workspace, tmp_path / "home", "--approval-mode", "edits", "look")
    assert lines[-1]["data"]["outcome"] == "completed"
    first, second = (json.loads(r.body) for r in server.requests)
    assert image_parts(wire, first) == []
    assert image_parts(wire, second) == [base64.b64encode(data).decode()]
    if wire == "openai-chat":  # a tool message carries text: the image follows it
        roles = [m["role"] for m in second["messages"]]
        assert roles[-2:] == ["tool", "user"]
        assert second["messages"][-1]["content"][0]["text"].endswith("call_1:")


@pytest.mark.parametrize(
    ("wire", "images"), [("openai-chat", None), ("anthropic", False), ("openai-responses", False)]
)
def test_a_model_that_takes_no_images_is_sent_their_description(
    wire: str, images: bool | None, workspace: Path, tmp_path: Path
) -> None:
    """openai-chat by its wire's default; the others by the `images = false` setting."""
    data = png((50, 40))
    (workspace / "shot.png").write_bytes(data)
    path, call, text = WIRES[wire]
    with LocalServer() as server:
        configure(tmp_path / "home", server, wire, images)
        server.script(
            path,
            Reply(chunks=[call("read_file", READ)], headers=SSE),
            Reply(chunks=[text("ok")], headers=SSE),
        )
        exec_json(workspace, tmp_path / "home", "--approval-mode", "edits", "look")
    second = server.requests[1].body.decode()
    assert image_parts(wire, json.loads(second)) == []
    assert base64.b64encode(data).decode() not in second
    said = f"[image not shown: this model does not take images; PNG, 50×40 px, {len(data):,} bytes]"
    assert said in second


@pytest.mark.parametrize("wire", list(WIRES))
def test_exec_image_attaches_to_the_prompt_and_the_session_keeps_it(
    wire: str, workspace: Path, tmp_path: Path
) -> None:
    first_image, second_image = png((16, 16)), png((8, 4))
    (workspace / "a.png").write_bytes(first_image)
    (workspace / "b.png").write_bytes(second_image)
    path, _, text = WIRES[wire]
    home = tmp_path / "home"
    with LocalServer() as server:
        configure(home, server, wire, True)
        server.script(path, Reply(chunks=[text("two images")], headers=SSE))
        lines = exec_json(workspace, home, "--image", "a.png", "--image", "b.png", "what is this")
        server.script(path, Reply(chunks=[text("still")], headers=SSE))
        exec_json(workspace, home, "--continue", "and now?")
    expected = [base64.b64encode(i).decode() for i in (first_image, second_image)]
    first, later = (json.loads(r.body) for r in server.requests)
    assert image_parts(wire, first) == expected
    assert image_parts(wire, later) == expected  # replayed from the session
    session_id = lines[0]["data"]["session_id"]
    records = [
        json.loads(line)
        for line in (home / "sessions" / f"{session_id}.jsonl").read_bytes().split(b"\n")
        if line
    ]
    [user, _] = [r for r in records if r["type"] == "user"]
    assert [i["data"] for i in user["images"]] == expected
    assert user["images"][0]["description"] == f"PNG, 16×16 px, {len(first_image):,} bytes"


def test_exec_refuses_an_image_that_is_none_before_anything_starts(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "notes.png").write_text("not an image")
    home = tmp_path / "home"
    home.mkdir()
    done = exec_run(["--image", "notes.png", "--image", "missing.png", "look"], workspace, home)

    assert done.returncode == 2
    assert (
        b"--image number 1 cannot be sent: it is not a PNG, JPEG, GIF or WebP image" in done.stderr
    )
    assert not (home / "sessions").exists()
