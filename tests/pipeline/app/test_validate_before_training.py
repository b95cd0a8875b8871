"""`kflow validate` refuses, in one line naming the field, configs that `kflow run` refused only at its evaluation or
training (a helper's trial on scikit-learn tables found each): thresholds with no label to measure, a model that
does not train on the dataset, a model option nobody takes, a split the ingest never writes, slice boundaries out of
order, bounds no model can pass."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from kflow.components.datasets import get_dataset
from kflow.pipeline.cli.main import main


@pytest.fixture
def diabetes(tmp_path):
    from sklearn.datasets import load_diabetes

    load_diabetes(as_frame=True).frame.to_csv(tmp_path / "diabetes.csv", index=False)
    return tmp_path


def _validate(folder, capsys, data=None, **sections):
    config = {"name": "v", "data": {"dataset": "csv", "source": {"path": "diabetes.csv"}, "label": "target",
                                    **(data or {})}, **sections}  # fmt: skip
    (folder / "v.yaml").write_text(yaml.safe_dump(config))
    code = main(["validate", str(folder / "v.yaml")])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"data": {"label": None}, "evaluator": {"thresholds": {"accuracy": {"lower_bound": 0.8}}}},
         "data.label: csv needs the column to predict"),
        ({"trainer": {"model": "image_convnet"}}, "trainer.model: image_convnet does not train on csv"),
        ({"trainer": {"model_options": {"hiden_units": [8]}}},
         "trainer.model_options.hiden_units: csv takes no such option; did you mean hidden_units?"),
        ({"evaluator": {"split": "validation"}}, "evaluator.split: the ingest writes no split 'validation'"),
        ({"data": {"split": {"train": 8, "eval": 1, "tst": 1}}},
         "data.split.tst: no such split; did you mean test? (csv needs a test share)"),  # one line, not two
        ({"evaluator": {"slices": [{"by": "bmi", "boundaries": [0.05, 0.0]}]}},
         "evaluator.slices.0: boundaries must ascend"),
        ({"data": {"problem_type": "classification"}, "evaluator": {"thresholds": {"auc": {"lower_bound": 0.8}}}},
         "evaluator.thresholds.auc: no such metric of a classification; did you mean roc_auc? (metrics: "
         "example_count, loss, accuracy, macro_precision, macro_recall, macro_f1, roc_auc, pr_auc)"),
        ({"evaluator": {"slices": [{"by": "bmi"}]}},
         "evaluator.slices[0].boundaries: slicing by the non-integer feature 'bmi' needs boundaries"),
        ({"evaluator": {"thresholds": {"r2": {"lower_bound": 0.5, "upper_bound": 0.4}}}},
         "evaluator.thresholds.r2: lower_bound 0.5 is above upper_bound 0.4"),
        ({"trainer": {"early_stopping_patience": 3, "early_stopping_monitor": "val_accuracy"}},
         "trainer.early_stopping_monitor: a regression trains with val_loss, val_mae, val_rmse, not val_accuracy"),
        ({"tuner": {"search_space": {"trainer.batch_size": {"choice": [32]}}, "objective": {"metric": "val_r2"}}},
         "tuner.objective.metric: a regression trains with val_loss, val_mae, val_rmse, not val_r2"),
        ({"tuner": {"search_space": {"trainer.model_options.hiden_units": {"choice": [[8], [16]]}}}},
         "tuner.search_space.trainer.model_options.hiden_units: csv takes no such option; did you mean hidden_units?"),
        ({"tuner": {"search_space": {"trainer.epochs": {"choice": [0]}, "trainer.batch_size": {"int": [-3, 8]}}}},
         "tuner.search_space.trainer.epochs.choice: 0 is no value of trainer.epochs"),
        ({"tuner": {"search_space": {"trainer.model_options.hidden_units": {"choice": [[16], [0]]}}}},
         "tuner.search_space.trainer.model_options.hidden_units.choice: must be a list of positive whole numbers"),
        ({"tuner": {"search_space": {"trainer.model_options.dropout": {"uniform": [0.0, 1.5]}}}},
         "tuner.search_space.trainer.model_options.dropout.uniform: must be a number from 0 up to 1"),
    ],
)  # fmt: skip
def test_what_run_refuses_after_ingesting_validate_refuses_first(diabetes, capsys, change, said):
    code, err = _validate(diabetes, capsys, **change)
    assert code == 2 and said in err and "Traceback" not in err, err


def test_the_options_a_dataset_lists_are_those_its_task_takes():
    from kflow.components.datasets.quora import task as quora
    from kflow.components.datasets.tabular import plan
    from kflow.components.datasets.tabular import task as tabular
    from kflow.components.datasets.wikitext2 import task as wikitext2

    assert set(get_dataset("csv").model_options) == {*plan.DATA_OPTIONS, *tabular.MODEL_OPTIONS}
    assert set(get_dataset("quora").model_options) == {*quora.DATA_OPTIONS, *quora.MODEL_OPTIONS}
    assert set(get_dataset("wikitext2").model_options) == {*wikitext2.DATA_OPTIONS, *wikitext2.MODEL_OPTIONS}


def test_what_the_ingest_would_reject_row_by_row_validate_names_from_the_sample(tmp_path, capsys):
    """scikit-learn's linnerud saved with semicolons and no header, named by data.csv.header without the delimiter
    (every record a wrong_field_count reject); a text column declared int (every record a bad_value); a label of
    one value in the whole table (the Transform refused it), or none (every record left out as missing_label); a
    header without records."""
    import pandas as pd
    from sklearn.datasets import load_breast_cancer, load_linnerud

    linnerud = load_linnerud(as_frame=True)
    table = pd.concat([linnerud.data, linnerud.target], axis=1)
    table.to_csv(tmp_path / "linnerud.csv", sep=";", index=False, header=False)
    cells = load_breast_cancer(as_frame=True).frame
    cells = cells.assign(clinic=[f"clinic {n % 6}" for n in range(len(cells))], site="one", outcome=None)
    cells.to_csv(tmp_path / "cells.csv")
    cells.head(0).to_csv(tmp_path / "header-only.csv")
    cases = [
        ({"source": {"path": "linnerud.csv"}, "label": "Weight", "csv": {"header": list(table.columns)}},
         'data.csv.delimiter: none of the 20 sampled records has the header\'s 6 fields (most have 1): set '
         'data.csv.delimiter: ";"'),
        ({"source": {"path": "cells.csv"}, "label": "target", "columns": {"clinic": "int"}},
         "data.columns.clinic: declared int, but 569 of its 569 sampled values do not read as int ('clinic 0'"),
        ({"source": {"path": "cells.csv"}, "label": "site"},
         "data.label: 'site' holds one value, 'one', in every record that has one: a classifier needs at least two "
         "classes"),
        ({"source": {"path": "cells.csv"}, "label": "outcome"},
         "data.label: 'outcome' has no value in any of the 569 records: nothing to learn from"),
        ({"source": {"path": "header-only.csv"}, "label": "target"},
         "header-only.csv holds no records after its header"),
    ]  # fmt: skip
    for data, said in cases:
        code, err = _validate(tmp_path, capsys, data={"dataset": "csv", **data})
        assert code == 2 and said in err, err


def test_what_the_run_accepts_validate_accepts(tmp_path, capsys):
    """No false refusal: a search over a field without bounds (the optimizer's name), one class in each of a
    folder's two files, a column declared int beside max_invalid_fraction 0.9; an inferred int column with one
    written number (1,200) stays int (its record rejected, as before)."""
    import pandas as pd

    from kflow.components.datasets.csv.ingest.source import inspect_source

    frame = pd.DataFrame({"x": range(60), "y": [n % 7 for n in range(60)], "label": [n // 30 for n in range(60)]})
    (tmp_path / "parts").mkdir()
    frame[frame.label == 0].to_csv(tmp_path / "parts" / "negatives.csv", index=False)
    frame[frame.label == 1].to_csv(tmp_path / "parts" / "positives.csv", index=False)
    frame.assign(y=frame.y.astype(str).where(frame.x % 4 > 0, "n/a")).to_csv(tmp_path / "mixed.csv", index=False)
    search = {"search_space": {"trainer.optimizer.name": {"choice": ["adam", "sgd"]}}}
    for data, sections in [
        ({"source": {"path": "parts"}, "label": "label"}, {"tuner": search}),
        ({"source": {"path": "mixed.csv"}, "label": "label", "columns": {"y": "int"},
          "filters": {"max_invalid_fraction": 0.9}}, {}),
    ]:  # fmt: skip
        code, err = _validate(tmp_path, capsys, data={"dataset": "csv", **data}, **sections)
        assert code == 0, err
    (tmp_path / "grouped.csv").write_text("n,label\n" + "".join(f"{n},{n % 2}\n" for n in range(150)) + '"1,200",1\n')
    assert inspect_source(source_path=str(tmp_path / "grouped.csv"), label="label").types["n"] == "int"


def test_a_slice_by_the_key_or_the_row_numbers_is_refused_by_validate(tmp_path, capsys):
    """Neither the key nor a column of row numbers is a feature: the Evaluator refused to slice by them after the
    training (a helper's trial: `by: patient id`, and `by: row_names` of a frame written with its index)."""
    from sklearn.datasets import load_diabetes

    frame = load_diabetes(as_frame=True).frame
    frame.insert(0, "patient id", [f"P{1000 + row}" for row in range(len(frame))])
    frame.to_csv(tmp_path / "diabetes.csv")  # with pandas' index: a first column of row numbers
    code, err = _validate(tmp_path, capsys, data={"key": "patient id"},
                          evaluator={"slices": [{"by": "patient id"}, {"by": "bmi", "boundaries": [0.0]}]})  # fmt: skip
    assert code == 2 and "evaluator.slices[0].by: 'patient id' is the data.key, not a feature (slice by: label, " in err
    assert "slices[1]" not in err and "Traceback" not in err, err
    names = main(["validate", str(tmp_path / "v.yaml"), "--set", "evaluator.slices=[{by: row_names}]"])
    said = capsys.readouterr().err
    assert names == 2 and "evaluator.slices[0].by: 'row_names' is the row names, not a feature" in said, said


def test_keys_repeated_past_the_allowed_share_are_refused_by_validate(tmp_path, capsys):
    """30 of 599 records repeat a key (a helper's trial): the ingest rejected each and failed over the 1 % allowed;
    validate, whose sample is the whole file, says so first. Allowed more, it is valid, as the run is."""
    from sklearn.datasets import load_diabetes

    frame = load_diabetes(as_frame=True).frame
    frame.insert(0, "patient id", [f"P{1000 + row}" for row in range(len(frame))])
    frame = frame.sample(frac=1.0, random_state=0)
    frame = pd.concat([frame, frame.iloc[:30]])
    frame.to_csv(tmp_path / "diabetes.csv", index=False)
    code, err = _validate(tmp_path, capsys, data={"key": "patient id"})
    assert code == 2, err
    assert ("data.key: 'patient id' repeats in 30 of the 472 records, more than data.filters.max_invalid_fraction "
            "(0.01) allows: each is rejected as duplicate_key") in err  # fmt: skip
    code, err = _validate(tmp_path, capsys, data={"key": "patient id", "filters": {"max_invalid_fraction": 0.1}})
    assert code == 0, err


def test_boundaries_on_a_column_of_text_are_refused_by_validate(tmp_path, capsys):
    """The Evaluator slices a text column by its values and left the boundaries out, silently (a helper's trial)."""
    from sklearn.datasets import load_diabetes

    frame = load_diabetes(as_frame=True).frame
    frame["clinic"] = [("north", "south", "east")[row % 3] for row in range(len(frame))]
    frame.to_csv(tmp_path / "diabetes.csv", index=False)
    code, err = _validate(tmp_path, capsys, evaluator={"slices": [{"by": "clinic", "boundaries": [1, 2]},
                                                                  {"by": "bmi", "boundaries": [0.0]}]})  # fmt: skip
    assert code == 2 and "evaluator.slices[0].boundaries: 'clinic' is text; boundaries cut a column of numbers" in err
    assert "slices[1]" not in err, err


def test_a_frozen_schema_that_is_no_file_or_no_schema_is_refused_by_validate(diabetes, capsys):
    """The schema component refused either after the ingest and the statistics had run (exit 1, its exception)."""
    (diabetes / "garbage.pbtxt").write_text("garbage {{{\n")
    for schema, said in [
        ("nowhere.pbtxt", f"data.schema: {diabetes / 'nowhere.pbtxt'} is not a file"),
        ("garbage.pbtxt", f"data.schema: {diabetes / 'garbage.pbtxt'} is not a valid TensorFlow Metadata schema"),
    ]:
        code, err = _validate(diabetes, capsys, data={"schema": schema})
        assert code == 2 and said in err and "Traceback" not in err, err


def test_the_config_s_errors_and_the_data_s_are_said_in_one_round(diabetes, capsys):
    """A typo in `trainer` and a label the data lacks: both in one refusal (a user trial fixed the first, then met
    the second); the run refuses the same lines."""
    code, err = _validate(diabetes, capsys, data={"label": "targt"}, trainer={"epochs": 0, "optimiser": "adam"})
    assert code == 2, err
    lines = err.splitlines()[1:]
    assert [line.split(":")[0].strip() for line in lines] == ["trainer.epochs", "trainer.optimiser", "data.label"]
    assert "'targt' is not a column of the data; did you mean target?" in lines[-1]
    config = diabetes / "v.yaml"
    assert main(["run", str(config), "--pipeline-root", str(diabetes / "runs")]) == 2
    assert capsys.readouterr().err.splitlines()[1:] == err.splitlines()[1:]
    assert not (diabetes / "runs").exists()

    # An error in the data section itself: the data's checks wait for it (they would read the wrong thing).
    code, err = _validate(diabetes, capsys, data={"label": "targt", "infer_rows": -1}, trainer={"epochs": 0})
    assert code == 2 and "data.infer_rows" in err and "targt" not in err, err
    # A required section in error: nothing made up about the rest.
    (diabetes / "v.yaml").write_text(
        yaml.safe_dump({"name": 5, "data": {"dataset": "csv", "source": {"path": "diabetes.csv"}, "label": "target"}})
    )
    assert main(["validate", str(diabetes / "v.yaml")]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_a_declared_schema_gen_without_the_ingest_s_schema_is_refused_before_a_task_reads_it(diabetes, capsys):
    """TFX's wiring (statistics → schema_gen → transform) on a CSV: the inferred schema has no label role, so the
    Transform failed after the ingest and statistics ran (a user trial). validate now names the missing input; given
    it, the same DAG is valid."""
    components = [
        {"id": "ingest", "type": "ingest"},
        {"id": "stats", "type": "statistics_gen", "inputs": {"examples": "ingest.examples"}},
        {"id": "schema", "type": "schema_gen", "inputs": {"statistics": "stats.statistics"}},
        {"id": "transform", "type": "transform", "inputs": {"examples": "ingest.examples", "schema": "schema.schema"}},
        {"id": "check", "type": "example_validator",
         "inputs": {"statistics": "stats.statistics", "schema": "schema.schema"}},
    ]  # fmt: skip
    code, err = _validate(diabetes, capsys, components=components)
    assert code == 2 and err.count("\n") == 1, err
    assert "components.schema.inputs.ingest_schema: is required where transform read(s) its schema" in err, err
    assert "(ingest_schema: ingest.schema)" in err
    components[2]["inputs"]["ingest_schema"] = "ingest.schema"
    code, err = _validate(diabetes, capsys, components=components)
    assert code == 0, err
    # A frozen schema (a copy of the ingest's, tags and all) needs no ingest_schema either.
    (diabetes / "frozen.pbtxt").write_text('feature { name: "age" type: FLOAT }\n')
    del components[2]["inputs"]["ingest_schema"]
    components[2]["parameters"] = {"schema_file": str(diabetes / "frozen.pbtxt")}
    code, err = _validate(diabetes, capsys, components=components)
    assert "ingest_schema" not in err, err


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('    return {"bmi": inputs["BMI"]}', "prep.py:5: KeyError: 'BMI' is no column of the data; did you mean bmi?"),
        ('    return {"age": analyzers.vocabulary(inputs["age"])}', "prep.py:5: TypeError: analyzers.vocabulary takes "
         "strings, got numbers"),
        ("    return [inputs['age']]", "prep.py:4: TypeError: preprocessing_fn must return a dict of tensors"),
        ("    return {'target': inputs['target']}", "KeyError: 'target' is the label (data.label), not a feature"),
        # A name never defined, a module not installed: whatever the data, the Transform fails on it after the ingest.
        ("    return {'bmi': keras.ops.log1p(bmi)}", "prep.py:5: NameError: name 'bmi' is not defined"),
        ("    import sklearn_extra\n    return {'bmi': inputs['bmi']}", "prep.py:5: ModuleNotFoundError: No module"),
        # A layer the saved preprocessing model could not load: the Transform failed in Keras' words, in its Beam pass.
        ("    return {'bmi': keras.layers.Lambda(lambda x: x * 2.0)(inputs['bmi'])}", "prep.py:5: TypeError: a "
         "keras.layers.Lambda is not saved with the preprocessing model (Keras' safe_mode loads no Python function"),
        ("    x = inputs['bmi']\n    m = analyzers.mean(x)\n    return {'bmi': (x - m) / keras.ops.sqrt("
         "analyzers.variance(x))}", None),  # valid: traced on placeholders (variance 1), not on the data
        # Valid with the data's values: what the placeholders break (a spread, an index) is left to the Transform.
        ("    x = inputs['bmi']\n    lo, hi = analyzers.min(x), analyzers.max(x)\n    edges = analyzers.quantiles(x, 4)"
         "\n    return {'bmi': (x - lo) / (hi - lo) + 0 * edges[2]}", None),
        ("    v = analyzers.vocabulary(keras.ops.cast(inputs['sex'], 'string'))\n    raise ValueError(v[0])", None),
    ],
)  # fmt: skip
def test_validate_traces_the_transform_s_preprocessing_fn_on_the_data_s_columns(diabetes, capsys, body, said):
    """A preprocessing_fn naming a column the data lacks (the label among them: the Transform never feeds it), or
    returning the wrong thing, was found by the Transform after the ingest (a user trial): validate traces it on
    the sample's columns, without data, and says it in the Transform's words."""
    (diabetes / "prep.py").write_text(f"import keras\n\n\ndef preprocessing_fn(inputs, analyzers):\n{body}\n")
    code, err = _validate(diabetes, capsys, transform={"module": str(diabetes / "prep.py")})
    if said is None:
        assert code == 0, err
    else:
        assert code == 2 and err.count("\n") == 1 and said in err, err
        assert "transform.module: " in err


def test_a_split_name_typo_is_one_line_naming_it_not_the_lines_it_causes(diabetes, capsys):
    """{train: 8, eval: 1, tst: 1}: validate said the test split was missing and suggested evaluator.split: tst (a user
    trial); it names the typo, once."""
    code, err = _validate(diabetes, capsys, data={"split": {"train": 8, "eval": 1, "tst": 1}})
    assert code == 2 and err.count("\n") == 1 and "data.split.tst: no such split; did you mean test?" in err, err
    # A split of one's own beside test is no typo (the ingest writes it): `valid`, `test2`, `holdout`.
    for name in ("valid", "test2", "holdout"):
        code, err = _validate(diabetes, capsys, data={"split": {"train": 8, "eval": 1, "test": 1, name: 1}})
        assert code == 0, (name, err)


def test_a_misspelled_label_of_a_tab_separated_file_is_refused_as_the_label(tmp_path, capsys):
    """A user's trial: scikit-learn's wine as a .tsv, `--set data.label=Target` (the column is `target`) was told to
    set data.csv.delimiter to "\t" (the tab was found only for a label the header named), and only then that the
    label was wrong. The tab is read from the file whatever the label: the label's own line, at once."""
    from sklearn.datasets import load_wine

    load_wine(as_frame=True).frame.to_csv(tmp_path / "wine.tsv", sep="\t", index=False)
    config = {"name": "v", "data": {"dataset": "csv", "source": {"path": "wine.tsv"}, "label": "target"}}
    (tmp_path / "v.yaml").write_text(yaml.safe_dump(config))
    code = main(["validate", str(tmp_path / "v.yaml"), "--set", "data.label=Target"])
    err = capsys.readouterr().err
    assert code == 2 and "data.label: 'Target' is not a column of the data; did you mean target?" in err, err
    assert "delimiter" not in err, err
    assert main(["validate", str(tmp_path / "v.yaml")]) == 0, capsys.readouterr().err
