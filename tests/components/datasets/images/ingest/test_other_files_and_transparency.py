"""Image folders as people keep them: other files beside the images (a README, Thumbs.db, vector drawings,
extensionless files), images with transparency, grey and colour images mixed. Files not named as images are left out
unread and kept as filtered rejects, so they neither fail the ingest's invalid share nor become classes; transparent
pixels are composited onto data.image.background instead of dropped, which had made one-colour icons blank squares.
Real data: the Adwaita icon theme's PNGs and SVGs (/usr/share/icons/Adwaita), when the machine has it."""

import warnings
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from kflow.components.datasets.images.ingest.executor import run
from kflow.components.datasets.images.ingest.source import image_named
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from tests.components.datasets.images.ingest.test_executor import records, save

ADWAITA = Path("/usr/share/icons/Adwaita")


def ingest(out, source, **parameters):
    examples, rejects = Examples(out / "ex"), Rejects(out / "rej")
    summary = run(
        examples=examples, schema=Schema(out / "schema"), rejects=rejects, max_invalid_fraction=0.01,
        source_path=str(source), **parameters,
    )  # fmt: skip
    return summary, examples, rejects


def test_files_not_named_as_images_are_filtered_unread_and_make_no_class(tmp_path):
    root = tmp_path / "photos"
    for label in ("cat", "dog"):
        for index in range(5):
            save(root / label / f"{index}.PNG", np.full((6, 6), 40 * index), "L")
        (root / label / "README.md").write_text("taken in 2019\n")
        (root / label / "Thumbs.db").write_bytes(b"\xd0\xcf\x11\xe0" * 16)
    (root / "cat" / "LICENSE").write_text("CC-BY\n")
    (root / "drawings").mkdir()
    (root / "drawings" / "cat.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')

    summary, examples, rejects = ingest(tmp_path / "out", root)

    # 10 images, 6 other files: read 16, nothing invalid (the share was 6 of 16 before), the 6 filtered.
    assert summary["read"] == 16 and summary["invalid"] == 0 and summary["filtered"] == 6
    assert summary["train"] + summary["eval"] + summary["test"] == 10
    filtered = {entry["position"]: (entry["reason"], entry["kind"]) for entry in rejects.read()}
    assert set(filtered) == {
        "cat/README.md", "cat/Thumbs.db", "cat/LICENSE", "dog/README.md", "dog/Thumbs.db", "drawings/cat.svg",
    }  # fmt: skip
    assert set(filtered.values()) == {("not_an_image_name", "filtered")}
    assert {label for label, _ in records(examples).values()} == {0, 1}  # cat, dog: no 'drawings' class.


def test_a_file_named_as_an_image_that_is_none_stays_invalid():
    assert image_named("a.JPEG") and image_named("b.webp") and image_named("c.tif")
    assert not image_named("notes.txt") and not image_named("logo.svg") and not image_named("LICENSE")


@pytest.mark.parametrize(("background", "value"), [({}, 255), ({"background": "black"}, 0)])
def test_transparent_pixels_take_the_background_and_keep_the_drawing(tmp_path, background, value):
    """An icon drawn in one colour whose shape is its alpha channel (RGBA), the same in grey (LA), and a palette
    image with a transparent entry: each keeps its drawing; no Pillow warning reaches the user."""
    shape = np.zeros((8, 8), np.uint8)
    shape[2:6, 2:6] = 255
    rgba = np.dstack([np.full((8, 8, 3), (46, 52, 54), np.uint8), shape])
    root = tmp_path / "icons"
    save(root / "a" / "rgba.png", rgba, "RGBA")
    save(root / "a" / "la.png", np.dstack([np.full((8, 8), 46, np.uint8), shape]), "LA")
    palette = Image.fromarray((shape // 255).astype(np.uint8), "P")
    palette.putpalette([0, 0, 0, 46, 52, 54])
    (root / "b").mkdir()
    palette.save(root / "b" / "palette.png", transparency=bytes([0, 255]))  # entry 0 transparent
    save(root / "b" / "opaque.png", np.full((8, 8, 3), 9), "RGB")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary, examples, _ = ingest(tmp_path / "out", root, image={"channels": 3, **background})

    assert summary["invalid"] == 0
    found = {key: pixels.reshape(8, 8, 3) for key, (_, pixels) in records(examples).items()}
    for key in ("a/rgba.png", "a/la.png", "b/palette.png"):
        assert (found[key][0, 0] == value).all(), key  # transparent: the background
        assert found[key][3, 3, 0] == 46, key  # opaque: the drawing's own colour
    assert (found["b/opaque.png"] == 9).all()  # an image without transparency is untouched


def test_channels_are_grey_only_when_every_sampled_image_is(tmp_path):
    """A colour folder whose first file is grey: the first image alone made every image grey."""
    root = tmp_path / "photos"
    save(root / "a" / "0-scan.png", np.full((6, 6), 90), "L")
    for index in range(1, 6):
        save(root / "a" / f"{index}.jpg", np.full((6, 6, 3), (200, 30, 10)), "RGB")
        save(root / "b" / f"{index}.png", np.full((6, 6, 3), (10, 30, 200)), "RGB")
    _, examples, _ = ingest(tmp_path / "colour", root)
    pixels = {key: value for key, (_, value) in records(examples).items()}
    assert all(value.size == 6 * 6 * 3 for value in pixels.values())
    assert set(pixels["a/0-scan.png"]) == {90} and pixels["b/1.png"][2] > 150  # grey kept, blue stays blue

    grey = tmp_path / "grey"
    for label in ("a", "b"):
        for index in range(3):
            save(grey / label / f"{index}.png", np.full((6, 6), 40 * index), "L")
    _, examples, _ = ingest(tmp_path / "grey-out", grey)
    assert all(value.size == 6 * 6 for _, value in records(examples).values())


@pytest.mark.skipif(not (ADWAITA / "48x48").is_dir(), reason="no Adwaita icon theme on this machine")
def test_the_adwaita_icon_theme_ingests_with_its_drawings_and_without_its_vectors_and_cursors(tmp_path):
    """The whole theme as a folder of classes (its sizes: 16x16 ... 512x512, scalable, cursors): its SVGs and
    extensionless X cursors are filtered by name, not refused as broken images (772 of 5,619 files on Debian 12's
    adwaita-icon-theme 43, which failed the ingest); and of the 48×48 icons, most of them drawn in one colour
    with their shape in the alpha channel, almost none ingests as a blank image (617 of 994 did)."""
    summary, _, rejects = ingest(tmp_path / "all", ADWAITA, image={"size": 8})
    others = [
        file for file in ADWAITA.rglob("*")
        if file.is_file() and file.parent != ADWAITA and not image_named(file.name)
        and not any(part.startswith(".") for part in file.relative_to(ADWAITA).parts)
    ]  # fmt: skip
    assert summary["invalid"] == 0 and summary["filtered"] == len(others) > 0
    assert {entry["reason"] for entry in rejects.read()} == {"not_an_image_name"}

    summary, examples, _ = ingest(tmp_path / "48", ADWAITA / "48x48", image={"channels": 3})
    images = [pixels for _, pixels in records(examples).values()]
    assert len(images) == summary["read"] - summary["filtered"] - summary["invalid"] > 900
    blank = sum(pixels.std() < 2 for pixels in images)
    assert blank < 0.02 * len(images), f"{blank} of {len(images)} icons ingest as a blank square"


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ({"a/README.md": b"notes", "b/logo.svg": b"<svg/>"}, "holds no files named as images (.png, .jpg, ...)"),
        ({"a/x.png": None, "a/y.png": None}, "holds 1 class(es); a classifier needs two"),
    ],
)
def test_validate_refuses_what_the_ingest_would(tmp_path, run_kflow, files, said):
    root = tmp_path / "src"
    for name, data in files.items():
        if data is None:
            save(root / name, np.full((4, 4), 7), "L")
        else:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
    config = tmp_path / "c.yaml"
    config.write_text(
        f"name: c\npipeline_root: {tmp_path / 'runs'}\ndata:\n  dataset: images\n  source: {{path: {root}}}\n"
    )
    done = run_kflow("validate", config, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().endswith(f"data.source.path: {root} {said}"), done.stderr
