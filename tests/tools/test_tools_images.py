"""Images for the model (tools/images.py) and read_file on them: recognised by their first bytes,
measured from their headers, each bound held at its exact edge (the longest side, the bytes
sent, the file read, the pixels declared), and downscaled with Pillow past them."""

import base64
import io
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from magi_code.tools.base import ToolContext, ToolOutcome
from magi_code.tools.builtin import builtin_tools
from magi_code.tools.images import ImageRefused, dimensions, image_part, sniff
from magi_code.tools.limits import IMAGE_BYTES, IMAGE_EDGE_PX, IMAGE_FILE_BYTES, IMAGE_PIXELS

TOOLS = builtin_tools()
FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def encoded(size: tuple[int, int], kind: str = "PNG", mode: str = "RGB") -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, size, (200, 30, 30, 128)[: len(mode)]).save(buffer, format=kind)
    return buffer.getvalue()


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def padded_png(size: tuple[int, int], total: int) -> bytes:
    """A valid PNG of exactly `total` bytes: an ancillary chunk (which decoders skip) fills it."""
    png = encoded(size)
    end = png.rindex(b"IEND") - 4
    room = total - len(png) - 12
    assert room >= 0
    return png[:end] + chunk(b"pAdD", b"\0" * room) + png[end:]


def header_only_png(width: int, height: int) -> bytes:
    """A PNG header declaring `width` x `height`, and image data no decoder can read."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", b"x") + chunk(b"IEND", b"")


def sent(image_data: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(image_data)))


@pytest.mark.parametrize("kind", list(FORMATS))
@pytest.mark.parametrize("size", [(1, 1), (640, 480), (97, 3001)])
def test_each_format_is_known_by_its_bytes_and_measured_from_its_header(
    kind: str, size: tuple[int, int]
) -> None:
    data = encoded(size, kind)
    assert sniff(data[:12]) == FORMATS[kind]
    assert dimensions(data, FORMATS[kind]) == size


def test_webp_lossless_and_extended_headers_are_measured() -> None:
    lossless, extended = io.BytesIO(), io.BytesIO()
    Image.new("RGBA", (33, 44)).save(lossless, "WEBP", lossless=True)
    Image.new("RGBA", (55, 66), (1, 2, 3, 4)).save(extended, "WEBP", exif=b"Exif\0\0x")
    assert dimensions(lossless.getvalue(), "image/webp") == (33, 44)
    assert dimensions(extended.getvalue(), "image/webp") == (55, 66)


def test_what_is_no_image_is_refused_by_its_bytes_not_its_name() -> None:
    for data in (b"", b"hello", b"%PDF-1.7", b"<svg xmlns='http://www.w3.org/2000/svg'/>"):
        assert sniff(data[:12]) is None
        with pytest.raises(ImageRefused) as refused:
            image_part(data)
        assert refused.value.code == "not_image"
    truncated = encoded((10, 10))[:20]  # the PNG signature, and no whole header
    with pytest.raises(ImageRefused) as refused:
        image_part(truncated)
    assert refused.value.code == "unreadable_image"


def test_an_image_within_the_bounds_goes_byte_for_byte() -> None:
    data = encoded((IMAGE_EDGE_PX, 7))
    part = image_part(data)
    assert base64.b64decode(part.data) == data
    assert (part.media_type, part.description) == (
        "image/png",
        f"PNG, {IMAGE_EDGE_PX}×7 px, {len(data):,} bytes",
    )


@pytest.mark.parametrize("kind", list(FORMATS))
def test_one_pixel_past_the_edge_is_downscaled_to_it(kind: str) -> None:
    part = image_part(encoded((IMAGE_EDGE_PX + 1, 20), kind))
    assert sent(part.data).size == (IMAGE_EDGE_PX, 20)
    assert "downscaled from" in part.description
    assert part.media_type == ("image/png" if kind == "GIF" else FORMATS[kind])


def test_a_transparent_image_keeps_its_alpha_when_downscaled() -> None:
    part = image_part(encoded((IMAGE_EDGE_PX * 2, 10), "PNG", "RGBA"))
    shown = sent(part.data)
    assert (shown.size, shown.mode) == ((IMAGE_EDGE_PX, 5), "RGBA")


def test_the_bytes_bound_at_its_edge_and_one_byte_past_it() -> None:
    exact = padded_png((64, 64), IMAGE_BYTES)
    assert len(exact) == IMAGE_BYTES
    assert base64.b64decode(image_part(exact).data) == exact
    over = padded_png((64, 64), IMAGE_BYTES + 1)
    part = image_part(over)
    assert len(base64.b64decode(part.data)) <= IMAGE_BYTES
    assert sent(part.data).size == (64, 64)
    assert f"re-encoded from a PNG of 64×64 px, {IMAGE_BYTES + 1:,} bytes" in part.description


def test_noise_too_large_for_its_format_goes_as_jpeg_within_the_bound() -> None:
    import os

    side = 1900
    noise = Image.frombytes("RGB", (side, side), os.urandom(side * side * 3))
    buffer = io.BytesIO()
    noise.save(buffer, "PNG")
    assert len(buffer.getvalue()) > IMAGE_BYTES
    part = image_part(buffer.getvalue())
    assert part.media_type == "image/jpeg"
    assert len(base64.b64decode(part.data)) <= IMAGE_BYTES


def test_declared_pixels_at_the_bound_reach_the_decoder_and_past_it_never() -> None:
    width = 10_000
    at = header_only_png(width, IMAGE_PIXELS // width)
    with pytest.raises(ImageRefused) as decoded:
        image_part(at)
    assert decoded.value.code == "unreadable_image"  # tried, and its data is no image
    past = header_only_png(width, IMAGE_PIXELS // width + 1)
    with pytest.raises(ImageRefused) as refused:
        image_part(past)
    assert refused.value.code == "too_large"


# ---- read_file on images ---------------------------------------------------------------------


async def read(ctx: ToolContext, **arguments: Any) -> ToolOutcome:
    tool = TOOLS["read_file"]
    return await tool.run(tool.parse(json.dumps(arguments)), ctx)


@pytest.mark.anyio
async def test_read_file_returns_an_image_beside_a_line_of_text(ctx: ToolContext, ws: Path) -> None:
    data = encoded((40, 30), "JPEG")
    (ws / "shot.jpg.txt").write_bytes(data)  # known by its bytes, whatever its name
    outcome = await read(ctx, path="shot.jpg.txt")
    assert outcome.ok
    [image] = outcome.images
    assert image.media_type == "image/jpeg" and base64.b64decode(image.data) == data
    assert outcome.output == f"shot.jpg.txt: JPEG, 40×30 px, {len(data):,} bytes"
    assert outcome.summary == "read shot.jpg.txt (image)"
    text = await read(ctx, path="shot.jpg.txt", offset=2)  # paging arguments change nothing
    assert text.images == outcome.images


@pytest.mark.anyio
async def test_read_file_takes_an_image_file_at_its_bound_and_refuses_one_byte_more(
    ctx: ToolContext, ws: Path
) -> None:
    (ws / "at.png").write_bytes(padded_png((8, 8), IMAGE_FILE_BYTES))
    at = await read(ctx, path="at.png")
    assert at.ok and len(base64.b64decode(at.images[0].data)) <= IMAGE_BYTES
    (ws / "over.png").write_bytes(padded_png((8, 8), IMAGE_FILE_BYTES + 1))
    over = await read(ctx, path="over.png")
    assert not over.ok and not over.images
    assert over.output.startswith("error: too_large: over.png")
    assert over.summary == "read over.png: too_large"


@pytest.mark.anyio
async def test_binary_files_that_are_no_image_stay_refused_as_not_text(
    ctx: ToolContext, ws: Path
) -> None:
    (ws / "blob.png").write_bytes(b"\x00\x01 not an image, whatever its name")
    outcome = await read(ctx, path="blob.png")
    assert not outcome.ok and outcome.output == "error: not_text: blob.png looks binary"
