"""A column of 64-bit hashes (pandas' `hash_pandas_object`, Spark's `xxhash64`, SQL's `hash()`: signed whole numbers
over nearly all of int64) gets an inferred range within int64. Its training span widened by the schema's margin had
passed int64's bounds, and a user trial's `kflow run` failed at the schema with `ValueError: Value out of range:
-18417279523127468032`, naming no column."""

import numpy as np
import pandas as pd

from kflow.components.util.schema import load_schema
from tests.conftest import REPO


def test_a_column_of_64_bit_hashes_trains(tmp_path, run_kflow):
    iris = pd.read_csv(REPO / "pipeline" / "configs" / "data" / "iris.csv")
    iris["row_hash"] = pd.util.hash_pandas_object(iris, index=False).to_numpy().astype(np.int64)
    assert iris.row_hash.min() < -(2**62) and iris.row_hash.max() > 2**62
    iris.to_csv(tmp_path / "iris.csv", index=False)
    config = tmp_path / "c.yaml"
    config.write_text(
        f"name: hashes\npipeline_root: {tmp_path / 'runs'}\ndata:\n  dataset: csv\n  source: {{path: iris.csv}}\n"
        "  label: species\ntrainer: {epochs: 1}\n"
    )

    done = run_kflow("run", config, "-q", timeout=600)

    assert done.returncode == 0, done.stderr
    (schema_file,) = (tmp_path / "runs" / "hashes").glob("*/schema/schema/schema.pbtxt")
    (domain,) = [feature.int_domain for feature in load_schema(schema_file).feature if feature.name == "row_hash"]
    assert -(2**63) <= domain.min <= iris.row_hash.min() and iris.row_hash.max() <= domain.max <= 2**63 - 1
