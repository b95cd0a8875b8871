"""Reading a Parquet source without reading it all: its files, its columns' types from the file schemas, a sample
of the label for the task, and its row groups as the chunks the Beam workers read (`kflow validate` shares the
checks).

Types: Parquet integers → int, floating point and decimals → float, strings (and dictionary-encoded strings)
→ string, booleans → bool; dates and timestamps → string (ISO 8601). Other types (lists, structs, binary)
are refused naming the column, unless `data.columns` converts them to a scalar type.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kflow.components.datasets.tabular import columns as cols
from kflow.components.datasets.tabular.columns import SourceFacts
from kflow.components.datasets.tabular.table_files import file_start, other_format, table_files
from kflow.components.datasets.tabular.yes_no import class_name


@dataclass(frozen=True)
class RowGroup:
    """Rows [0, count) of row group `index` of `path`; `first_row`: its first row's number in the file;
    `duplicate_rows`: the rows (numbers in the file) whose key an earlier row has."""

    path: str
    index: int
    first_row: int
    count: int
    duplicate_rows: frozenset[int] = frozenset()
    partition: tuple[tuple[str, str | None], ...] = ()  # the (column, value) of its file's partition folders

    @property
    def display_name(self) -> str:
        """The file as positions name it: its name, below its partition folders (`year=2020/part-0.parquet`: pandas
        names the files of every partition alike)."""
        path = Path(self.path)
        return "/".join([*(part for part in path.parent.parts if "=" in part), path.name])


def resolve(source_path: str | None) -> list[str]:
    """The Parquet files: a file, a folder (its *.parquet files; without any, those of its sub-folders: a
    partitioned table's `year=2020/…`, hidden and `_` folders left out) or a glob pattern, sorted by name."""
    folder = Path(source_path).expanduser() if source_path else None
    if folder is not None and folder.is_dir() and not any(folder.glob("*.parquet")):
        # Only through `column=value` folders: `train/` and `test/` folders are splits, not one table to merge.
        nested = sorted(
            str(path)
            for path in folder.rglob("*.parquet")
            if all("=" in part and not part.startswith((".", "_")) for part in path.parent.relative_to(folder).parts)
        )
        if nested:
            return nested
    return table_files("parquet", source_path, ("*.parquet",), "Parquet file")


def partitions(files: list[str], source_path: str | None) -> dict[str, dict[str, str | None]]:
    """{file: {column: value}} of the `column=value` folders (Hive's partitioning, as pandas' and Spark's
    `partition_cols` write it) between the source's folder and each file; {} for files without them."""
    from urllib.parse import unquote

    root = _root(source_path)
    found = {}
    for path in files:
        try:
            parts = Path(path).parent.relative_to(root).parts
        except ValueError:
            continue
        values = dict(part.split("=", 1) for part in parts if "=" in part and not part.startswith("="))
        if values:
            found[path] = {name: None if value in ("", HIVE_NULL) else unquote(value) for name, value in values.items()}
    return found


HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"  # a partition of rows whose value is missing


def _root(source_path: str | None) -> Path:
    """The folder the source's files are found under: the folder given, or a glob pattern's part before its first
    wildcard."""
    path = Path(source_path or ".").expanduser()
    if path.is_dir():
        return path
    fixed = []
    for part in path.parts:
        if any(mark in part for mark in "*?["):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def source_files(*, source_path: str | None = None, **_: Any) -> list[Path]:
    """The files the ingest reads, for the data fingerprint in its cache key."""
    return [Path(path) for path in resolve(source_path)]


def open_file(path: str) -> Any:
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except Exception as error:  # pyarrow's errors (ArrowInvalid, OSError) say what is wrong with the bytes.
        raise ValueError(f"parquet: {path} is not a readable Parquet file: {error}{_guess(path)}") from None


def _guess(path: str) -> str:
    """What the file seems to be instead: another known format, or text (a CSV, most often)."""
    try:
        start = file_start(path, 4096)
    except OSError:
        return ""
    if other := other_format(start, "Parquet"):
        return f" (it {other})"
    try:
        text = start.decode("utf-8")
    except UnicodeDecodeError:
        return ""
    return " (it is text, a CSV?: set data.dataset: csv)" if "\x00" not in text else ""


def kind_of(arrow_type: Any) -> str | None:
    """kflow's type of a Parquet (Arrow) column type, or None when it is not a scalar kflow can hold."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if pa.types.is_boolean(arrow_type):
        return "bool"
    if pa.types.is_integer(arrow_type):
        return "int"
    if pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type):
        return "float"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if pa.types.is_duration(arrow_type):  # a length of time: its seconds (to_kind)
        return "float"
    if pa.types.is_temporal(arrow_type):
        return "string"
    return None


def file_types(
    files: list[str], declared: dict[str, str], partitioned: dict[str, dict[str, str | None]] | None = None
) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """(the columns read, kflow type of each, {column: its Parquet type} of those left out) from the files'
    schemas, which must agree. A column of no scalar type kflow holds (a list, a struct, a map, bytes) is left out
    unless declared (then converted): one such column does not keep a table's others from a model."""
    import pyarrow as pa

    header: list[str] = []
    arrow_types: dict[str, list[Any]] = {}
    for path in files:
        schema = open_file(path).schema_arrow
        names = list(schema.names)
        if header and set(names) != set(header):  # by name: the readers read columns by name, in any order
            lacks, more = sorted(set(header) - set(names)), sorted(set(names) - set(header))
            said = "; ".join([*([f"lacks {lacks}"] if lacks else []), *([f"has {more} more"] if more else [])])
            raise ValueError(f"parquet: {path} {said} than {files[0]}: point data.source.path at files of one table")
        header = header or names
        for field in schema:
            if not pa.types.is_null(field.type):  # a part file whose column is all missing says nothing of its type
                arrow_types.setdefault(field.name, []).append(field.type)
    types = {name: declared.get(name) or _one_kind(name, arrow_types.get(name, [])) for name in header}
    for name in _past_int64(files, arrow_types, types, declared):
        types[name] = "float"  # as a CSV's whole numbers past int64 read: an Example's int64_list holds no more
    unread = {name: str((arrow_types.get(name) or ["null"])[0]) for name, kind in types.items() if kind is None}
    read = [name for name in header if name not in unread]
    for name, values in _partition_values(partitioned or {}).items():  # the folders' columns, after the files' own
        if name not in header:
            read.append(name)
            rows = [[value] for value in values if value]
            types[name] = declared.get(name) or cols.infer_types([name], rows, {}, frozenset())[name]
    return read, {n: k for n, k in types.items() if k}, unread


def _past_int64(
    files: list[str], arrow_types: dict[str, list[Any]], types: dict[str, str | None], declared: dict[str, str]
) -> list[str]:
    """The undeclared uint64 columns of which more than 1 % of the values (a CSV's stray allowance, columns.py) are
    past int64's maximum: 64-bit hashes, as pandas' `hash_pandas_object` gives them. Read as int, every such value
    was a bad_value, half a column of hashes, and the ingest failed; a rarer one stays a bad_value of its row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    unsigned = [
        name
        for name, kinds in arrow_types.items()
        if types.get(name) == "int" and name not in declared and any(kind == pa.uint64() for kind in kinds)
    ]
    past = []
    for name in unsigned:
        values = above = 0
        for path in files:
            column = open_file(path).read(columns=[name]).column(0)
            values += len(column) - column.null_count
            if column.type == pa.uint64():
                above += pc.sum(pc.greater(column, pa.scalar(2**63 - 1, pa.uint64()))).as_py() or 0
        if above > values // 100:
            past.append(name)
    return past


def _partition_values(partitioned: dict[str, dict[str, str | None]]) -> dict[str, list[str | None]]:
    columns: dict[str, list[str | None]] = {}
    for values in partitioned.values():
        for name, value in values.items():
            columns.setdefault(name, []).append(value)
    return columns


def _one_kind(name: str, arrow_types: list[Any]) -> str | None:
    """The kflow type of a column over the files' types: one, or the wider of int and float (pandas writes a part's
    int column that holds a missing value as float64: the first file's int rejected the others' 101.5), or bool in
    int; a column of other types in different files is refused, naming them."""
    kinds = {kind_of(arrow_type) for arrow_type in arrow_types}
    if len(kinds) <= 1:
        return next(iter(kinds), None)
    for wide, narrow in (("float", {"int", "bool"}), ("int", {"bool"})):
        if kinds <= {wide, *narrow}:
            return wide
    raise ValueError(
        f"parquet: the column {name!r} is of types {', '.join(sorted(str(t) for t in set(map(str, arrow_types))))} "
        "in different files: declare one in data.columns"
    )


def inspect_source(*, source_path: str | None = None, **parameters: Any) -> SourceFacts:
    """The source's facts: its columns and types, and the task (inferred from the first `infer_rows` labels
    when not given; the other `parameters` are the ingest's, read as a ColumnChoice); raises the ValueError the
    ingest would, naming the field."""
    choice = cols.ColumnChoice.of(parameters)
    label, problem_type, key, columns = choice.label, choice.problem_type, choice.key, choice.columns
    files = resolve(source_path)
    declared = columns or {}
    if not isinstance(declared, dict):
        raise ValueError(f"data.columns: must map column names to types, got {declared!r}")
    partitioned = partitions(files, source_path)
    named = {name: kind for name, kind in declared.items() if isinstance(kind, str)}
    header, types, unread = file_types(files, named, partitioned)
    check_no_images(files[0], unread, label)
    layouts = {path: tuple(sorted(partitioned.get(path, {}))) for path in files}
    first = layouts[files[0]]
    if other := next((path for path, keys in layouts.items() if keys != first), None):  # a value each row, each column
        raise ValueError(
            f"data.source.path: {files[0]} is below the folders of {list(first) or 'no column'}, {other} below those "
            f"of {list(layouts[other]) or 'no column'}: a partitioned table's files are below folders of the same "
            "columns"
        )
    folders = set(_partition_values(partitioned)) - set(open_file(files[0]).schema_arrow.names)
    if key in folders:
        raise ValueError(f"data.key: {key!r} is a partition folder's column: a key names one row, not a folder's")
    for name in (label, key):
        if name in unread:
            raise ValueError(
                f"data.columns.{name}: the Parquet type {unread[name]} is not a scalar kflow can ingest; "
                f"declare it as one of {', '.join(cols.TYPES)} to convert it"
            )
    if isinstance(label, str) and types.get(label) == "bool" and label not in declared:
        types[label] = "string"  # a bool label's classes are its names (False, True), as a pandas CSV of it has them
    kept = {*declared, *folders, label, key}
    types |= dict.fromkeys(yes_no_columns(files[0], types, kept, choice.infer_rows), "bool")
    values: list[str] = []
    if isinstance(label, str) and label in folders:  # a folder's value for each of its rows
        share = max(1, choice.infer_rows // len(files))  # each folder's value for its rows, every folder seen
        counts = [(partitioned.get(path, {}).get(label), open_file(path).metadata.num_rows) for path in files]
        values = [value for value, count in counts if value for _ in range(min(count, share))]
    elif isinstance(label, str) and label in header:
        values = sample_values(files[0], label, types[label], choice.infer_rows)
        if types[label] == "string":  # its classes as the ingest writes them: yes/no words one way (yes_no.py)
            values = [class_name(value.strip()) for value in values if value.strip()]
    first = sample_values(files[0], header[0], "int", choice.infer_rows) if header and types[header[0]] == "int" else []
    facts = cols.table_facts(header, types, label, problem_type, key, declared, values, first)
    wide = tuple(  # the uint64 columns file_types reads as float
        f"data: {field.name!r} holds whole numbers past a 64-bit integer's maximum (uint64): read as float"
        for field in open_file(files[0]).schema_arrow
        if str(field.type) == "uint64" and types.get(field.name) == "float" and field.name not in declared
    )
    return replace(facts, unread=unread, notes=(*facts.notes, *wide))


def yes_no_columns(path: str, types: dict[str, str], kept: set[Any], limit: int) -> list[str]:
    """The string columns but `kept`'s whose sampled values are yes/no or true/false words: bool, as the CSV ingest
    reads the same column (AER's Affairs' `children` was a flag from its CSV and a one-hot of two words from a
    Parquet copy, which scored otherwise)."""
    strings = [name for name, kind in types.items() if kind == "string" and name not in kept]
    samples = {name: values for name, values in sampled_columns(path, strings, limit).items() if values}
    return [
        name
        for name, values in samples.items()
        if cols.infer_types([name], [[value] for value in values], {}, frozenset())[name] == "bool"
    ]


def check_no_images(path: str, unread: dict[str, str], label: Any) -> None:
    """Refuses a table whose column left out (bytes, a struct holding them, a list) holds images, encoded or as a
    square's worth of pixels: without it the model would learn from the other columns alone; the images dataset
    reads them."""
    from kflow.components.util.encoded_images import image_kind, looks_like_pixels, square_image

    candidates = [name for name, kind in unread.items() if "binary" in kind or "list" in kind]
    if not candidates:
        return
    first = next(open_file(path).iter_batches(1, columns=candidates), None)  # one row, not a row group
    for name, value in (first.to_pylist()[0] if first is not None and first.num_rows else {}).items():
        pixels = isinstance(value, list) and looks_like_pixels(name, value)
        image = image_kind(value) or (f"pixels, {shape}" if pixels and (shape := square_image(len(value))) else None)
        if image:
            raise ValueError(
                f"data.source.path: the column {name!r} holds images ({image}): read them with data.dataset: "
                f"images (data.label: {label or 'the label column'}), which trains an image model on them"
            )


def sample_values(path: str, column: str, kind: str, limit: int) -> list[str]:
    """The first `limit` present values of `column`, as text."""
    return sampled_columns(path, [column], limit)[column]


def sampled_columns(path: str, columns: list[str], limit: int) -> dict[str, list[str]]:
    """{column: its first `limit` present values, as text}, the columns read together a row group at a time."""
    parquet = open_file(path)
    values: dict[str, list[str]] = {name: [] for name in columns}
    for index in range(parquet.num_row_groups if columns else 0):
        group = parquet.read_row_group(index, columns=columns)
        for name in columns:
            for value in group.column(name).to_pylist():
                if (text := as_text(value)) and len(values[name]) < limit:
                    values[name].append(text)
        if all(len(found) >= limit for found in values.values()):
            break
    return values


def as_text(value: Any) -> str:
    """A value as a CSV file written by pandas or Python would hold it: the record's identity for the split, so
    that a Parquet copy of a CSV splits as the CSV does. Missing (None, NaN): ''."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def source_columns(*, source_path: str | None = None, **_: Any) -> tuple[str, list[str]]:
    """(the file read, its columns): the first file's schema's names and its partition folders' columns, read from
    the file's footer, no row (`kflow validate`'s look at each span but the newest)."""
    files = resolve(source_path)
    folders = partitions(files[:1], source_path).get(files[0], {})
    names = list(open_file(files[0]).schema_arrow.names)
    return files[0], names + [name for name in folders if name not in names]
