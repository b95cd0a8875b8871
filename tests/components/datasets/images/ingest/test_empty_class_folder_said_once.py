"""An empty class folder is said once a run: the folders are listed by validate, the data's fingerprint and the
ingest, and a user trial's `kflow run` said `1 class folder(s) of ... hold no file and are no class: empty_class`
four times."""

import numpy as np
import pytest
from PIL import Image
from sklearn.datasets import load_digits


@pytest.mark.slow  # ~18 s: a whole run; make test's image ingests say an empty folder (ingest tests)
def test_an_empty_class_folder_is_said_once_a_run(tmp_path, run_kflow):
    digits = load_digits()
    root = tmp_path / "digits"
    for label in (0, 1):
        (root / str(label)).mkdir(parents=True)
        for index, image in enumerate(digits.images[digits.target == label][:20]):
            Image.fromarray((image * 255 / 16).astype(np.uint8), "L").save(root / str(label) / f"{index}.png")
    (root / "2").mkdir()
    config = tmp_path / "c.yaml"
    config.write_text(
        f"name: c\npipeline_root: {tmp_path / 'r'}\ndata:\n  dataset: images\n  source: {{path: {root}}}\n"
        "trainer: {epochs: 1}\n"
    )

    done = run_kflow("run", config, timeout=600)

    assert done.returncode == 0, done.stderr
    said = f"images ingest: 1 class folder(s) of {root} hold no file and are no class: 2"
    assert (done.stdout + done.stderr).count(said) == 1, done.stderr
