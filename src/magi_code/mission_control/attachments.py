"""Images a prompt names by path: what a terminal types when a file is dropped on it (the
path, quoted or with its spaces escaped, or a file:// URL). Each word of the prompt naming an
image file (by its extension, then by its first bytes, tools/images.py) is attached to the
prompt, whose text keeps the path. Runs in a worker thread: it reads files, and may decode.
"""

import shlex
from pathlib import Path
from urllib.parse import unquote, urlsplit

from magi_code.providers.base import ImagePart
from magi_code.tools.images import ImageRefused, read_image
from magi_code.tools.limits import PROMPT_IMAGES

EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})


def attached_images(text: str, cwd: Path) -> tuple[tuple[ImagePart, ...], list[str]]:
    """The images the prompt names, and a sentence for each named one that is not attached."""
    images: list[ImagePart] = []
    notes: list[str] = []
    for path in named_images(text, cwd):
        if len(images) == PROMPT_IMAGES:
            notes.append(f"Only the first {PROMPT_IMAGES} images are attached.")
            break
        try:
            images.append(read_image(path))
        except ImageRefused as refused:
            notes.append(f"{path.name} is not attached: {refused.why}.")
        except OSError:
            notes.append(f"{path.name} is not attached: it cannot be read.")
    return tuple(images), notes


def named_images(text: str, cwd: Path) -> list[Path]:
    """The existing files with an image's extension that the prompt's words name (punctuation
    around a word left out), each once."""
    try:
        words = shlex.split(text)
    except ValueError:  # an unclosed quote: plain words
        words = text.split()
    found: list[Path] = []
    for word in words:
        word = word.lstrip("([{<\"'").rstrip(".,;:!?)]}>\"'")  # the sentence around it
        if word.startswith("file://"):
            word = unquote(urlsplit(word).path)
        if Path(word).suffix.lower() not in EXTENSIONS:
            continue
        path = (cwd / Path(word).expanduser()).resolve()
        if path not in found and path.is_file():
            found.append(path)
    return found
