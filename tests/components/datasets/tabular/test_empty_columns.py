"""A column with no value in the training split is left out of the model: a constant, or a category of nothing."""

from kflow.components.datasets.tabular.plan import DATA_OPTIONS, NO_VALUE, StringSummary, numeric_spec, string_spec
from kflow.pipeline.cli.main import main
from tests.conftest import REPO


def test_a_column_with_no_training_value_is_left_out():
    """An empty column (a spreadsheet's unnamed, formatted one; R's all-NA `first_date_us` in bakeoff's `bakers`)
    is no feature: a constant, or a category of nothing."""
    assert numeric_spec("first_date_us", 0, 0.0, 0.0) == {
        "name": "first_date_us", "kind": "left_out", "left_out": NO_VALUE
    }  # fmt: skip
    assert string_spec("unnamed_16", StringSummary(), DATA_OPTIONS)["kind"] == "left_out"


def test_validate_refuses_a_table_whose_every_column_to_learn_from_is_empty(tmp_path, capsys):
    """What the Transform would refuse (`no feature is left to learn from`), when the sample is the whole file;
    a file longer than the sample may hold values further on, and passes."""
    table = REPO / "pipeline" / "configs" / "table.yaml"
    rows = "".join(f"{index},,,{'xy'[index % 2]}\n" for index in range(30))
    (tmp_path / "t.csv").write_text("id,a,b,label\n" + rows)  # `id` numbers the rows from 0: their key
    args = ["validate", str(table), "--set", f"data.source.path={tmp_path / 't.csv'}", "--set", "data.label=label"]
    assert main(args) == 2
    assert "no column to learn 'label' from has a value ('a', 'b': all empty)" in capsys.readouterr().err
    assert main([*args, "--set", "data.infer_rows=20"]) == 0  # 20 of 30 rows sampled: values may come later


def test_a_distinct_value_in_every_row_is_an_identifier_however_long():
    """UUIDs and 20-character hashes (Quora's qid) were learnt as text, their fragments a vocabulary: an id is an id
    whatever its length; phrases with spaces, all distinct, stay text."""
    import uuid
    from collections import Counter

    from kflow.components.datasets.tabular.plan import summarize_strings

    ids = Counter(str(uuid.UUID(int=n * 7919 + 12345)).encode() for n in range(150))
    hashes = Counter(f"{n * 2654435761 % 16**20:020x}".encode() for n in range(150))
    phrases = Counter(f"the river number {n} ran through the old town".encode() for n in range(150))
    urls = Counter(f"http://secure-login{n}.example.net/verify/account.php?id={n}".encode() for n in range(150))
    bases = "ACGT"
    dna = Counter("".join(bases[(n >> (2 * i)) % 4] for i in range(24)).encode() for n in range(150))
    smiles = Counter(f"CC(=O)N{'C' * (n % 40)}c1ccccc1O{n}".encode() for n in range(150))
    for counts in (ids, hashes):
        assert string_spec("id", summarize_strings(counts, DATA_OPTIONS), DATA_OPTIONS)["kind"] == "left_out"
    for counts in (phrases, urls, dna, smiles):  # words, addresses, sequences, molecules: text to learn from
        assert string_spec("note", summarize_strings(counts, DATA_OPTIONS), DATA_OPTIONS)["kind"] == "text"
