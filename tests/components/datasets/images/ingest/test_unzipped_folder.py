"""An archive of class folders unzipped as archives unzip: into a folder of its name (`digits/digits/3/*.png`), often
with a Mac's `__MACOSX/` beside it. The source then holds one class folder, refused as one class; the refusal names
the folder whose sub-folders are the classes. A user trial saw only `holds 1 class(es); a classifier needs two`."""

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits

from tests.components.datasets.images.ingest.test_executor import records
from tests.components.datasets.images.ingest.test_other_files_and_transparency import ingest


def _unzipped(root):
    digits = load_digits()
    for label in (3, 8):
        folder = root / "digits" / str(label)
        folder.mkdir(parents=True)
        pixels = digits.images[digits.target == label][:12]
        for index, image in enumerate(pixels):
            Image.fromarray((255 - image * 255 / 16).astype(np.uint8), "L").save(folder / f"{index}.png")
    (root / "__MACOSX" / "digits" / "3").mkdir(parents=True)  # AppleDouble files: hidden, no images
    (root / "__MACOSX" / "digits" / "3" / "._0.png").write_bytes(b"\x00\x05\x16\x07" * 8)


def test_one_class_folder_of_class_folders_names_the_inner_folder(tmp_path, run_kflow):
    root = tmp_path / "download"
    _unzipped(root)
    config = tmp_path / "c.yaml"
    config.write_text(
        f"name: c\npipeline_root: {tmp_path / 'r'}\ndata:\n  dataset: images\n  source: {{path: {root}}}\n"
    )

    done = run_kflow("validate", config, timeout=120)

    assert done.returncode == 2, done.stderr
    said = done.stderr.strip().splitlines()[-1]
    assert said.endswith(
        f"holds 1 class(es); a classifier needs two: its folder 'digits' holds 2 folders of images (3, 8); "
        f"if they are the classes, set data.source.path to {root / 'digits'}"
    ), said
    # The folder named trains the two classes.
    summary, examples, _ = ingest(tmp_path / "out", root / "digits")
    assert summary["invalid"] == 0 and {label for label, _ in records(examples).values()} == {0, 1}


def test_one_class_of_images_is_refused_without_a_hint(tmp_path, run_kflow):
    root = tmp_path / "download"
    _unzipped(root)
    for image in (root / "digits" / "8").iterdir():  # the images directly in the one class folder
        image.rename(root / "digits" / f"8_{image.name}")
    (root / "digits" / "8").rmdir()
    config = tmp_path / "c.yaml"
    config.write_text(
        f"name: c\npipeline_root: {tmp_path / 'r'}\ndata:\n  dataset: images\n  source: {{path: {root}}}\n"
    )

    done = run_kflow("validate", config, timeout=120)

    assert done.returncode == 2 and done.stderr.strip().endswith("a classifier needs two"), done.stderr
