"""ACP image prompt blocks: the real `magi-code acp` process advertises `image` and takes image
blocks, which reach a real local provider server as the wire's image part (Anthropic here),
stored with the prompt; a block that holds no image a model is sent is refused as
`unsupported_content`, and an image alone is a prompt."""

import base64
import io
import json
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, RequestError, image_block, text_block
from PIL import Image

from magi_code.tools.limits import PROMPT_IMAGES
from providers.local_server import LocalServer, Reply
from support.acp import agent, run
from support.sessions import records
from support.settings import local_provider
from support.wires import anthropic_text


def png(size: tuple[int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (0, 128, 0)).save(buffer, format="PNG")
    return buffer.getvalue()


def answer(text: str) -> Reply:
    return Reply(chunks=[anthropic_text(text)], headers={"content-type": "text/event-stream"})


def test_image_blocks_reach_the_model_and_bad_ones_are_refused(
    workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    image = png((20, 10))
    encoded = base64.b64encode(image).decode()
    with LocalServer() as server:
        local_provider(home, server, "anthropic")
        server.script("/v1/messages", answer("a green bar"), answer("alone"))

        async def scenario() -> None:
            async with agent(workspace, home) as (conn, _):
                init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
                assert init.agent_capabilities is not None
                caps = init.agent_capabilities.prompt_capabilities
                assert caps is not None and caps.image is True
                session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
                sid = session.session_id
                said = await conn.prompt(
                    session_id=sid,
                    prompt=[text_block("what is it?"), image_block(encoded, "image/png")],
                )
                assert said.stop_reason == "end_turn"
                alone = await conn.prompt(
                    session_id=sid, prompt=[image_block(encoded, "image/png")]
                )
                assert alone.stop_reason == "end_turn"
                svg = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'/>").decode()
                for bad in (svg, "not base64 at all!", ""):
                    with pytest.raises(RequestError) as refused:
                        await conn.prompt(
                            session_id=sid,
                            prompt=[text_block("see"), image_block(bad, "image/svg+xml")],
                        )
                    assert refused.value.data == {"code": "unsupported_content"}
                many = [image_block(encoded, "image/png")] * (PROMPT_IMAGES + 1)
                with pytest.raises(RequestError) as too_many:
                    await conn.prompt(session_id=sid, prompt=[text_block("all"), *many])
                assert too_many.value.data == {"code": "unsupported_content"}
                stored = [r for r in records(home, sid) if r["type"] == "user"]
                assert [r["text"] for r in stored] == ["what is it?", ""]
                assert [len(r["images"]) for r in stored] == [1, 1]

        run(scenario)
    first, second = (json.loads(r.body) for r in server.requests)
    assert first["messages"][0]["content"] == [
        {"type": "text", "text": "what is it?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encoded}},
    ]
    last = second["messages"][-1]  # an image alone: no empty text block, which the API refuses
    assert last == {
        "role": "user",
        "content": [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": encoded},
            }
        ],
    }
