"""Questions to score: the competition's test.csv layout (qid,question_text, no target) read by the quora ingest
without a label and scored by `kflow predict` with a trained Quora model, keyed by qid, each score the model's own;
the same file given to a training run is one line."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from kflow.components.models import load_trained
from kflow.pipeline.cli.main import main
from kflow.pipeline.dsl.artifacts import Model
from tests.conftest import REPO, shared_dataset

CONFIG = REPO / "pipeline" / "configs" / "quora.yaml"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A Quora model trained 1 epoch on the real sample, and 60 of its questions without their target."""
    sample = shared_dataset("quora-insincere") / "train_sample.csv"
    root = tmp_path_factory.mktemp("quora-score")
    with sample.open(newline="") as source:
        rows = list(csv.reader(source))[1:61]
    with (root / "test.csv").open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["qid", "question_text"])
        writer.writerows(row[:2] for row in rows)
    settings = [f"data.source.path={sample}", "trainer.epochs=1", f"pipeline_root={root / 'runs'}"]
    assert main(["-q", "run", str(CONFIG), "--until", "train", *(x for s in settings for x in ("--set", s))]) == 0
    (run,) = [folder for folder in (root / "runs" / "quora").iterdir() if (folder / "run.json").is_file()]
    return root, rows, run


def test_questions_without_a_target_are_scored_by_qid_as_the_model_scores_them(trained):
    root, rows, run = trained
    out = root / "scored"
    assert (
        main(["-q", "predict", str(CONFIG), "--data", str(root / "test.csv"), "--model", str(run), "-o", str(out)]) == 0
    )
    record = json.loads((out / "predict.json").read_text())
    assert record["scored"] == len(rows) and record["key"] == "qid" and record["rejected"] == 0
    with (out / "predictions" / "Split-score" / "predictions.csv").open(newline="") as scored:
        predictions = {row["key"]: float(row["prediction"]) for row in csv.DictReader(scored)}
    assert set(predictions) == {qid for qid, *_ in rows}  # every question once, by its qid
    model = load_trained(Model(run / "train" / "model").keras_file, "text_classifier")
    expected = model.predict(np.array([text for _, text, _ in rows], dtype=object), verbose=0)[:, 0]
    got = np.array([predictions[qid] for qid, *_ in rows])
    np.testing.assert_allclose(got, expected, atol=1e-5)  # the serving model's scores are the Keras model's


def test_training_on_questions_without_a_target_is_one_line(trained, capsys):
    root, _, _ = trained
    assert main(["validate", str(CONFIG), "--set", f"data.source.path={root / 'test.csv'}"]) == 2
    assert "has no target column" in capsys.readouterr().err  # validate refuses what the run refuses
    code = main(["-q", "run", str(CONFIG), "--until", "ingest", "--set", f"data.source.path={root / 'test.csv'}",
                 "--set", f"pipeline_root={root / 'refused'}"])  # fmt: skip
    err = capsys.readouterr().err
    assert code != 0 and "has no target column" in err and "Traceback" not in err, err
