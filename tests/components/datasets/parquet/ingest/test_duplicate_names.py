"""A Parquet file naming a column twice (pyarrow writes one; a CSV's repeated name is read as `Sex_2`) is refused in
one line naming the data, not a CSV: a user trial's read `csv: the header repeats the columns ['Sex']` for a
.parquet file."""

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tests.conftest import REPO


def test_a_parquet_file_naming_a_column_twice_is_refused_as_the_data(tmp_path, run_kflow):
    iris = pd.read_csv(REPO / "pipeline" / "configs" / "data" / "iris.csv")
    columns = [pa.array(iris[name]) for name in ("sepal_length", "sepal_width", "species")]
    pq.write_table(pa.Table.from_arrays(columns, names=["size", "size", "species"]), tmp_path / "iris.parquet")
    config = tmp_path / "c.yaml"
    config.write_text(
        f"name: dup\npipeline_root: {tmp_path / 'r'}\ndata:\n  dataset: parquet\n  source: {{path: iris.parquet}}\n"
        "  label: species\n"
    )

    done = run_kflow("validate", config, timeout=120)

    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().endswith(
        "data.source.path: the table names the columns ['size'] more than once: rename them"
    ), done.stderr
