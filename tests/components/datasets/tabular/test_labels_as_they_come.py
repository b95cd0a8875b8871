"""Class labels as real files write them, ingested (CSV and Parquet) and looked up by the tabular task: yes/no with
stray spaces, integer classes with gaps, whole numbers written as decimals. Each class keeps its name and every
labelled record its class index (none is -1, which the Trainer's loss would refuse)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_wine

from kflow.components.datasets.csv.ingest.executor import run as ingest_csv
from kflow.components.datasets.parquet.ingest.executor import run as ingest_parquet
from kflow.components.datasets.tabular.task import TabularTask
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema


def wine(labels: list) -> pd.DataFrame:
    """scikit-learn's wine measurements (178 real wines) with `labels` cycled as the class."""
    frame = load_wine(as_frame=True).frame.iloc[:, :4].copy()
    frame["label"] = [labels[index % len(labels)] for index in range(len(frame))]
    return frame


def classes_and_indices(tmp_path, frame: pd.DataFrame, fmt: str) -> tuple[list[str], np.ndarray]:
    path = tmp_path / f"data.{fmt}"
    frame.to_csv(path, index=False) if fmt == "csv" else frame.to_parquet(path, index=False)
    examples, schema = Examples(tmp_path / "examples"), Schema(tmp_path / "schema")
    ingest = ingest_csv if fmt == "csv" else ingest_parquet
    ingest(examples=examples, schema=schema, rejects=Rejects(tmp_path / "rejects"), source_path=str(path),
           label="label")  # fmt: skip
    task = TabularTask(load_schema(schema.file))
    task.prepare(examples, tmp_path / "assets")
    indices = [
        y
        for split in examples.splits
        for _, y in task.dataset(examples, split, batch_size=64, training=False, seed=0).as_numpy_iterator()
    ]
    return task.classes, np.concatenate(indices)  # fmt: skip


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize(
    ("labels", "classes"),
    [
        # Stray spaces, any case: a yes/no label's classes are its words, each in one spelling (no, yes; False, True),
        # in a CSV as in a Parquet file, so that files written in other cases hold the same classes (yes_no.py).
        ([" yes", "no ", "Yes", "no"], {"csv": ["no", "yes"], "parquet": ["no", "yes"]}),
        (["yes", "no ", " yes", "no"], {"csv": ["no", "yes"], "parquet": ["no", "yes"]}),
        (["YES", "NO"], {"csv": ["no", "yes"], "parquet": ["no", "yes"]}),
        (["True", "False"], {"csv": ["False", "True"], "parquet": ["False", "True"]}),
        (["TRUE", "false"], {"csv": ["False", "True"], "parquet": ["False", "True"]}),  # R writes TRUE
        ([1, 3, 7], {"csv": ["1", "3", "7"], "parquet": ["1", "3", "7"]}),  # integer classes with gaps
        ([0.0, 1.0, 2.0], {"csv": ["0", "1", "2"], "parquet": ["0", "1", "2"]}),  # whole numbers written as decimals
        ([True, False], {"csv": ["False", "True"], "parquet": ["False", "True"]}),  # a bool column: its names
    ],
)
def test_each_class_keeps_its_name_and_every_record_its_index(tmp_path, labels, classes, fmt):
    frame = wine(labels)
    found, indices = classes_and_indices(tmp_path, frame, fmt)
    assert found == classes[fmt]
    assert len(indices) == len(frame) and indices.min() >= 0 and indices.max() == len(found) - 1
    spelled = lambda value: str(value).strip().lower()  # noqa: E731
    written = frame["label"].map(lambda value: spelled(value).removesuffix(".0")).value_counts()
    assert sorted(np.bincount(indices).tolist()) == sorted(written.tolist())  # each class holds its records


@pytest.mark.slow  # Two trainings (~15 s); make test keeps the classes' names and indices, above.
def test_a_baseline_that_predicts_other_classes_is_no_baseline_with_the_reason(tmp_path):
    """New data brought a class the blessed model never saw: scoring that model on it would put records in no class.
    The Evaluator says why there is no comparison instead."""
    from kflow.components.evaluator.executor import run as evaluate
    from kflow.components.trainer.executor import run as train
    from kflow.pipeline.dsl.artifacts import Model, ModelBlessing, ModelEvaluation, ModelRun

    def trained(name: str, frame: pd.DataFrame):
        folder = tmp_path / name
        folder.mkdir()
        path = folder / "wine.csv"
        frame.to_csv(path, index=False)
        examples, schema, model = Examples(folder / "examples"), Schema(folder / "schema"), Model(folder / "model")
        ingest_csv(examples=examples, schema=schema, rejects=Rejects(folder / "rejects"), source_path=str(path),
                   label="label")  # fmt: skip
        train(dataset="csv", examples=examples, schema=schema, model=model, model_run=ModelRun(folder / "run"),
              epochs=1, batch_size=32)  # fmt: skip
        return examples, schema, model

    two = wine(["a", "b"]).rename(columns={"malic_acid": "malic acid"})  # Keras names its input malic_acid
    _, _, old = trained("old", two)
    examples, schema, new = trained("new", pd.concat([two, wine(["c"]).iloc[:60]]))
    evaluation, blessing = ModelEvaluation(tmp_path / "evaluation"), ModelBlessing(tmp_path / "blessing")
    evaluate(examples=examples, schema=schema, model=new, evaluation=evaluation, blessing=blessing,
             baseline_model_uri=str(old.uri))  # fmt: skip
    assert "baseline" not in evaluation.metrics
    assert "predicts other classes (a, b) than this one" in blessing.read_json("blessing.json")["no_baseline"]

    # A column dropped since: the blessed model reads it, the data lacks it (Keras failed "Missing data for input").
    examples, schema, fewer = trained("fewer", two.drop(columns=["alcohol", "ash"]))
    evaluation, blessing = ModelEvaluation(tmp_path / "evaluation-2"), ModelBlessing(tmp_path / "blessing-2")
    summary = evaluate(examples=examples, schema=schema, model=fewer, evaluation=evaluation, blessing=blessing,
                       baseline_model_uri=str(old.uri))  # fmt: skip
    assert "baseline" not in evaluation.metrics and summary["accuracy"] > 0
    reason = blessing.read_json("blessing.json")["no_baseline"]
    assert f"the baseline model {old.uri} reads columns this data lacks ('alcohol', 'ash')" == reason

    # A column of numbers then of text (a code exported as its names in a newer span: the union reads it as text):
    # Keras failed mid-evaluation ("Cast string to float is not supported"), a traceback.
    coded = two.assign(alcalinity_of_ash=two["alcalinity_of_ash"].map(lambda value: "high" if value > 19 else "low"))
    examples, schema, worded = trained("worded", coded)
    evaluation, blessing = ModelEvaluation(tmp_path / "evaluation-3"), ModelBlessing(tmp_path / "blessing-3")
    evaluate(examples=examples, schema=schema, model=worded, evaluation=evaluation, blessing=blessing,
             baseline_model_uri=str(old.uri))  # fmt: skip
    reason = blessing.read_json("blessing.json")["no_baseline"]
    assert (
        f"the baseline model {old.uri} reads 'alcalinity_of_ash' as numbers, which this data holds otherwise" == reason
    )


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([str(year) for year in (1948, 1949, 1950, 1950, *range(1960, 1969))], "regression"),  # HSAUR's BCG years
        (["1", "2", "3", "1", "2"], "regression"),  # 3 values in 5 rows: under 2 rows a value
        (["1", "2", "3", "1", "2", "3"], "classification"),  # 2 rows a value
        (["0", "1", "0"], "classification"),  # two values are classes in any number of rows
        ([str(index % 20) for index in range(40)], "classification"),
    ],
)
def test_whole_numbers_are_classes_only_when_each_averages_two_rows(values, expected):
    from kflow.components.datasets.tabular.columns import infer_problem_type

    assert infer_problem_type("y", "int", values)[0] == expected


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_label_of_a_name_a_row_is_refused_by_validate_and_the_ingest_alike(tmp_path, fmt):
    """scikit-learn's wines labelled by a name each (as MASS's Cars93 by its `Model`: 93 values in 93 rows): every
    test row would be a class no training row shows, and the run was BLESSED at accuracy 0. Refused in one line by
    the inspection `kflow validate` runs and by the ingest; three cultivars in the same rows still train."""
    frame = wine([f"wine {index}" for index in range(178)])
    for folder in ("named", "cultivars"):
        (tmp_path / folder).mkdir()
    with pytest.raises(ValueError, match=r"^data.label: 'label' holds 178 distinct values in 178 sampled rows, fewer"):
        classes_and_indices(tmp_path / "named", frame, fmt)

    from kflow.components.datasets.tabular.columns import table_facts

    header, types = ["x", "label"], {"x": "float", "label": "int"}
    refused = [str(index % 61) for index in range(120)]  # 61 codes in 120 rows: under 2 rows a class
    with pytest.raises(ValueError, match="fewer than 2 a class"):
        table_facts(header, types, "label", "classification", None, {}, refused)
    kept = [str(index % 60) for index in range(120)]  # 2 rows a class
    assert table_facts(header, types, "label", "classification", None, {}, kept).problem_type == "classification"
    classes, _ = classes_and_indices(tmp_path / "cultivars", wine(["a", "b", "c"]), fmt)
    assert classes == ["a", "b", "c"]
