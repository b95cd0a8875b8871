"""Numbers as reports and spreadsheets write them: scikit-learn's real diabetes table (442 patients) with its
disease progression written as a price (`$151,000.00`), its body mass index as a percent of the mean (`103.4%`) and
a sign written before the currency for half of its blood pressure deltas (`-$0.04`). They read as the numbers they
write, the label as a regression's; where a comma may be a decimal mark (`;` between fields) `1,250` stays text."""

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes

from kflow.components.datasets.csv.ingest import source as csv_source
from kflow.components.datasets.tabular import columns as cols
from kflow.components.datasets.tabular.row_encoder import RowEncoder
from kflow.components.datasets.tabular.written_numbers import GROUPED_BY_COMMAS, GROUPED_BY_POINTS, UNGROUPED, plain
from kflow.components.util.schema import annotation_tags, load_schema
from kflow.pipeline.cli.main import main
from kflow.pipeline.dsl.artifacts import Schema
from tests.components.datasets.csv.ingest.test_executor import ingest, read_records
from tests.conftest import REPO


@pytest.fixture(scope="module")
def diabetes() -> pd.DataFrame:
    frame = load_diabetes(as_frame=True, scaled=False).frame
    return frame


def as_reported(frame: pd.DataFrame) -> pd.DataFrame:
    written = frame.copy()
    written["target"] = [f"${value * 1000:,.2f}" for value in frame["target"]]
    written["bmi"] = [f"{value / frame['bmi'].mean() * 100:.1f}%" for value in frame["bmi"]]
    written["bp"] = [f"-${-value:.2f}" if value < 0 else f"${value:.2f}" for value in frame["bp"] - frame["bp"].mean()]
    return written


def test_numbers_written_with_currency_commas_and_percent_read_as_the_numbers(tmp_path, diabetes):
    path = tmp_path / "diabetes.csv"
    as_reported(diabetes).to_csv(path, index=False)
    facts = csv_source.inspect_source(source_path=str(path), label="target")
    assert facts.problem_type == "regression" and "214 distinct whole numbers" in facts.problem_type_reason
    assert {name: facts.types[name] for name in ("target", "bmi", "bp")} == dict.fromkeys(("target", "bmi", "bp"),
                                                                                          "float")  # fmt: skip
    assert facts.written == {"target": ("$", ","), "bmi": ("%",), "bp": ("$",)}

    summary, examples, schema, _ = ingest(tmp_path, source_path=str(path), label="target", columns={})
    assert (summary["read"], summary["rejected"], summary["invalid"]) == (442, 0, 0)
    assert annotation_tags(load_schema(Schema(schema.path).file), "target")["task"] == "regression"
    records = [record for split in read_records(examples).values() for record in split]
    assert np.isclose(sum(record["target"] for record in records), diabetes["target"].sum() * 1000, rtol=1e-6)
    bmi = diabetes["bmi"] / diabetes["bmi"].mean() * 100
    assert np.isclose(sum(record["bmi"] for record in records), bmi.round(1).sum(), rtol=1e-6)
    assert min(record["bp"] for record in records) < 0 < max(record["bp"] for record in records)


def test_accounting_negatives_scale_letters_and_lower_bounds_read_as_the_numbers(tmp_path, diabetes):
    """As ledgers and app stores write them: a negative delta in parentheses (`($0.04)`), progression in thousands
    (`151K`), a cholesterol count as a lower bound (`1,570+`); a column of sizes with a letter in a text (`5 ft`)
    stays text."""
    frame = diabetes.copy()
    delta = frame["bp"] - frame["bp"].mean()
    frame["bp"] = [f"(${-value:.2f})" if value < 0 else f"${value:.2f}" for value in delta]
    frame["target"] = [f"{value:g}K" for value in frame["target"]]
    frame["s1"] = [f"{value * 10:,.0f}+" for value in frame["s1"]]
    frame["s2"] = [f"{value:.0f} ft" for value in frame["s2"]]
    path = tmp_path / "ledger.csv"
    frame.to_csv(path, index=False)
    facts = csv_source.inspect_source(source_path=str(path), label="target")
    assert facts.written == {"target": ("K",), "bp": ("$", "("), "s1": ("+", ",")} and facts.types["s2"] == "string"
    assert facts.problem_type == "regression"
    summary, examples, _, _ = ingest(tmp_path, source_path=str(path), label="target", columns={})
    assert (summary["read"], summary["rejected"]) == (442, 0)
    records = [record for split in read_records(examples).values() for record in split]
    assert np.isclose(sum(record["target"] for record in records), diabetes["target"].sum() * 1000, rtol=1e-6)
    assert np.isclose(sum(record["bp"] for record in records), delta.round(2).sum(), atol=0.05)
    assert min(record["bp"] for record in records) < 0
    assert sum(record["s1"] for record in records) == (diabetes["s1"] * 10).sum()


def test_where_a_comma_may_be_a_decimal_mark_it_groups_no_thousands(tmp_path, diabetes):
    frame = diabetes.copy()
    frame["s1"] = [f"{value:,}" for value in frame["s1"] * 10]  # 1,570 ... : 1.57 in a European file
    frame.to_csv(tmp_path / "semicolons.csv", index=False, sep=";")
    facts = csv_source.inspect_source(source_path=str(tmp_path / "semicolons.csv"), label="target",
                                      csv_format={"delimiter": ";"})  # fmt: skip
    assert facts.types["s1"] == "string" and "s1" not in facts.written
    frame.to_csv(tmp_path / "commas.csv", index=False)
    facts = csv_source.inspect_source(source_path=str(tmp_path / "commas.csv"), label="target")
    assert facts.types["s1"] == "float" and facts.written == {"s1": (",",)}


US, NONE, EU = GROUPED_BY_COMMAS, UNGROUPED, GROUPED_BY_POINTS


@pytest.mark.parametrize(
    ("text", "style", "number"),
    [("$1,234.50", US, 1234.5), ("-€5", US, -5.0), ("£0.99", US, 0.99), ("12.5%", US, 12.5), ("1,000,000", US, 1e6),
     ("$-7", US, -7.0), ("12.50 €", US, 12.5), ("-3€", NONE, -3.0), ("1,25", US, None), ("01,250", US, None),
     ("1,250", NONE, None), ("$", US, None), ("5%%", US, None), ("-$-5", US, None), ("1_000", US, None),
     ("$5 €", US, None), ("1.234,50 €", EU, 1234.5), ("12,5 %", EU, 12.5), ("-1.234.567", EU, -1234567.0),
     ("€ 0,99", EU, 0.99), ("1,234.50", EU, None), ("1.23,4", EU, None),
     ("(1,234.50)", US, -1234.5), ("($5.00)", US, -5.0), ("$(5)", US, -5.0), ("(12,50 €)", EU, -12.5),
     ("19M", US, 19e6), ("201k", US, 201e3), ("$1.2B", US, 1.2e9), ("3bn", US, 3e9), ("10,000+", US, 1e4),
     ("10K+", US, 1e4), ("5m", US, None), ("5 M", US, None), ("5++", US, None), ("()", US, None), ("(5", US, None),
     ("1.000+", EU, 1000.0), ("\u22125", US, -5.0), ("\u2212$1,234.50", US, -1234.5),
     ("1 234,56", EU, 1234.56), ("1\u00a0234\u00a0567 €", EU, 1234567.0), ("1\u202f234.5", US, 1234.5),
     ("12 345", NONE, 12345.0), ("1 23", US, None), ("2024 001", US, None), ("1 234,5", US, None),
     ("USD 1,200", US, 1200.0), ("1.234,50 EUR", EU, 1234.5), ("US$5", US, 5.0), ("R$ 1.234,50", EU, 1234.5),
     ("GBP 5", US, 5.0), ("GBP 5M", US, 5e6), ("-CHF 12.50", US, -12.5), ("(USD 5)", US, -5.0), ("5 USD", US, 5.0),
     ("5USD", US, None), ("EUR101", US, None), ("USD5", US, None), ("HK$5", US, 5.0), ("HK$1.2M", US, 1.2e6),
     ("USD", US, None), ("ABC 5", US, None), ("EUR 5 USD", US, None), ("usd 5", US, None)],
)  # fmt: skip
def test_what_is_a_number_so_written(text, style, number):
    assert plain(text, style) == number


def test_amounts_written_with_a_currency_code_read_as_the_numbers(tmp_path, diabetes):
    """An invoice export: the progression as an amount in US dollars (`USD 151,000.00`), blood pressure in Swiss
    francs after the number (`93.00 CHF`); a column holding only the currency's code stays a category, and the
    validate line names the codes."""
    frame = diabetes.copy()
    frame["target"] = [f"USD {value * 1000:,.2f}" for value in diabetes["target"]]
    frame["bp"] = [f"{value:.2f} CHF" for value in diabetes["bp"]]
    frame["currency"] = ["USD", "EUR"] * (len(frame) // 2) + ["USD"] * (len(frame) % 2)
    path = tmp_path / "invoices.csv"
    frame.to_csv(path, index=False)
    facts = csv_source.inspect_source(source_path=str(path), label="target")
    assert facts.written == {"target": (",", "USD"), "bp": ("CHF",)} and facts.types["currency"] == "string"
    assert "'target' holds numbers written with ',', 'USD': read as the numbers" in facts.written_readings
    summary, examples, _, _ = ingest(tmp_path, source_path=str(path), label="target", columns={})
    assert (summary["read"], summary["rejected"]) == (442, 0)
    records = [record for split in read_records(examples).values() for record in split]
    assert np.isclose(sum(record["target"] for record in records), diabetes["target"].sum() * 1000, rtol=1e-6)
    assert np.isclose(sum(record["bp"] for record in records), diabetes["bp"].round(2).sum(), rtol=1e-6)


def test_a_row_encoder_reads_written_numbers_only_in_their_columns():
    types = {"price": "float", "rate": "float"}
    encode = RowEncoder(["price", "rate"], types, frozenset(["", "NA"]), ["price", "rate"], {"price": US})
    assert encode(["$1,234.50", "0.5"])[1] == {"price": 1234.5, "rate": 0.5}
    with pytest.raises(cols.BadValue):
        encode(["1", "5%"])
    assert encode.first_bad(["1", "5%"]) == "rate"


def test_a_european_export_reads_its_grouped_numbers_and_prices(tmp_path, diabetes):
    """`;` between fields, decimal commas, thousands grouped by points, a price after its number (`1.234,50 €`)."""
    frame = diabetes.copy()
    frame["s1"] = [f"{value * 10:,.0f}".replace(",", ".") for value in frame["s1"]]  # 1.570: 1570
    frame["target"] = [f"{value * 1000:,.2f} €".replace(",", "#").replace(".", ",").replace("#", ".")
                       for value in frame["target"]]  # fmt: skip
    frame.to_csv(tmp_path / "eu.csv", index=False, sep=";", decimal=",")
    facts = csv_source.inspect_source(source_path=str(tmp_path / "eu.csv"), label="target",
                                      csv_format={"delimiter": ";", "decimal": ","})  # fmt: skip
    assert facts.types["s1"] == "int" and facts.types["target"] == "float" and facts.written == {"target": (".", "€")}
    summary, examples, _, _ = ingest(tmp_path, source_path=str(tmp_path / "eu.csv"), label="target", columns={},
                                     csv_format={"delimiter": ";", "decimal": ","})  # fmt: skip
    assert (summary["read"], summary["rejected"], summary["invalid"]) == (442, 0, 0)
    records = [record for split in read_records(examples).values() for record in split]
    assert np.isclose(sum(record["target"] for record in records), diabetes["target"].sum() * 1000, rtol=1e-6)
    assert sum(record["s1"] for record in records) == (diabetes["s1"] * 10).sum()
    assert np.isclose(sum(record["bmi"] for record in records), diabetes["bmi"].sum(), rtol=1e-6)


def test_a_french_export_reads_numbers_grouped_by_spaces(tmp_path, diabetes):
    """French spreadsheets group thousands by a (non-breaking) space: `151 000,00 €`, `1 570`."""
    frame = diabetes.copy()
    frame["s1"] = [f"{value * 10:,.0f}".replace(",", "\u00a0") for value in frame["s1"]]
    frame["target"] = [f"{value * 1000:,.2f} €".replace(",", "\u202f").replace(".", ",") for value in frame["target"]]
    frame.to_csv(tmp_path / "fr.csv", index=False, sep=";", decimal=",")
    fmt = {"delimiter": ";", "decimal": ","}
    facts = csv_source.inspect_source(source_path=str(tmp_path / "fr.csv"), label="target", csv_format=fmt)
    assert facts.types["s1"] == facts.types["target"] == "float" and facts.written == {
        "s1": ("\u00a0",), "target": ("\u202f", "€")
    }  # fmt: skip
    summary, examples, _, _ = ingest(
        tmp_path, source_path=str(tmp_path / "fr.csv"), label="target", columns={}, csv_format=fmt
    )
    assert (summary["read"], summary["rejected"]) == (442, 0)
    records = [record for split in read_records(examples).values() for record in split]
    assert np.isclose(sum(record["target"] for record in records), diabetes["target"].sum() * 1000, rtol=1e-6)
    assert sum(record["s1"] for record in records) == (diabetes["s1"] * 10).sum()


def test_kflow_validate_says_how_it_will_read_them(tmp_path, diabetes, capsys):
    frame = as_reported(diabetes)
    frame.insert(0, "Id", range(1, len(frame) + 1))
    frame.to_csv(tmp_path / "diabetes.csv", index=False)
    table = REPO / "pipeline" / "configs" / "table.yaml"
    assert main(["validate", str(table), "--set", f"data.source.path={tmp_path / 'diabetes.csv'}",
                 "--set", "data.label=target"]) == 0  # fmt: skip
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("data: ")]
    assert said == [
        "data: 'Id' numbers the rows (0 or 1, 2, 3, …): the records' key, not a feature",
        "data: 'bmi' holds numbers written with '%': read as the numbers",
        "data: 'bp' holds numbers written with '$': read as the numbers",
        "data: 'target' holds numbers written with '$', ',': read as the numbers",
    ]
