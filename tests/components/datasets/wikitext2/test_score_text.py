"""Text to score with a WikiText-2 masked LM: `kflow predict` on a file of lines holding [MASK], after a real (short)
training on the real corpus: every line keyed FILE:LINE, each mask filled from the model's vocabulary, the pushed
SavedModel's answers the Keras model's, blank lines kept as rejects; the lines' masks the model's positions."""

from __future__ import annotations

import csv
import json

import pytest

from kflow.pipeline.cli.main import main
from tests.conftest import REPO, shared_dataset

CONFIG = REPO / "pipeline" / "configs" / "wikitext2.yaml"
# slow (19 s: a short training): make test keeps the fill-mask on a real model (test_fill_mask.py) and the ingest's
# reading of text to score (ingest/test_executor.py)
pytestmark = [pytest.mark.real_data, pytest.mark.slow]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A BERT MLM trained 8 steps on the first WikiText-2 lines, and 12 real test lines with a word masked."""
    corpus = shared_dataset("wikitext-2")
    root = tmp_path_factory.mktemp("mlm-score")
    settings = [
        f"data.source.path={corpus}", "data.source.max_records=1500", "trainer.strategy=mirrored", "trainer.workers=1",
        "trainer.epochs=1", "trainer.steps_per_epoch=8", "trainer.model_options.vocabulary_size=2000",
        f"pipeline_root={root / 'runs'}",
    ]  # fmt: skip
    assert main(["-q", "run", str(CONFIG), "--until", "train", *(x for s in settings for x in ("--set", s))]) == 0
    (run,) = [folder for folder in (root / "runs" / "wikitext2").iterdir() if (folder / "run.json").is_file()]
    lines = [line.strip() for line in (corpus / "test.txt").read_text().splitlines() if len(line) > 100][:12]
    masked = [" ".join("[MASK]" if n == 3 else word for n, word in enumerate(line.split())) for line in lines]
    (root / "new.txt").write_text("\n".join([*masked[:6], "", *masked[6:], "a line without a mask"]) + "\n")
    return root, run, masked


def _scored(out):
    with (out / "predictions" / "Split-score" / "predictions.csv").open(newline="") as rows:
        return {row["key"]: row for row in csv.DictReader(rows)}


def test_each_mask_of_new_text_is_filled_by_the_model(trained):
    root, run, masked = trained
    out = root / "scored"
    args = ["-q", "predict", str(CONFIG), "--data", str(root / "new.txt"), "--model", str(run), "-o", str(out)]
    assert main(args) == 0
    record = json.loads((out / "predict.json").read_text())
    assert (record["scored"], record["rejected"]) == (len(masked) + 1, 1)  # the blank line 7 is a reject
    rows = _scored(out)
    keys = [f"new.txt:{n}" for n in (*range(1, 7), *range(8, 14))]
    assert set(rows) == {*keys, "new.txt:14"}
    vocabulary = set((run / "train" / "model" / "assets" / "vocab.txt").read_text().splitlines())
    for key, line in zip(keys, masked, strict=True):
        token, score = rows[key]["predicted_tokens"], float(rows[key]["scores"])
        assert token in vocabulary and token not in {"[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"}
        assert 1 / len(vocabulary) < score <= 1  # above a uniform guess: it learnt the tokens' frequencies at least
        before, after = line.split("[MASK]")
        joined = before.rstrip(" ") + token[2:] if token.startswith("##") else before + token
        assert rows[key]["filled"] == joined + after and rows[key]["unfilled"] == "0"
    assert (rows["new.txt:14"]["predicted_tokens"], rows["new.txt:14"]["filled"]) == ("", "a line without a mask")
    entries = [json.loads(line) for line in (out / "predictions" / "Split-score" / "predictions.jsonl").open()]
    assert all(len(entry["masks"][0]["top"]) == 5 for entry in entries if entry["masks"])

    # The pushed SavedModel (its serving signature; no Keras model) answers as model.keras did.
    served = root / "served"
    model = run / "train" / "model" / "Format-Serving"
    args = ["-q", "predict", str(CONFIG), "--data", str(root / "new.txt"), "--model", str(model), "-o", str(served)]
    assert main(args) == 0
    for key, row in _scored(served).items():
        assert row["predicted_tokens"] == rows[key]["predicted_tokens"]
        assert [float(s) for s in row["scores"].split()] == pytest.approx(
            [float(s) for s in rows[key]["scores"].split()], rel=1e-4
        )
