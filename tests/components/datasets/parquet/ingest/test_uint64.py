"""A Parquet uint64 column holding values past int64's maximum (64-bit hashes as pandas' `hash_pandas_object` gives
them) is read as float, as a CSV's such numbers are, and said by `kflow validate`. Read as int, each such value was a
bad_value: a user trial's penguins with a column of row hashes failed the ingest on 167 of 344 rows invalid."""

import pandas as pd
import pytest
from tensorflow_metadata.proto.v0 import schema_pb2

from kflow.components.util.schema import load_schema
from tests.conftest import REPO


@pytest.mark.slow  # ~17 s; make test trains 64-bit hashes in tests/components/data_checks/test_int64_ranges.py
def test_a_uint64_column_of_hashes_is_read_as_float_and_trains(tmp_path, run_kflow):
    iris = pd.read_csv(REPO / "pipeline" / "configs" / "data" / "iris.csv")
    iris["row_hash"] = pd.util.hash_pandas_object(iris, index=False).to_numpy()  # uint64
    assert str(iris.row_hash.dtype) == "uint64" and iris.row_hash.max() > 2**63
    iris.to_parquet(tmp_path / "iris.parquet", index=False)
    config = tmp_path / "c.yaml"
    config.write_text(
        f"name: hashes\npipeline_root: {tmp_path / 'runs'}\ndata:\n  dataset: parquet\n"
        "  source: {path: iris.parquet}\n  label: species\ntrainer: {epochs: 1}\n"
    )

    checked = run_kflow("validate", config, timeout=120)
    done = run_kflow("run", config, "-q", timeout=600)

    said = "data: 'row_hash' holds whole numbers past a 64-bit integer's maximum (uint64): read as float"
    assert checked.returncode == 0 and said in checked.stdout + checked.stderr, checked.stderr
    assert done.returncode == 0, done.stderr
    (schema,) = (tmp_path / "runs" / "hashes").glob("*/ingest/schema/schema.pbtxt")
    (row_hash,) = [feature for feature in load_schema(schema).feature if feature.name == "row_hash"]
    assert row_hash.type == schema_pb2.FLOAT
