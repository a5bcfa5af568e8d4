"""Mission Control attaches the images a prompt names by path (what a terminal types when a
file is dropped on it): quoted, with escaped spaces, or as a file:// URL; a path that names no
image is said and not attached. Through the real app (Pilot), driver, runner and session."""

import io
from pathlib import Path
from urllib.parse import quote

import pytest
from PIL import Image

from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.attachments import attached_images, named_images
from magi_code.mission_control.driver import Driver
from magi_code.mission_control.widgets import Notice, PromptArea
from mission_control.helpers import records, until

SIZE = (100, 30)


def png(path: Path, size: tuple[int, int] = (6, 4)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size).save(buffer, format="PNG")
    path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


def test_the_forms_a_dropped_path_takes_are_all_found(tmp_path: Path) -> None:
    folder = tmp_path / "my shots"
    folder.mkdir()
    for name in ("a b.png", "c.JPG", "d.webp"):
        (folder / name).write_bytes(b"x")
    (folder / "notes.txt").write_bytes(b"x")
    text = (
        f"compare '{folder}/a b.png' with {str(folder).replace(' ', chr(92) + ' ')}/c.JPG "
        f"and file://{quote(str(folder))}/d.webp, not {folder}/notes.txt nor missing.png "
        f"(again '{folder}/a b.png')"
    )
    found = named_images(text, tmp_path)
    assert found == [folder / "a b.png", folder / "c.JPG", folder / "d.webp"]
    relative = named_images("look at ./my\\ shots/a\\ b.png", tmp_path)
    assert relative == [folder / "a b.png"]
    assert named_images("an 'unclosed quote and x.png", tmp_path) == []


def test_what_is_named_but_no_image_is_said_and_left_out(tmp_path: Path) -> None:
    png(tmp_path / "good.png")
    (tmp_path / "fake.png").write_text("text")
    images, notes = attached_images("good.png fake.png", tmp_path)
    assert len(images) == 1 and images[0].media_type == "image/png"
    assert notes == ["fake.png is not attached: it is not a PNG, JPEG, GIF or WebP image."]


@pytest.mark.anyio
async def test_a_prompt_naming_an_image_sends_it_with_the_prompt(
    driver: Driver, workspace: Path
) -> None:
    data = png(workspace / "screen shot.png", (30, 20))
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(PromptArea).insert("what is in 'screen shot.png'?")
        await pilot.press("enter")
        await until(pilot, lambda: any(r["type"] == "run_finished" for r in records(driver)))
        assert "Attached 1 image." in "\n".join(str(n.render()) for n in app.query(Notice))
    [user] = [r for r in records(driver) if r["type"] == "user"]
    assert user["text"] == "what is in 'screen shot.png'?"
    [image] = user["images"]
    assert image["description"] == f"PNG, 30×20 px, {len(data):,} bytes"
