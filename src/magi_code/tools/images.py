"""Images for the model: recognised by their first bytes, measured from their headers, and
brought within the bounds every wire takes (tools/limits.py), as `ImagePart`s.

Rules:
- PNG, JPEG, GIF and WebP only, recognised by their magic bytes, never by a file's name.
- Dimensions come from the header, read here without a decoder: an image whose header cannot
  be read is refused, and so is one declaring more than IMAGE_PIXELS (a decompression bomb is
  never handed to a decoder).
- An image within IMAGE_EDGE_PX and IMAGE_BYTES goes as it is, byte for byte. Past either, it
  is decoded with Pillow (imported only then: nothing heavy on the way to a first answer) and
  downscaled, keeping its format where it can; while still over IMAGE_BYTES it goes as JPEG, at
  a lower quality, then smaller, until it fits.
- Every refusal is an `ImageRefused` with a code and a sentence for the model: never the
  bytes, nor a decoder's message. Decoding is CPU work: callers run it in a worker thread.
"""

import base64
import io
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from magi_code.providers.base import ImagePart
from magi_code.tools.limits import IMAGE_BYTES, IMAGE_EDGE_PX, IMAGE_FILE_BYTES, IMAGE_PIXELS
from magi_code.tools.paths import open_regular

if TYPE_CHECKING:
    from PIL import Image

# Media type -> the name a description gives it and Pillow's format name.
FORMATS = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/gif": "GIF",
    "image/webp": "WEBP",
}
SNIFF_BYTES = 12  # what `sniff` needs of a file's start
_JPEG_QUALITIES = (85, 70, 55)  # tried in turn before the image is made smaller again
_SHRINK = 0.75  # each further step's share of the longest side
_SHRINK_STEPS = 12  # 2000 px * 0.75^12 is about 60 px: anything fits long before


class ImageRefused(ValueError):
    """An image no model is sent: `code` a stable word, `why` a sentence for the model (the
    call's failed outcome, or a face's refusal of an attachment)."""

    def __init__(self, code: str, why: str) -> None:
        super().__init__(code)
        self.code, self.why = code, why


def sniff(head: bytes) -> str | None:
    """The media type a file's first SNIFF_BYTES say, if it is one of the four."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def dimensions(data: bytes, media_type: str) -> tuple[int, int] | None:
    """Width and height from the header; None when the header cannot be read."""
    try:
        if media_type == "image/png":
            if data[12:16] != b"IHDR":
                return None
            width, height = struct.unpack(">II", data[16:24])
        elif media_type == "image/gif":
            width, height = struct.unpack("<HH", data[6:10])
        elif media_type == "image/jpeg":
            return _jpeg_dimensions(data)
        else:
            return _webp_dimensions(data)
    except struct.error:
        return None
    return (width, height) if width > 0 and height > 0 else None


def _jpeg_dimensions(data: bytes) -> tuple[int, int] | None:
    """From the first start-of-frame marker; each segment is skipped by its length."""
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill bytes before a marker
            at += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if marker in (*range(0xC0, 0xC4), *range(0xC5, 0xC8), *range(0xC9, 0xCC), 0xCD, 0xCE, 0xCF):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return (width, height) if width > 0 and height > 0 else None
        if length < 2:
            return None
        at += 2 + length
    return None


def _webp_dimensions(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and data[20:21] == b"\x2f":
        (bits,) = struct.unpack("<I", data[21:25])
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    return None


def image_part(data: bytes) -> ImagePart:
    """`data` (a whole image file) as the model is sent it, within the bounds; raises
    ImageRefused."""
    media_type = sniff(data[:SNIFF_BYTES])
    if media_type is None:
        raise ImageRefused("not_image", "it is not a PNG, JPEG, GIF or WebP image")
    size = dimensions(data, media_type)
    if size is None:
        raise ImageRefused("unreadable_image", "its image header cannot be read")
    width, height = size
    if width * height > IMAGE_PIXELS:
        why = f"it declares {width}×{height} pixels, over {IMAGE_PIXELS:,}"
        raise ImageRefused("too_large", why)
    kind = FORMATS[media_type]
    if max(size) <= IMAGE_EDGE_PX and len(data) <= IMAGE_BYTES:
        return _part(data, media_type, f"{kind}, {width}×{height} px, {len(data):,} bytes")
    sent, sent_type, (w, h) = _downscaled(data, media_type, size)
    said = f"{FORMATS[sent_type]}, {w}×{h} px, {len(sent):,} bytes"
    how = "re-encoded" if (w, h) == size else "downscaled"
    was = f"a {kind} of {width}×{height} px, {len(data):,} bytes"
    return _part(sent, sent_type, f"{said}, {how} from {was}")


def read_image(path: Path) -> ImagePart:
    """The image file at `path` (a face's attachment: the user named it), within the bounds;
    raises ImageRefused, or OSError when it cannot be read."""
    with open_regular(path) as handle:
        return read_from(handle)


def read_from(handle: BinaryIO) -> ImagePart:
    """The image file open on `handle` (at its start), within the bounds; raises
    ImageRefused."""
    data = handle.read(IMAGE_FILE_BYTES + 1)
    if len(data) > IMAGE_FILE_BYTES:
        raise ImageRefused("too_large", f"the file is over {IMAGE_FILE_BYTES:,} bytes")
    return image_part(data)


def _part(data: bytes, media_type: str, description: str) -> ImagePart:
    return ImagePart(media_type, base64.b64encode(data).decode("ascii"), description)


def _downscaled(
    data: bytes, media_type: str, size: tuple[int, int]
) -> tuple[bytes, str, tuple[int, int]]:
    """The image decoded (its first frame) and made to fit: its bytes, type and size."""
    try:
        from PIL import Image
    except ImportError:
        raise ImageRefused("too_large", "it is too large, and Pillow is not installed") from None
    Image.MAX_IMAGE_PIXELS = IMAGE_PIXELS  # Pillow's own bomb check, at our bound
    scale = min(1.0, IMAGE_EDGE_PX / max(size))
    try:
        with Image.open(io.BytesIO(data)) as opened:
            target = _fit(size, scale)
            opened.draft("RGB", target)  # JPEG decodes at a fraction of its size, much faster
            picture = opened.convert("RGBA" if _transparent(opened) else "RGB")
        for _ in range(_SHRINK_STEPS):
            small = picture.resize(target, Image.Resampling.LANCZOS)
            for encoded, encoded_type in _encodings(small, media_type):
                if len(encoded) <= IMAGE_BYTES:
                    return encoded, encoded_type, small.size
            scale *= _SHRINK
            target = _fit(size, scale)
    except (OSError, ValueError, Image.DecompressionBombError):
        raise ImageRefused("unreadable_image", "it cannot be decoded") from None
    raise ImageRefused("too_large", "it does not fit the bound even downscaled")


def _fit(size: tuple[int, int], scale: float) -> tuple[int, int]:
    return max(1, round(size[0] * scale)), max(1, round(size[1] * scale))


def _transparent(picture: "Image.Image") -> bool:
    return picture.mode in ("RGBA", "LA", "PA") or "transparency" in picture.info


def _encodings(picture: "Image.Image", media_type: str) -> Iterator[tuple[bytes, str]]:
    """The image in its own format (GIF as PNG: a resized palette image loses its colours),
    then as JPEG at falling qualities (on white, where it had transparency), each made only
    if the one before did not fit."""
    own = "image/png" if media_type == "image/gif" else media_type
    if own != "image/jpeg":
        yield _encode(picture, FORMATS[own], _JPEG_QUALITIES[0]), own
    flat = picture
    if picture.mode == "RGBA":
        from PIL import Image

        flat = Image.new("RGB", picture.size, "white")
        flat.paste(picture, mask=picture.getchannel("A"))
    for quality in _JPEG_QUALITIES:
        yield _encode(flat, "JPEG", quality), "image/jpeg"


def _encode(picture: "Image.Image", kind: str, quality: int) -> bytes:
    buffer = io.BytesIO()
    if kind == "PNG":
        picture.save(buffer, format=kind)
    else:
        picture.save(buffer, format=kind, quality=quality)
    return buffer.getvalue()
