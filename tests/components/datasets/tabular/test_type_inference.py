"""A column's type read over its joined cells at once (columns.plain_number_type) is the type the value-by-value
rules give, on generated columns of numbers as people write them (signs, zero fractions, exponents, 0 and 1, strays,
past int64, other digits, a number declared a missing mark), and on real wide data: MNIST's pixels and
scikit-learn's digits as CSV cells."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer, load_digits

from kflow.components.datasets.tabular import columns as cols
from kflow.components.datasets.tabular.missing_marks import marked_columns
from kflow.components.datasets.tabular.written_numbers import GROUPED_BY_COMMAS
from tests.conftest import shared_dataset

_numbers = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.integers(0, 1).map(str),
    st.integers(-999, 999).map(lambda n: f"{n}.0"),
    st.integers(-999, 999).map(lambda n: f"+{n}."),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda f: f"{f:.3e}"),
    st.sampled_from([".5", "-.25", "1e99", "1e400", "1_000", "١٢", "7e", "yes", "true", "-", "1\n2", "0x1F", "00012"]),
)


MISSING = frozenset(cols.DEFAULT_MISSING)


def by_value(cells, missing=MISSING) -> str:
    return cols._narrowest([cell.strip() for cell in cells if cell.strip() not in missing])


@settings(max_examples=400, deadline=None)
@given(
    cells=st.lists(_numbers | st.sampled_from(["", " 7", "NA", "-999"]), min_size=1, max_size=300),
    ints=st.booleans(),
    empty_is_missing=st.booleans(),
    number_missing=st.booleans(),
)
def test_the_joined_reading_gives_the_type_of_the_value_by_value_reading(cells, ints, empty_is_missing, number_missing):
    if ints:  # most generated columns mix kinds: half of them whole numbers, a stray or two among them
        cells = [cell if index % 60 == 0 else str(index - 100) for index, cell in enumerate(cells)]
    missing = MISSING if empty_is_missing else MISSING - {""}
    missing = missing | {"-999"} if number_missing else missing  # data.csv.missing_values: a number as a mark
    assert cols.infer_types(["x"], [[cell] for cell in cells], {}, missing) == {"x": by_value(cells, missing)}


@pytest.mark.parametrize("table", ["mnist", "digits", "breast_cancer"])
def test_real_wide_columns_read_at_once_as_value_by_value(table, mnist_pixels):
    frame = {"mnist": lambda: mnist_pixels, "digits": lambda: load_digits().data, "breast_cancer": None}[table]
    array = load_breast_cancer().data if frame is None else frame()
    cells = [[repr(float(v)) if table == "breast_cancer" else str(int(v)) for v in row] for row in array[:2000]]
    header = [f"c{index}" for index in range(array.shape[1])]
    types = cols.infer_types(header, cells, {}, MISSING)
    for index, name in enumerate(header):
        column = [row[index] for row in cells]
        assert types[name] == by_value(column), name
        assert cols.plain_number_type(column, MISSING) is not None  # read at once
    assert set(types.values()) == ({"float"} if table == "breast_cancer" else {"int"})
    assert marked_columns(header, cells, {}, MISSING, GROUPED_BY_COMMAS) == {}
    marked = [[*row[:-1], "?" if at % 9 == 0 else row[-1]] for at, row in enumerate(cells)]
    assert marked_columns(header, marked, {}, MISSING, GROUPED_BY_COMMAS) == {header[-1]: ("?",)}


@pytest.fixture(scope="module")
def mnist_pixels():
    with np.load(shared_dataset("mnist") / "mnist.npz") as data:
        return data["x_train"][:2000].reshape(2000, -1)
