"""The evaluation report as a reader sees it in headless Chromium: measured from the page's own layout.

Two real runs: iris, sliced by its label and by petal_length in buckets (vertical bars), and a regression table
sliced by 15 regions with long names (horizontal bars) and by size in buckets.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from tests.browser import layout
from tests.browser.conftest import PETAL_BOUNDARIES, REGIONS, SIZE_BOUNDARIES, run_artifacts


def report_of(run_dir: Path) -> Path:
    return run_dir / "evaluate" / "evaluation" / "report.html"


def buckets(name: str, boundaries: list[float]) -> list[str]:
    """The natural order of a bucketed feature's slices, from its boundaries."""
    edges = [f"{value:g}" for value in boundaries]
    return [
        f"{name} <{edges[0]}",
        *[f"{name} [{a},{b})" for a, b in zip(edges, edges[1:], strict=False)],
        f"{name} >={edges[-1]}",
    ]


def slice_rows(page) -> dict[str, list[str]]:
    """{slice feature: its slice values, top to bottom}, from the report's slice table."""
    found: dict[str, list[str]] = {}
    for name, value, *_ in layout.table_rows(page, "table.slices"):
        found.setdefault(name, []).append(value)
    return found


def assert_readable(page) -> None:
    overlaps = layout.overlapping_labels(page)
    assert overlaps == [], f"chart labels overlap: {overlaps[:5]}"
    covered = layout.points_under_legends(page)
    assert covered["legends"] > 0 and covered["points"] > 0
    assert covered["found"] == [], f"legends cover plotted points: {covered['found'][:5]}"


def assert_links_resolve(page, run_dir: Path) -> list[Path]:
    """Every link of the page names an existing file (or folder) of the run's artifacts; returns them."""
    artifacts = run_artifacts(run_dir)
    targets = []
    for link in layout.links(page):
        if link["target"] is not None:  # a link within the page
            assert link["target"], f"{link['href']}: no such anchor on the page"
            continue
        url = urlparse(link["url"])
        assert url.scheme == "file", f"{link['href']}: not a file of the run"
        target = Path(unquote(url.path))
        assert target.exists(), f"{link['text']}: {link['href']} resolves to {target}, which does not exist"
        assert any(target.is_relative_to(folder) for folder in artifacts), f"{target} is no artifact of the run"
        targets.append(target)
    return targets


def test_iris_slices_appear_in_their_natural_order(iris_run, page):
    page.open(report_of(iris_run))
    metrics = json.loads((report_of(iris_run).parent / "metrics.json").read_text())
    classes = metrics["confusion_matrix"]["categories"]
    rows = slice_rows(page)
    assert rows["label"] == [f"label={name}" for name in classes if f"label={name}" in rows["label"]]
    assert len(rows["label"]) == len(classes)
    expected = [key for key in buckets("petal_length", PETAL_BOUNDARIES) if key in rows["petal_length"]]
    assert rows["petal_length"] == expected and len(expected) >= 2
    # The charts draw them in the same order, left to right.
    assert layout.tick_labels(page, "accuracy by label", "x") == classes
    shown = [key.removeprefix("petal_length ") for key in expected]
    assert layout.tick_labels(page, "accuracy by petal_length", "x") == shown


def test_iris_report_labels_never_overlap_and_legends_cover_nothing(iris_run, page):
    page.open(report_of(iris_run))
    assert_readable(page)


def test_iris_report_says_what_the_model_was_trained_with(iris_run, page):
    page.open(report_of(iris_run))
    text = page.evaluate("document.body.innerText")
    trained = text[text.index("Trained with") : text.index("Per class")]
    assert "tabular_mlp" in trained and "learning rate\t0.01" in trained and "epochs\t5" in trained
    assert "Not tuned" in trained
    stats = json.loads(next(iris_run.glob("ingest/examples/stats.json")).read_text())
    for split, count in stats["accepted"].items():
        assert f"rows in {split}\t{count}" in trained
    assert "iris.csv" in trained


def test_iris_links_resolve_to_files_of_the_run(iris_run, page):
    report = report_of(iris_run)
    page.open(report)
    targets = assert_links_resolve(page, iris_run)
    names = {target.name for target in targets}
    assert {"statistics.html", "metrics.json", "rejects.jsonl", "logs"} <= names
    page.open(next(target for target in targets if target.name == "statistics.html"))
    assert assert_links_resolve(page, iris_run) == [report]


@pytest.fixture(scope="module")
def homes_report(homes_run, page):
    page.open(report_of(homes_run), width=1280)
    return homes_run


@pytest.mark.slow  # A regression run (~17 s); make test renders and reads the iris report, above.
def test_fifteen_slices_lie_down_in_order_with_readable_labels(homes_report, page):
    rows = slice_rows(page)
    assert rows["region"] == [f"region={name}" for name in sorted(REGIONS)]
    # Fifteen long names: horizontal bars, one name a row, top to bottom in the table's order.
    assert layout.tick_labels(page, "rmse by region", "y") == sorted(REGIONS)
    expected = [key for key in buckets("size", SIZE_BOUNDARIES) if key in rows["size"]]
    assert rows["size"] == expected and len(expected) == len(SIZE_BOUNDARIES) + 1
    assert_readable(page)


@pytest.mark.slow
def test_the_regression_report_links_resolve(homes_report, page):
    assert "statistics.html" in {target.name for target in assert_links_resolve(page, homes_report)}
