"""Front matter: the strict subset, the YAML it falls back to (against PyYAML's own answers),
what both refuse and the line they name, and the read bound."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from magi_code.context.frontmatter import FIRST_READ, FrontMatterError, parse, read_head, split
from magi_code.context.profiles import read_profile
from magi_code.context.skills import read_skill
from magi_code.limits import FRONT_MATTER_BYTES

from .files import profile


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
        ("key:value", "line 2: expected a space after the colon"),
        ("just text", "line 2: expected key: value"),
        ("list: [a, b", "line 2: unterminated list"),
        ('q: "open', "line 2: bad quoting"),
        ("items:\n  - a\n  b: c", "line 4: map entry in a list"),
        ("map:\n  b: c\n  - a", "line 4: list item in a map"),
        ("items:\n\t- a", "line 3: tab in indentation"),
        # where YAML fails elsewhere than the strict subset, its line is the one named
        ("a: |\n  text\nb: [open", "line 4: not valid YAML"),
        ("a: >-\n  text\nb: c\nb: d", "line 5: duplicate key b"),
        ("meta:\n  deep:\n    x: y", "line 4: value nested too deeply"),
        ("tags:\n  - [a, b]", "line 3: value nested too deeply"),
        ("- a\n- b", "line 2: expected key: value"),
        ("? [a, b]\n: c", "line 2: expected key: value"),
        ("a: *nowhere", "line 2: unsupported value"),
        ("a: >\n  x\nb: \x07", "line 4: not valid YAML"),
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


# Shapes published skills use, which the strict subset alone refused or misread (issue 31).
YAML_CASES = {
    "folded, stripped": "name: pdf\ndescription: >-\n  Extract text and tables\n  from PDFs.\n",
    "folded": "description: >\n  One paragraph\n  folded.\n\n  Another.\n",
    "literal": "description: |\n  Line one\n    indented\n  Line three\n",
    "literal, stripped": "description: |-\n  Line one\n  Line two\n",
    "escapes in double quotes": 'description: "Tab\\there, \\u00e9, \\"quoted\\", \\\\"\n',
    "doubled single quote": "description: 'It''s here'\n",
    "comment after a value": "name: pdf # the folder's name\ndescription: x\n",
    "comment after quotes": "name: 'pdf' # c\ndescription: \"a # b\" # c\n",
    "comments in blocks": "items:\n  - one # first\n  # between\n  - two\n",
    "nested metadata": "metadata:\n  author: someone\n  version: '1.0' # quoted\n",
    "flow metadata": "metadata: {author: someone, version: '2'}\n",
    "multi-line plain": "description: Use this skill\n  when the user asks.\n",
    "anchors": "base: &b shared\nother: *b\n",
}


@pytest.mark.parametrize("block", YAML_CASES.values(), ids=YAML_CASES.keys())
def test_yaml_shapes_read_as_pyyaml_reads_them(block: str) -> None:
    assert parse(block) == yaml.safe_load(block)


def test_scalars_stay_text_on_both_paths() -> None:
    strict = "flag: true\ncount: 1.10\nnone:\ntilde: ~\n"
    as_yaml = strict + "desc: |-\n  x\n"  # a block scalar: the YAML path
    expected = {"flag": "true", "count": "1.10", "none": "", "tilde": "~"}
    assert parse(strict) == expected
    assert parse(as_yaml) == {**expected, "desc": "x"}


def test_yaml_is_imported_only_for_what_the_strict_subset_refuses() -> None:
    probe = (
        "import sys\n"
        "from magi_code.context.frontmatter import parse\n"
        "parse('name: a # c\\nmetadata:\\n  k: v')\n"
        "print('yaml' in sys.modules)\n"
        "parse('description: >-\\n  folded')\n"
        "print('yaml' in sys.modules)\n"
    )
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["False", "True"]


def test_a_published_skill_and_a_profile_load(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "pdf"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: pdf # comment\ndescription: >-\n  Extract text\n  from PDFs.\n"
        "metadata:\n  author: someone\n---\nBody\n"
    )
    found = read_skill(str(folder), "global")
    assert (found.name, found.description) == ("pdf", "Extract text from PDFs.")
    path = profile(tmp_path, "rev", "description: |-\n  Reviews\n  code.\nmode: subagent")
    read = read_profile(str(path), "rev")
    assert (read.description, read.mode) == ("Reviews\ncode.", "subagent")
