"""Images a prompt names by path: what a terminal types when a file is dropped on it (the
path, quoted or with its spaces escaped, or a file:// URL). Each word of the prompt naming an
image file (by its extension, then by its first bytes, tools/images.py) is attached to the
prompt, whose text keeps the path. Runs in a worker thread: it reads files, and may decode.
"""

import re
import shlex
from pathlib import Path
from urllib.parse import unquote, urlsplit

from magi_code.limits import SHELL_SPLIT_LINE_CHARS
from magi_code.providers.base import ImagePart
from magi_code.tools.images import ImageRefused, read_image
from magi_code.tools.limits import PROMPT_IMAGES

EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
IMAGE_EXTENSION = re.compile("|".join(map(re.escape, EXTENSIONS)), re.IGNORECASE)


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
    around a word left out), each once. Only the lines that hold such an extension are split
    into words (as a shell would up to SHELL_SPLIT_LINE_CHARS): shlex is slow, and a pasted
    prompt may be FACE_PROMPT_BYTES long."""
    found: list[Path] = []
    for line in text.splitlines():
        if IMAGE_EXTENSION.search(line):
            found += [path for path in _named(line, cwd) if path not in found]
    return found


def _named(line: str, cwd: Path) -> list[Path]:
    try:
        words = shlex.split(line) if len(line) <= SHELL_SPLIT_LINE_CHARS else line.split()
    except ValueError:  # an unclosed quote: plain words
        words = line.split()
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
