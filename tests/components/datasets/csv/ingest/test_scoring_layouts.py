"""New rows to score read as the training file was written: a header cut at its delimiter for the columns the
model reads, row names and a missing column included; whole numbers written with thousands separators."""

from __future__ import annotations

from sklearn.datasets import load_wine


def test_a_semicolon_file_with_row_names_is_cut_for_the_columns_named(tmp_path):
    """What `kflow predict` names when it reads new rows saved as `to_csv(path, sep=";")`: the key row_names (the
    name the ingest gives the unnamed first column) and the model's columns, one of them missing; and whole numbers
    written with thousands separators in a column declared int."""
    from kflow.components.datasets.csv.ingest.source import inspect_source

    wine = load_wine(as_frame=True).frame.drop(columns="target").head(12)
    wine.to_csv(tmp_path / "new.csv", sep=";")
    named = {"alcohol": "float", "hue": "float", "proline": "float"}
    facts = inspect_source(source_path=str(tmp_path / "new.csv"), key="row_names", columns=named)
    assert facts.header[0] == "row_names" and {"alcohol", "hue", "proline"} <= set(facts.header)
    wine.drop(columns="hue").to_csv(tmp_path / "lacking.csv", sep=";", index=False)
    columns = {**named, "ash": "float", "magnesium": "float"}
    facts = inspect_source(
        source_path=str(tmp_path / "lacking.csv"), columns={k: v for k, v in columns.items() if k != "hue"}
    )
    assert "hue" not in facts.header and "alcohol" in facts.header  # cut though the model's 'hue' is not there
    wine.assign(proline=wine["proline"].map(lambda value: f"{value:,.0f}")).to_csv(tmp_path / "grouped.csv")
    facts = inspect_source(source_path=str(tmp_path / "grouped.csv"), columns={"proline": "int"})
    assert facts.types["proline"] == "int" and facts.written["proline"] == (",",)
