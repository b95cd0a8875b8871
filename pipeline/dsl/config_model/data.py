"""The `data` section: which dataset, read from where, filtered and split how."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import MISSING, Field

from kflow.pipeline.dsl.config_model.base import (
    ALTERNATIVES,
    ColumnType,
    Identifier,
    PositiveInt,
    ProblemType,
    Section,
    SourceFormat,
    section,
)

# A split's TFRecord files, at most (data.shards_per_split): a thousand of auto's 256 MB shards is 256 GB.
MAX_SHARDS = 10_000


class ImageSection(Section):
    size: PositiveInt | Annotated[list[PositiveInt], Field(min_length=2, max_length=2)] | MISSING = MISSING
    """[height, width] in pixels, or one number for a square. Unset: the most common size among a sample of the
    files, or their median height and width where no size is half of them (said in the log)."""
    channels: Literal[1, 3] | None | MISSING = MISSING
    """1 (grey) or 3 (RGB); null: 1 if every image of a sample over the files is grey, else 3."""
    fit: Literal["resize", "pad", "exact"] | MISSING = MISSING
    """resize: stretched to the size; pad: scaled to fit, keeping its shape, centred on black; exact: another size is
    rejected (wrong_size)."""
    convert: bool | MISSING = MISSING
    """true: converted to the channels' colour mode; false: another mode is rejected (wrong_mode)."""
    background: Literal["white", "black"] | MISSING = MISSING
    """What an image's transparent pixels become (an alpha channel, a palette's transparent colour); default white,
    as a page or an image viewer shows them."""


class TfdsSection(Section):
    name: str = Field(min_length=1)
    """The builder's name, e.g. iris."""
    version: str | None | MISSING = MISSING
    """null: the newest prepared version."""
    splits: dict[str, str] | MISSING = MISSING
    """{train: 'train[:90%]', eval: 'train[90%:]', test: 'test'}: TFDS split specs, slices included. Default: train,
    validation, test, a split the dataset lacks cut from train (no validation split: train[:90%], train[90%:],
    test)."""
    download: bool | MISSING = MISSING
    """true: download and prepare first (needs internet and the builder's code); default false."""


class CsvSection(Section):
    delimiter: str = Field(",", min_length=1, max_length=1)
    quotechar: str | None = Field('"', min_length=1, max_length=1)
    """null: no quoting."""
    header: bool | list[str] = True
    """true: each file starts with a header row; a list: the column names of files without one."""
    missing_values: list[str] | MISSING = MISSING
    """Values meaning 'missing' (the feature is left out of the Example). Default: '', NA, N/A, NaN, nan, null, NULL,
    None."""
    encoding: str | MISSING = Field(MISSING, min_length=1)
    """The files' text encoding: any of Python's that writes ASCII as ASCII, e.g. cp1252 (what spreadsheets on Windows
    save) or latin-1; not UTF-16. A byte-order mark is skipped. Left out: UTF-8, or cp1252 where the header or the
    sampled records are not UTF-8 and are all cp1252 (said in the log)."""
    decimal: Literal[".", ","] | MISSING = MISSING
    """',': numbers are written with a decimal comma (1,5), as European spreadsheets save them (with delimiter ';').
    Left out: read from the data, ',' where the fields are not cut at commas and a column holds only numbers so
    written, else '.'."""
    sheet: str | int | MISSING = MISSING
    """An Excel workbook's sheet to read: its name, or its place from 0. Left out: the first, or, where it lacks a
    column the config names (a cover sheet), the first sheet naming them all."""


class SourceSection(Section):
    path: str | None = None
    """A local file or folder with the dataset (csv: also a glob pattern such as data/*.csv.gz)."""
    format: SourceFormat = "auto"
    """mnist: auto | npz | idx | sklearn_digits | tfds | download; wikitext2: auto | download; quora: auto | csv |
    kaggle; csv: auto | csv | jsonl (JSON Lines, or a JSON array of objects; auto: files that open either are);
    parquet: auto | parquet; images: auto | folders | manifest | tfrecord | parquet | tfds. auto looks at
    data.source.path, then $KFLOW_DATA_DIR, then ~/.keras/datasets and the tensorflow-datasets data dir, and never
    downloads."""
    max_records: int | None = Field(None, ge=1)
    """Read at most this many records of each source split."""


class FiltersSection(Section):
    max_invalid_fraction: float = Field(0.01, ge=0, le=1)
    """Fail the ingest when a larger share of the records read is invalid; policy-filtered records (no label, a
    non-image file, a repeated header) count neither way."""
    min_chars: int | None = Field(None, ge=0)
    """wikitext2: keep lines of at least this many characters (null: 101, i.e. longer than 100 as the Keras MLM
    guide)."""
    max_chars: int | None = Field(None, ge=1)
    """wikitext2: drop longer lines (null: no limit); quora: drop longer questions (null: 1000)."""
    drop_headings: bool = True
    """wikitext2: drop '= Title =' heading lines."""
    drop_blank: bool = True
    """wikitext2: drop blank lines."""
    deduplicate: bool = False
    """wikitext2: drop exact repeats of an earlier line."""


class LastSpans(Section):
    last: PositiveInt
    """The N highest spans."""


class SpanRange(Section):
    from_: int | None = Field(None, alias="from", ge=0)
    """The first span read (null: the lowest found)."""
    to: int | None = Field(None, ge=0)
    """The last span read, inclusive (null: the highest found)."""


class DriftSection(Section):
    l_infinity: float = Field(0.25, gt=0, le=1)
    """Categorical features: the largest L-infinity distance (the largest difference in a value's share) between the
    newest span's Split-train and the previous span's before it is drift. 0.25 suits spans of a few hundred rows
    (TFDV's guides use 0.01-0.1 for large, stable data)."""
    jensen_shannon: float = Field(0.1, gt=0, le=1)
    """Numeric features: the largest approximate Jensen-Shannon divergence (base 2, over the two spans' histograms)
    before it is drift."""


class DataSection(Section):
    dataset: str = Field(min_length=1)
    """A registered dataset (kflow.components.datasets): mnist, wikitext2, quora; csv (any CSV, JSON Lines, JSON
    array of records or Excel workbook), parquet (any Parquet file), tfrecord (tf.train.Example files) or tfds (a
    TensorFlow Datasets dataset): set data.label and data.problem_type; images (a folder per class, or a manifest of
    path,label)."""
    label: str | None = None
    """csv, parquet, tfrecord, tfds: the column (feature) to predict; tfds: default the builder's supervised label;
    images kept in a TFRecord or Parquet table: their label column (default: the one named as labels are)."""
    problem_type: ProblemType | None = None
    """csv, parquet: classification (binary or multi-class; string, integer or boolean labels) or regression (a
    numeric label). null: classification."""
    key: str | None = None
    """csv, parquet: a column holding a unique record key; the split hashes it and repeats are rejected. null: the
    split hashes each record's content."""
    columns: dict[str, ColumnType] | None = None
    """csv: {column: int | float | string | bool}; columns not named here are inferred from the first
    data.infer_rows records. parquet: converts a column from its Parquet type."""
    infer_rows: int | None = Field(None, ge=1)
    """csv, parquet: records sampled to infer column types (null: 10000)."""
    image: ImageSection | None = None
    """images: what every image becomes, e.g. {size: [28, 28]}; null: the most common size among a sample of the
    files (their median height and width where sizes vary), and grey only if every image of it is."""
    schema_: str | None = Field(None, alias="schema")
    """csv: a frozen schema.pbtxt to use instead of the one inferred from Split-train (copy
    runs/<pipeline>/<run>/schema/schema/schema.pbtxt, edit, and point here)."""
    on_anomaly: Literal["fail", "warn"] | None = None
    """csv: what an anomaly of the eval or test data against the schema does: fail (null: the default) stops the run
    before training; warn logs it and trains."""
    spans: Literal["latest", "all"] | LastSpans | SpanRange | None = None
    """With {SPAN} in data.source.path (and {VERSION}: each span's highest version), the spans a run reads: latest,
    all, {last: N} or {from: A, to: B}. null: latest. Each span is ingested once and cached on its own."""
    on_drift: Literal["fail", "warn"] = "warn"
    """csv with spans: what drift of the newest span from the previous one (data.drift) does: warn logs and reports
    it; fail stops the run before training."""
    drift: DriftSection = section(
        DriftSection,
        "csv with spans: the drift thresholds between the newest span's Split-train and the previous span's (TFDV's "
        "comparators: L-infinity for categorical features, approximate Jensen-Shannon for numeric ones).",
    )
    split_files: dict[str, str] | None = None
    """tfrecord: {split: glob on file names}, whole files per split (the source's own split, e.g. {train: 'train-*',
    eval: 'eval-*', test: 'test-*'}); null: data.split shares by hash."""
    tfds: TfdsSection | None = None
    """tfds (and images with data.source.format: tfds): the TensorFlow Datasets dataset, read from data.source.path
    (a TFDS data_dir; null: TFDS's default)."""
    csv: CsvSection | None = None
    """csv: how the files are written."""
    settings: dict[str, Any] | None = None
    """A dataset's own settings, for datasets that declare them (a plugin's bundle names its settings model:
    components/datasets/bundle.py, Dataset.settings); validated against that model, its defaults filled, and passed to
    the dataset's ingest as its `settings` parameter. null: the model's defaults."""
    source: SourceSection = section(SourceSection)
    filters: FiltersSection = section(FiltersSection)
    split: dict[Identifier, PositiveInt] | MISSING = Field(MISSING, json_schema_extra={"required": ["train", "eval"]})
    """mnist: hash buckets that divide the source's training records: {train: 9, eval: 1}; the source's test records
    form the test split. wikitext2: the source's train/valid/test files are used as train/eval/test (only train and
    eval keys accepted; their values are ignored). quora: the CSV has no labelled test split, so give train, eval and
    test shares, e.g. {train: 8, eval: 1, test: 1} (stratified by label). csv: the same as quora (stratified by label
    for classification). Unset: {train: 9, eval: 1} where the source has its own test split (mnist, wikitext2, tfds),
    else {train: 8, eval: 1, test: 1}."""
    shards_per_split: Annotated[int, Field(ge=1, le=MAX_SHARDS)] | Literal["auto"] = "auto"
    """TFRecord files per split (at most 10,000, and no more than the records read), or auto: one per 256 MB of the
    split's serialised Examples (at least one)."""


ALTERNATIVES["data.spans"] = "a selection of spans: latest | all | {last: N} | {from: A, to: B}"
