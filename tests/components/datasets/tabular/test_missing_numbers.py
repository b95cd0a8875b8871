"""Missing numbers: a number column with missing values in the training split is filled with its mean and also
flagged (MissingFlags), so the model tells a missing value from a measured average one; a column never missing in
training gets no flag, and the flag is computed in the model from the raw NaN, as the serving model receives it.
Measured on R's tables with missing numbers (bench/README.md, "Missing numbers")."""

import numpy as np
import pytest

from kflow.components.datasets.tabular.plan import numeric_spec
from kflow.components.datasets.tabular.preprocessing import build_preprocessing, load_preprocessing


@pytest.mark.parametrize(("count", "rows", "flagged"), [(82, 100, True), (100, 100, False)])
def test_a_column_is_flagged_when_some_training_rows_miss_it(count, rows, flagged):
    spec = numeric_spec("skin", count, 29.0, 100.0, rows=rows)
    assert spec.get("missing", False) == flagged and spec["kind"] == "numeric"


def test_the_preprocessing_flags_missing_values_of_the_flagged_columns_and_saves_and_loads(tmp_path):
    specs = [
        numeric_spec("bp", 96, 72.0, 144.0, rows=100),
        numeric_spec("age", 100, 31.0, 100.0, rows=100),
        numeric_spec("skin", 67, 29.0, 100.0, rows=100),
    ]
    model = build_preprocessing(specs)
    raw = {
        "bp": np.array([[70.0], [np.nan], [80.0], [np.nan]], np.float32),
        "age": np.array([[20.0], [30.0], [np.nan], [50.0]], np.float32),  # never missing in training: no flag
        "skin": np.array([[np.nan], [20.0], [30.0], [np.nan]], np.float32),
    }
    out = model.predict(raw, verbose=0)
    assert out["missing_numbers"].tolist() == [[0, 1], [1, 0], [0, 0], [1, 1]]
    np.testing.assert_allclose(out["numbers"][[1, 2, 0], [0, 1, 2]], 0.0, atol=1e-6)  # filled with the mean
    model.save(tmp_path / "preprocessing.keras")
    again = load_preprocessing(tmp_path / "preprocessing.keras")  # safe mode: the layer is registered
    np.testing.assert_array_equal(again.predict(raw, verbose=0)["missing_numbers"], out["missing_numbers"])
