"""The strict front-matter subset: what it accepts, what it refuses, and the read bound."""

from pathlib import Path

import pytest

from magi_code.context.frontmatter import FIRST_READ, FrontMatterError, parse, read_head, split
from magi_code.limits import FRONT_MATTER_BYTES


def test_accepted_shapes() -> None:
    block = "\n".join(
        [
            "# a comment",
            "name: pdf-tools",
            'description: "Quoted: with a colon"',
            "single: 'x # not a comment'",
            "inline: [read_file, 'grep', \"glob\"]",
            "empty-inline: []",
            "items:",
            "  - one",
            "  - 'two'",
            "metadata:",
            "  author: me",
            "  version: '1.0'",
            "",
            "flag: true",
        ]
    )
    assert parse(block) == {
        "name": "pdf-tools",
        "description": "Quoted: with a colon",
        "single": "x # not a comment",
        "inline": ["read_file", "grep", "glob"],
        "empty-inline": [],
        "items": ["one", "two"],
        "metadata": {"author": "me", "version": "1.0"},
        "flag": "true",
    }


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        ("name: a\nname: b", "line 3: duplicate key name"),
        ("description: |\n  text", "line 2: unsupported value"),
        ("description: >-\n  text", "line 2: unsupported value"),
        ("  indented: x", "line 2: unexpected indentation"),
        ("key:value", "line 2: expected a space after the colon"),
        ("just text", "line 2: expected key: value"),
        ("list: [a, b", "line 2: unterminated list"),
        ('q: "open', "line 2: bad quoting"),
        ("items:\n  - a\n  b: c", "line 4: map entry in a list"),
        ("map:\n  b: c\n  - a", "line 4: list item in a map"),
        ("items:\n\t- a", "line 3: tab in indentation"),
        ("anchor: &x y", "line 2: unsupported value"),
    ],
)
def test_refused_shapes_name_the_line(block: str, problem: str) -> None:
    with pytest.raises(FrontMatterError) as caught:
        parse(block)
    assert caught.value.problem == problem


def test_split_finds_the_body() -> None:
    assert split("---\nname: x\n---\n# Body\n") == ("name: x", "# Body\n")
    assert split("# no front matter\n") == (None, "# no front matter\n")
    with pytest.raises(FrontMatterError):
        split("---\nname: x\n")


def test_read_head_stops_at_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "SKILL.md"
    opening, closing = "---\nk: ", "\n---\n"
    # exactly FRONT_MATTER_BYTES up to and including the closing fence: accepted
    filler = "v" * (FRONT_MATTER_BYTES - len(opening) - len(closing))
    path.write_text(opening + filler + closing + "B" * 100_000)
    fields, offset = read_head(str(path))
    assert fields == {"k": filler} and offset == FRONT_MATTER_BYTES
    # one byte more: refused, and the body is never needed to tell
    path.write_text(opening + filler + "v" + closing + "B" * 100_000)
    with pytest.raises(FrontMatterError) as caught:
        read_head(str(path))
    assert caught.value.problem == f"front matter longer than {FRONT_MATTER_BYTES} bytes"


def test_read_head_without_front_matter_or_closing(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_text("plain body\n")
    assert read_head(str(path)) == (None, 0)
    path.write_text("---\nk: v\n")
    with pytest.raises(FrontMatterError) as caught:
        read_head(str(path))
    assert caught.value.problem == "front matter has no closing ---"
    path.write_text("---\nk: v\n---")  # the file ends at the fence
    assert read_head(str(path)) == ({"k": "v"}, len("---\nk: v\n---"))
    path.write_bytes(b"---\r\nk: v\r\n---\r\nbody")
    assert read_head(str(path)) == ({"k": "v"}, len(b"---\r\nk: v\r\n---\r\n"))


@pytest.mark.parametrize("size", range(FIRST_READ - 8, FIRST_READ + 8))
def test_read_head_across_the_first_read(tmp_path: Path, size: int) -> None:
    path = tmp_path / "SKILL.md"
    filler = "v" * (size - len("---\nk: \n---"))
    path.write_text(f"---\nk: {filler}\n---\nbody\n")
    assert read_head(str(path)) == ({"k": filler}, size + 1)
