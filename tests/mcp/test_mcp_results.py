"""The model's view of MCP result blocks (mcp/results.py), for the blocks the reference server
does not send: audio is described, a blob by its type and size, an image blob goes as an
image; at most RESULT_IMAGES images go, the next one is described; a block that is no image
is described, never sent."""

import base64
import io

import mcp_types
from PIL import Image

from magi_code.mcp.limits import RESULT_IMAGES
from magi_code.mcp.results import view


def png() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), (1, 2, 3)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def image() -> mcp_types.ImageContent:
    return mcp_types.ImageContent(type="image", data=png(), mime_type="image/png")


def result(*blocks: mcp_types.ContentBlock) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=list(blocks))


def test_audio_and_blobs_are_described_and_an_image_blob_sent() -> None:
    audio = mcp_types.AudioContent(type="audio", data="AAAA", mime_type="audio/wav")
    blob = mcp_types.BlobResourceContents(uri="x://b", mime_type="application/zip", blob="AAA=")
    picture = mcp_types.BlobResourceContents(uri="x://p", mime_type="image/png", blob=png())
    text, images = view(
        result(
            audio,
            mcp_types.EmbeddedResource(type="resource", resource=blob),
            mcp_types.EmbeddedResource(type="resource", resource=picture),
        )
    )
    assert "[audio not shown: audio/wav, 3 bytes]" in text
    assert (
        "[resource: uri=x://b; type=application/zip]\n[binary contents not shown: 2 bytes]" in text
    )
    assert "[resource: uri=x://p; type=image/png]\n[image: PNG, 4×3 px" in text
    assert [part.data for part in images] == [png()]


def test_at_most_result_images_go_and_the_next_is_described() -> None:
    _, images = view(result(*[image() for _ in range(RESULT_IMAGES)]))
    assert len(images) == RESULT_IMAGES
    text, images = view(result(*[image() for _ in range(RESULT_IMAGES + 1)]))
    assert len(images) == RESULT_IMAGES
    assert text.endswith(f"[image not shown: a result shows at most {RESULT_IMAGES} images]")


def test_an_image_block_that_is_no_image_is_described() -> None:
    fake = base64.b64encode(b"not an image at all").decode()
    text, images = view(
        result(mcp_types.ImageContent(type="image", data=fake, mime_type="image/png"))
    )
    assert images == ()
    assert text == "[image not shown: it is not a PNG, JPEG, GIF or WebP image]"
    text, _ = view(result(mcp_types.ImageContent(type="image", data="@@@", mime_type="image/png")))
    assert text == "[image not shown: its data is not valid base64]"
