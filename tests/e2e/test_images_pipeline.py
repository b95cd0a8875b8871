"""Your own images end to end with a config of a path and a size: scikit-learn's 8×8 digits written as PNG
files in a folder per class, a truncated PNG and a text file named .png among them, through `kflow run`."""

from __future__ import annotations

import csv
import json

import pytest
import yaml

from tests.components.datasets.images.image_fixtures import truncate, write_digits


@pytest.mark.slow  # ~60 s; make test keeps the image ingest's unit tests (tests/components/datasets/images)
def test_a_folder_of_png_digits_trains_to_090_and_rejects_broken_files_by_path(tmp_path, run_kflow):
    source = write_digits(tmp_path / "digits")
    truncate(source / "3" / "0003.png")
    (source / "7" / "readme.png").write_text("these are the digits from scikit-learn\n")
    config = tmp_path / "digits.yaml"
    config.write_text(yaml.safe_dump({"name": "digits", "pipeline_root": str(tmp_path / "runs"),
                                      "data": {"dataset": "images", "source": {"path": "digits"},
                                               "image": {"size": [8, 8]}}}))  # fmt: skip

    done = run_kflow("run", config)

    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = (tmp_path / "runs" / "digits").glob("2*")
    stats = json.loads((run_dir / "ingest" / "examples" / "stats.json").read_text())
    assert stats["read"] == 1798 and stats["invalid"] == {"truncated": 1, "not_an_image": 1}
    rejects = [json.loads(line) for line in (run_dir / "ingest" / "rejects" / "rejects.jsonl").read_text().splitlines()]
    assert {(entry["position"], entry["record"]["path"]) for entry in rejects} == {
        ("3/0003.png", str(source / "3" / "0003.png")),
        ("7/readme.png", str(source / "7" / "readme.png")),
    }
    metrics = json.loads((run_dir / "evaluate" / "evaluation" / "metrics.json").read_text())
    assert metrics["example_count"] == stats["accepted"]["test"] and metrics["accuracy"] >= 0.9
    assert metrics["confusion_matrix"]["categories"] == [str(digit) for digit in range(10)]
    history = json.loads(next(run_dir.glob("train/model_run/**/history.json")).read_text())
    assert history["model_name"] == "image_convnet"


@pytest.mark.slow  # ~25 s; make test keeps the TFDS image ingest's tests (tests/components/datasets/images)
def test_a_tfds_image_dataset_trains_to_090_reruns_cached_and_scores_new_image_files(tmp_path, run_kflow):
    from tests.components.datasets.images.test_tfds_images import KflowDigitsImages

    KflowDigitsImages(data_dir=str(tmp_path / "tensorflow_datasets")).download_and_prepare()
    config = tmp_path / "tfds_digits.yaml"
    config.write_text(yaml.safe_dump({"name": "tfds-digits", "pipeline_root": str(tmp_path / "runs"),
                                      "data": {"dataset": "images", "source": {"path": "tensorflow_datasets",
                                                                               "format": "tfds"},
                                               "tfds": {"name": "kflow_digits_images"}}}))  # fmt: skip

    for _ in range(2):
        done = run_kflow("run", config)
        assert done.returncode == 0, done.stderr[-3000:]
    first, second = sorted((tmp_path / "runs" / "tfds-digits").glob("2*"))
    metrics = json.loads((first / "evaluate" / "evaluation" / "metrics.json").read_text())
    assert metrics["example_count"] == 297 and metrics["accuracy"] >= 0.9
    assert metrics["confusion_matrix"]["categories"] == [f"digit_{digit}" for digit in range(10)]
    components = json.loads((second / "run.json").read_text())["components"]
    assert {name: node["status"] for name, node in components.items()} == dict.fromkeys(components, "cached")

    # New images to score, as files (the test split's, in folders named by their digit: the truth, not classes):
    # `kflow predict` makes them the model's 8×8 grey, keys each by its path and names the classes.
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    for index in range(1500, 1797):
        folder = tmp_path / "new" / str(digits.target[index])
        folder.mkdir(parents=True, exist_ok=True)
        pixels = (digits.images[index] * 16).clip(0, 255).astype("uint8")
        Image.fromarray(pixels, "L").convert("RGB").resize((16, 16)).save(folder / f"{index}.png")  # not 8×8 grey
    # Four notes named .png among them: 1.3% invalid, more than the config's ingest allows (data.filters' default
    # 1%), said with the fraction in force; raised by --set as for a table, the 297 images are scored.
    for index in range(4):
        (tmp_path / "new" / f"notes-{index}.png").write_text("scanned on Monday\n")
    done = run_kflow("predict", config, "--data", tmp_path / "new", "-o", tmp_path / "refused")
    assert done.returncode == 2 and "more than data.filters.max_invalid_fraction=0.01 allows" in done.stderr
    assert "(raise data.filters.max_invalid_fraction to score the others)" in done.stderr, done.stderr[-3000:]
    done = run_kflow("predict", config, "--data", tmp_path / "new", "-o", tmp_path / "scored",
                     "--set", "data.filters.max_invalid_fraction=0.5")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "scored 297 row(s)" in done.stdout and "4 row(s) rejected" in done.stdout, done.stdout
    with (tmp_path / "scored" / "predictions" / "Split-score" / "predictions.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == len({row["key"] for row in rows}) == 297
    assert [name for name in rows[0] if name.startswith("score_")] == [f"score_digit_{d}" for d in range(10)]
    right = sum(row["predicted_class"] == f"digit_{row['key'].split('/')[0]}" for row in rows)
    assert right / len(rows) >= 0.85, right
    # Only notes named .png: no image to score, whatever the setting (it said "raise … to score the others").
    done = run_kflow("predict", config, "--data", tmp_path / "new" / "notes-0.png", "-o", tmp_path / "none")
    assert done.returncode == 2 and "the only record is invalid (not_an_image: 1)" in done.stderr, done.stderr[-3000:]
    assert "max_invalid_fraction" not in done.stderr  # no setting lets a single bad record be scored
    assert "(none is left to score)" in done.stderr and "the others" not in done.stderr
