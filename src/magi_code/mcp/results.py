"""The model's view of an MCP tools/call result: its content blocks as text and images.

Rules:
- Text blocks are given as they are. An image block goes to the model as an `ImagePart`
  (tools/images.py: recognised by its bytes, within the bounds every wire takes), at most
  RESULT_IMAGES of them; an image refused, or past that count, is described in words.
- Audio is described in text (its type and size): no wire takes it back from a tool.
- An embedded resource gives its text under its URI; a blob resource is described by its URI,
  type and size, or goes as an image when its bytes are one.
- A resource link keeps its URI and name (and description, one line), so the model can ask
  for it (`read_resource`).
- No content but structured content: that, as JSON.
- A text over what a tool may return is cut, and the cut says how many bytes it left out.
- Decoding images is CPU work: callers run `view` in a worker thread.
"""

import base64
import binascii
import json

import mcp_types

from magi_code.mcp.limits import RESULT_IMAGES
from magi_code.providers.base import ImagePart
from magi_code.tools.images import ImageRefused, image_part
from magi_code.tools.limits import OUTPUT_BYTES
from magi_code.tools.summaries import clip_utf8, one_line

# The most a described field (a name, a URI, a description) takes in a note.
_FIELD_CHARS = 512
# Room kept at the end of a cut text for the note saying so.
_CUT_NOTE_BYTES = 128


def view(result: mcp_types.CallToolResult) -> tuple[str, tuple[ImagePart, ...]]:
    """The text and images the model is shown for `result`."""
    images: list[ImagePart] = []
    parts = [block_text(block, images) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return cut("\n".join(parts)), tuple(images)


def block_text(block: mcp_types.ContentBlock, images: list[ImagePart]) -> str:
    """One content block (of a tool result, or of a prompt's message) as text; an image sent
    is added to `images`."""
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent):
        return _image(block.data, images)
    if isinstance(block, mcp_types.AudioContent):
        return f"[audio not shown: {_field(block.mime_type)}, {_size(block.data)}]"
    if isinstance(block, mcp_types.EmbeddedResource):
        return contents_text(block.resource, images)
    return resource_line("resource link", block)


def resource_line(kind: str, resource: mcp_types.ResourceLink | mcp_types.Resource) -> str:
    """One line naming a resource: its URI, name, type and description where given."""
    said = [f"uri={_field(resource.uri)}", f"name={_field(resource.name)}"]
    if resource.mime_type:
        said.append(f"type={_field(resource.mime_type)}")
    if resource.description:
        said.append(f"description={_field(resource.description)}")
    return f"[{kind}: {'; '.join(said)}]"


def cut(text: str, limit: int = OUTPUT_BYTES, what: str = "result") -> str:
    """`text` within `limit` bytes; when cut, it ends saying how many bytes were left out."""
    size = len(text.encode("utf-8"))
    if size <= limit:
        return text
    kept = clip_utf8(text, limit - _CUT_NOTE_BYTES)
    shown = len(kept.encode("utf-8"))
    return f"{kept}\n[{what} cut: {size - shown:,} of {size:,} bytes not shown]"


def contents_text(
    contents: mcp_types.TextResourceContents | mcp_types.BlobResourceContents,
    images: list[ImagePart],
) -> str:
    """A resource's contents as text: a blob described, or added to `images` when it is one."""
    kind = f"; type={_field(contents.mime_type)}" if contents.mime_type else ""
    head = f"[resource: uri={_field(contents.uri)}{kind}]"
    if isinstance(contents, mcp_types.TextResourceContents):
        return f"{head}\n{contents.text}"
    if (contents.mime_type or "").startswith("image/"):
        return f"{head}\n{_image(contents.blob, images)}"
    return f"{head}\n[binary contents not shown: {_size(contents.blob)}]"


def _image(data: str, images: list[ImagePart]) -> str:
    """An image block's note in the text; the image itself added to `images` if it is sent."""
    if len(images) >= RESULT_IMAGES:
        return f"[image not shown: a result shows at most {RESULT_IMAGES} images]"
    try:
        part = image_part(base64.b64decode(data, validate=True))
    except binascii.Error:
        return "[image not shown: its data is not valid base64]"
    except ImageRefused as refused:
        return f"[image not shown: {refused.why}]"
    images.append(part)
    return f"[image: {part.description}]"


def _size(data: str) -> str:
    """The decoded size of base64 `data`, in words, without decoding it."""
    padding = len(data) - len(data.rstrip("="))
    return f"{max(0, len(data) * 3 // 4 - padding):,} bytes"


def _field(value: object) -> str:
    return one_line(str(value))[:_FIELD_CHARS]
