"""Integer columns of codes (a user id, a district): their distinct whole values are counted beside their moments,
by the Transform's Beam combiner and the task's own pass alike, and a column of few enough, each seen often
enough, is also one-hot over them in the model (CodeOneHot), which the serving model computes from the raw value."""

import math

import numpy as np
import pytest

from kflow.components.datasets.tabular.plan import (
    MAX_CODES,
    integer_codes,
    merge_whole_values,
    numeric_spec,
    whole_values,
)
from kflow.components.datasets.tabular.preprocessing import build_preprocessing, load_preprocessing
from kflow.components.transform.analyzers import ColumnsMomentsFn


@pytest.mark.parametrize(
    ("distinct", "rows", "kept"),
    [
        (60, 1934, True),  # mlmRev's Contraception: 60 districts
        (671, 100_004, True),  # dslabs' movielens: 671 users
        (2, 500, False),  # 0/1: the number already says it all
        (100, 400, False),  # 4 rows a value: too thin to learn each
        (MAX_CODES + 1, 10**6, False),
    ],
)
def test_codes_are_kept_when_few_and_each_seen_often(distinct, rows, kept):
    codes = [(float(value), rows // distinct) for value in range(distinct)] if distinct <= MAX_CODES else None
    assert (integer_codes(codes, rows) is not None) == kept
    spec = numeric_spec("c", rows, 1.0, 2.0, codes)
    assert ("codes" in spec) == kept and spec["kind"] == "numeric"  # the normalised value stays either way


def test_whole_values_are_counted_over_batches_and_given_up_past_the_limit_or_at_a_decimal():
    counts = whole_values({}, np.array([3.0, 1.0, 3.0]))
    assert merge_whole_values(counts, whole_values({}, np.array([1.0, 7.0]))) == {1.0: 2, 3.0: 2, 7.0: 1}
    assert whole_values(counts, np.array([2.5])) is None and whole_values(None, np.array([1.0])) is None
    assert whole_values({}, np.arange(MAX_CODES + 1, dtype=float)) is None


def test_the_transform_combiner_counts_codes_per_column_and_none_for_fractions():
    fold = ColumnsMomentsFn(["district", "age"])
    rng = np.random.default_rng(0)
    parts = []
    for _ in range(3):  # three workers' accumulators, merged
        accumulator = fold.create_accumulator()
        batch = {"district": rng.integers(1, 61, 500).astype(float).tolist(), "age": rng.normal(30, 8, 500).tolist()}
        parts.append((fold.add_input(accumulator, batch), batch))
    merged = parts[0][0]
    for accumulator, _ in parts[1:]:
        merged = fold.merge(merged, accumulator)
    out = fold.extract_output(merged)
    districts = np.concatenate([batch["district"] for _, batch in parts])
    values, counts = np.unique(districts, return_counts=True)
    assert out["district"]["codes"] == [[float(v), int(n)] for v, n in zip(values, counts, strict=True)]
    assert out["age"]["codes"] is None and math.isclose(out["district"]["mean"], districts.mean())


def test_the_preprocessing_one_hots_codes_from_the_raw_value_and_saves_and_loads(tmp_path):
    district = numeric_spec("district", 40, 3.0, 4.0, [(1.0, 10), (2.0, 10), (5.0, 20)])
    age = numeric_spec("age", 40, 30.0, 4.0)
    rooms = numeric_spec("rooms", 40, 2.0, 1.0, [(1.0, 10), (2.0, 10), (3.0, 20)])
    model = build_preprocessing([district, age, rooms])
    raw = {
        "district": np.array([[1.0], [5.0], [3.0], [np.nan]], np.float32),
        "age": np.array([[20.0], [30.0], [40.0], [50.0]], np.float32),
        "rooms": np.array([[3.0], [np.nan], [1.0], [2.0]], np.float32),
    }
    out = model.predict(raw, verbose=0)
    # [district 1, 2, 5 | rooms 1, 2, 3 | district other | rooms other]: unseen and missing values are "other".
    assert out["integer_codes"].tolist() == [
        [1, 0, 0, 0, 0, 1, 0, 0],
        [0, 0, 1, 0, 0, 0, 0, 1],
        [0, 0, 0, 1, 0, 0, 1, 0],
        [0, 0, 0, 0, 1, 0, 1, 0],
    ]
    np.testing.assert_allclose(out["numbers"][:2, 0], [(1 - 3) / 2, (5 - 3) / 2], rtol=1e-5)
    model.save(tmp_path / "p.keras")
    again = load_preprocessing(tmp_path / "p.keras").predict(raw, verbose=0)
    np.testing.assert_array_equal(again["integer_codes"], out["integer_codes"])


def test_thousands_of_coded_columns_are_one_layer():
    """A genotype-like table: 1,000 columns of 0/1/2 each, as a sequencing export holds them."""
    specs = [numeric_spec(f"snp{i}", 600, 1.0, 0.5, [(0.0, 200), (1.0, 200), (2.0, 200)]) for i in range(1000)]
    model = build_preprocessing(specs)
    assert sum(layer.__class__.__name__ == "CodeOneHot" for layer in model.layers) == 1
    assert model.output["integer_codes"].shape[-1] == 1000 * 4


def test_a_wide_table_of_small_integers_keeps_codes_only_within_the_budget_fewest_first():
    from kflow.components.datasets.tabular.plan import MAX_CODE_SLOTS, within_code_budget

    def coded(name, distinct):
        return {"name": name, "kind": "numeric", "mean": 0.0, "variance": 1.0, "codes": list(range(distinct))}

    # movielens' 671 users beside a year of 100 values: both kept (773 slots)
    assert all("codes" in spec for spec in within_code_budget([coded("userId", 671), coded("year", 100)]))
    # MNIST written as a CSV: 784 pixel columns of up to 256 values each would be 200,000 inputs
    pixels = [coded(f"pixel{i}", 3 + i % 254) for i in range(784)]
    kept = within_code_budget(pixels)
    slots = sum(len(spec["codes"]) + 1 for spec in kept if "codes" in spec)
    assert 0 < slots <= MAX_CODE_SLOTS and [spec["name"] for spec in kept] == [spec["name"] for spec in pixels]
    most_kept = max(len(spec["codes"]) for spec in kept if "codes" in spec)
    assert all(len(spec["codes"]) >= most_kept for spec in pixels if spec["name"] not in
               {s["name"] for s in kept if "codes" in s})  # fmt: skip
    assert all(spec["kind"] == "numeric" and "mean" in spec for spec in kept)  # the values stay, normalised


def test_an_integer_column_saved_as_floats_is_coded_as_its_integer_twin(tmp_path):
    """pandas saves an integer column with a missing value as float64 (`3.0` in a CSV, a double in Parquet): its
    whole values are codes as the same column's integers are, so a table trains the same whichever way it is saved
    (survival's `cancer` scored R² −0.60 from its CSV and −1.46 from its Parquet copy, `inst` coded in one only)."""
    import pandas as pd

    from kflow.components.datasets.csv.ingest.executor import run as ingest
    from kflow.components.transform.executor import run as transform
    from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema, TransformGraph

    rng = np.random.default_rng(0)
    district = rng.integers(1, 9, 400).astype(float)
    frame = pd.DataFrame({"district": district, "age": rng.normal(40, 9, 400), "label": rng.choice(["a", "b"], 400)})
    plans = {}
    for name, column in (
        ("ints", frame["district"].astype("Int64")),
        ("floats", frame["district"].where(district > 1)),
    ):
        folder = tmp_path / name
        folder.mkdir()
        frame.assign(district=column).to_csv(folder / "t.csv", index=False)
        examples, schema = Examples(folder / "examples"), Schema(folder / "schema")
        ingest(examples=examples, schema=schema, rejects=Rejects(folder / "rejects"), source_path=str(folder / "t.csv"),
               label="label")  # fmt: skip
        graph = TransformGraph(folder / "graph")
        transform(examples=examples, schema=schema, transform_graph=graph, dataset="csv", options={})
        plans[name] = {spec["name"]: spec for spec in graph.read_json(TransformGraph.ANALYZERS_FILE)["features"]}
    assert plans["ints"]["district"]["codes"] == list(range(1, 9))
    assert plans["floats"]["district"]["codes"] == list(range(2, 9))  # 1.0 written as missing there
    assert "codes" not in plans["floats"]["age"]
