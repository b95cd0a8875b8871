"""Real public tabular data that scikit-learn ships, converted to plain header CSV files (no download).

scikit-learn's bundled files start with a "count,columns,class names..." line and hold class ids;
here they become ordinary CSVs: named columns, the label as the class name (a string column).
"""

from __future__ import annotations

import csv
import gzip
import importlib.resources
from pathlib import Path

IRIS_COLUMNS = ["sepal_length", "sepal_width", "petal_length", "petal_width", "species"]
DIABETES_COLUMNS = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6", "progression"]


def _bundled(name: str) -> Path:
    return Path(str(importlib.resources.files("sklearn.datasets") / "data" / name))


def iris_rows() -> list[list[str]]:
    """Iris's 150 rows as [4 measurements, species name]."""
    with _bundled("iris.csv").open() as file:
        reader = csv.reader(file)
        first = next(reader)
        names = first[2:]
        return [[*row[:4], names[int(row[4])]] for row in reader]


def write_iris(path: Path, extra_lines: list[str] = ()) -> Path:
    """Iris as a plain CSV with a header row; `extra_lines` are appended verbatim (bad rows for tests)."""
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(IRIS_COLUMNS)
        writer.writerows(iris_rows())
        file.writelines(line + "\n" for line in extra_lines)
    return path


def write_diabetes(path: Path) -> Path:
    """The diabetes regression data (442 patients, 10 raw features, disease progression after a year)."""
    with (
        gzip.open(_bundled("diabetes_data_raw.csv.gz"), "rt") as data,
        gzip.open(_bundled("diabetes_target.csv.gz"), "rt") as target,
    ):
        rows = [line.split() + [f"{float(value):g}"] for line, value in zip(data, target, strict=True)]
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(DIABETES_COLUMNS)
        writer.writerows(rows)
    return path


def ingest_diabetes(folder: Path):
    """The diabetes data through the real CSV ingest: (Examples, Schema) under `folder`, a regression."""
    from kflow.components.datasets.csv.ingest.executor import run as ingest
    from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

    examples, schema = Examples(folder / "examples"), Schema(folder / "schema")
    ingest(
        examples=examples,
        schema=schema,
        rejects=Rejects(folder / "rejects"),
        source_path=str(write_diabetes(folder / "diabetes.csv")),
        label="progression",
        problem_type="regression",
    )
    return examples, schema
