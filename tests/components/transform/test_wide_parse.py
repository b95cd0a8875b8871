"""A wide batch parsed by TensorFlow gives the Transform's analyzers the values the Python loop gives, in the same
order: real wide records (scikit-learn's digits, 64 whole-number pixel columns, and breast cancer's 30 float columns)
with what a tabular ingest leaves in them (missing features, int64's minimum, a non-finite float, an empty string, a
text column), and batches TensorFlow cannot parse (a column stored as two kinds of list) parsed in Python."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits

from kflow.components.transform import analyzers, wide_parse
from kflow.components.util.example_proto import serialize_example

PIXELS = [f"pixel{index}" for index in range(64)]


@pytest.fixture(scope="module")
def records() -> list[bytes]:
    digits, cancer = load_digits(), load_breast_cancer()
    rows = []
    for index, image in enumerate(digits.data[:1200]):  # 1,200 records of 97 columns: a wide batch
        measures = cancer.data[index % len(cancer.data)]
        row = {name: int(value) for name, value in zip(PIXELS, image, strict=True) if (index + int(value)) % 7}
        row |= {name: float(value) for name, value in zip(cancer.feature_names, measures, strict=True)}
        row["note"] = ["", "benign", "malignant", "see file"][index % 4]
        row["label"] = int(digits.target[index])
        if index == 3:
            row["pixel5"] = wide_parse.INT_MISSING  # an int the ingest marks missing
            row["mean radius"] = float("inf")
        rows.append(serialize_example(row))
    return rows


def columns() -> dict[str, str]:
    names = {name: "number" for name in [*PIXELS, *load_breast_cancer().feature_names]}
    return names | {"note": "string", "label": "label", "absent": "number"}


def in_python(records: list[bytes]) -> dict[str, list]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(wide_parse, "WIDE_VALUES", 10**12)
        return analyzers.parse_columns(records, columns())


def test_a_wide_batch_parses_to_the_values_of_the_python_loop_in_their_order(records):
    assert wide_parse.is_wide(records, columns())
    parsed_by_tf = analyzers.parse_columns(records, columns())
    assert wide_parse.parse_wide(records, {"note": "string"}) is not None  # the TensorFlow path is the one taken
    expected = in_python(records)
    assert list(parsed_by_tf) == list(expected)
    for name, values in expected.items():
        assert parsed_by_tf[name] == values, name
    assert wide_parse.INT_MISSING not in parsed_by_tf["pixel5"] and parsed_by_tf["absent"] == []
    assert np.isfinite(parsed_by_tf["mean radius"]).all() and len(parsed_by_tf["mean radius"]) == 1199
    assert set(parsed_by_tf["note"]) == {b"benign", b"malignant", b"see file"}


def test_a_column_stored_as_two_kinds_of_list_is_parsed_in_python(records):
    mixed = [*records, serialize_example({"pixel1": 2.5, "note": "x", "label": 1})]  # a float among the ints
    assert wide_parse.parse_wide(mixed, {name: "number" for name in PIXELS}) is None
    assert analyzers.parse_columns(mixed, columns()) == in_python(mixed)
    assert wide_parse.parse_wide(records, {"note": "number"}) is None  # text where numbers are expected
