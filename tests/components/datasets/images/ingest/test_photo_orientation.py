"""Phone photos: a camera held sideways or upside down stores its pixels as the sensor read them and says in EXIF's
orientation tag how to turn them; viewers show them turned, and so does the images ingest now (before, a folder
of phone photos was ingested sideways, and its size inferred from the stored, not the shown, shape). Real photos:
scikit-learn's two sample photographs, cut into portrait crops and saved as a phone would."""

import numpy as np
import pytest
from PIL import Image
from sklearn.datasets import load_sample_images

from kflow.components.datasets.images.ingest.image_format import ORIENTATION, shown_size, upright
from tests.components.datasets.images.ingest.test_executor import records
from tests.components.datasets.images.ingest.test_other_files_and_transparency import ingest

# orientation tag → how the sensor's pixels lie relative to the photo as shown (the inverse of the viewer's turn)
STORED = {3: Image.Transpose.ROTATE_180, 6: Image.Transpose.ROTATE_90, 8: Image.Transpose.ROTATE_270}
HEIGHT, WIDTH = 48, 32  # portrait, as shown


@pytest.fixture(scope="module")
def photos():
    return load_sample_images().images  # china.jpg, flower.jpg: 427×640 RGB


def crops(photo, count):
    return [photo[20 * at : 20 * at + HEIGHT, 30 * at : 30 * at + WIDTH] for at in range(count)]


def save_as_taken(path, shown: np.ndarray, tag: int | None):
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.fromarray(shown)
    exif = Image.Exif()
    if tag is not None:
        image = image.transpose(STORED[tag])
        exif[ORIENTATION] = tag
    image.save(path, quality=95, exif=exif)


def test_a_photo_reads_as_shown_whatever_way_the_phone_was_held(tmp_path, photos):
    shown = crops(photos[1], 1)[0]
    for tag in STORED:
        save_as_taken(tmp_path / f"{tag}.jpg", shown, tag)
        with Image.open(tmp_path / f"{tag}.jpg") as opened:
            assert shown_size(opened) == (HEIGHT, WIDTH) and opened.size != (WIDTH, HEIGHT) or tag == 3
            opened.load()
            assert np.abs(np.asarray(upright(opened), float) - shown).mean() < 4  # JPEG at 95
    save_as_taken(tmp_path / "plain.jpg", shown, None)
    with Image.open(tmp_path / "plain.jpg") as opened:
        assert upright(opened) is opened  # no tag: the image itself, no copy


def test_a_folder_of_phone_photos_is_ingested_upright_at_the_shown_size(tmp_path, photos):
    root, expected = tmp_path / "photos", {}
    for label, photo in zip(("china", "flower"), photos, strict=True):
        for at, shown in enumerate(crops(photo, 6)):
            tag = (None, 6, 8, 3, 6, None)[at]  # most held sideways, as portraits are
            save_as_taken(root / label / f"{at}.jpg", shown, tag)
            expected[f"{label}/{at}.jpg"] = shown

    summary, examples, _ = ingest(tmp_path / "out", root)

    assert (summary["read"], summary["invalid"]) == (12, 0)
    found = records(examples)
    assert set(found) == set(expected)
    for key, (_, pixels) in found.items():
        assert pixels.size == HEIGHT * WIDTH * 3, key  # the shown size, inferred: none resized from sideways
        assert np.abs(pixels.reshape(HEIGHT, WIDTH, 3).astype(float) - expected[key]).mean() < 4, key
