"""The data's statistics page as a reader sees it in headless Chromium: a CSV of numeric, categorical and text
columns (tests/browser/conftest.py: write_homes), every feature's splits side by side, anomalies where they are."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from tests.browser import layout
from tests.browser.test_report import assert_links_resolve

_FEATURES = """
[...document.querySelectorAll('section.feature')].map(section => ({
  name: section.dataset.feature,
  kind: section.querySelector('.kind').textContent,
  badges: [...section.querySelectorAll('.badge')].map(b => b.textContent),
  splits: [...section.querySelectorAll('.split')].map(cell => ({
    split: cell.dataset.split,
    top: cell.getBoundingClientRect().top,
    left: cell.getBoundingClientRect().left,
    right: cell.getBoundingClientRect().right,
    chart: cell.querySelector('svg') ? cell.querySelector('svg').getAttribute('aria-label') : null,
    anomaly: cell.classList.contains('anomaly'),
    notes: [...cell.querySelectorAll('.note')].map(n => n.textContent),
    figures: Object.fromEntries([...cell.querySelectorAll('tr')]
      .map(r => [r.cells[0].textContent, r.cells[1].textContent])),
  })),
}))
"""


@pytest.fixture(scope="module")
def features(homes_run, page):
    page.open(homes_run / "evaluate" / "evaluation" / "statistics.html", width=1280)
    return {feature["name"]: feature for feature in page.evaluate(_FEATURES)}


def test_each_feature_shows_its_splits_side_by_side(features):
    assert set(features) == {"size", "rooms", "region", "channel", "note", "price"}
    for name, feature in features.items():
        cells = feature["splits"]
        assert [cell["split"] for cell in cells] == ["train", "eval", "test"], name
        assert len({round(cell["top"]) for cell in cells}) == 1, f"{name}: its splits are not on one row"
        assert all(a["right"] <= b["left"] for a, b in zip(cells, cells[1:], strict=False)), f"{name}: splits overlap"


def test_numbers_get_histograms_and_strings_their_top_values(features):
    kinds = {name: feature["kind"] for name, feature in features.items()}
    assert kinds == {"size": "numeric", "rooms": "numeric", "price": "numeric", "region": "categorical",
                     "channel": "categorical", "note": "text"}  # fmt: skip
    for name, feature in features.items():
        expected = "histogram" if kinds[name] == "numeric" else "top values"
        assert [cell["chart"] for cell in feature["splits"]] == [expected] * 3, name
        for cell in feature["splits"]:
            if kinds[name] == "numeric":
                assert {"min", "max", "mean", "missing"} <= set(cell["figures"]), name
                assert float(cell["figures"]["min"]) <= float(cell["figures"]["mean"]) <= float(cell["figures"]["max"])
            else:
                assert {"distinct", "missing"} <= set(cell["figures"]), name


def test_the_missing_fraction_is_the_data_s(features, homes_run):
    record = json.loads((homes_run / "run.json").read_text())
    source = Path(record["components"]["ingest"]["parameters"]["source_path"])
    with source.open() as file:
        rows = list(csv.DictReader(file))
    blank = sum(row["rooms"] == "" for row in rows)
    assert blank > 0
    # "2.0% (12)": the fraction of the split's rows, and their count.
    counts = [int(cell["figures"]["missing"].split("(")[1].rstrip(")")) for cell in features["rooms"]["splits"]]
    assert sum(counts) == blank
    assert all(cell["figures"]["missing"] == "0.0% (0)" for cell in features["size"]["splits"])


def test_anomalies_are_marked_where_they_are(features, homes_run):
    found = json.loads((homes_run / "validate" / "anomalies" / "anomalies.json").read_text())["splits"]
    expected = {(item["feature"], split) for split, items in found.items() for item in items}
    assert expected, "the table's rare channel values make anomalies in eval or test"
    marked = {
        (name, cell["split"]) for name, feature in features.items() for cell in feature["splits"] if cell["anomaly"]
    }
    assert marked == expected
    for feature, split in expected:
        kinds = {item["kind"] for item in found[split] if item["feature"] == feature}
        cell = next(cell for cell in features[feature]["splits"] if cell["split"] == split)
        assert {note.split(":")[0] for note in cell["notes"]} == kinds
        assert any(badge.endswith(f"({split})") for badge in features[feature]["badges"])


def test_the_statistics_page_is_readable_and_links_back(homes_run, features, page):
    overlaps = layout.overlapping_labels(page)
    assert overlaps == [], overlaps[:5]
    targets = assert_links_resolve(page, homes_run)
    assert [target.name for target in targets] == ["report.html"]


def split_statistics(rows: list[dict], split: str):
    """A split's statistics as StatisticsGen computes them, from rows of tf.train.Example features."""
    from kflow.components.statistics_gen.statistics import SplitAccumulator
    from kflow.components.util.example_proto import serialize_example

    accumulator = SplitAccumulator()
    for row in rows:
        accumulator.add(serialize_example(row))
    return accumulator.to_proto(split)


def test_the_previous_span_stands_beside_each_feature_with_its_drift(tmp_path, page):
    from kflow.components.util.statistics_page import statistics_page

    rng = np.random.default_rng(1)
    span = lambda shift, colours: [  # noqa: E731
        {"age": float(rng.normal(40 + shift, 8)), "colour": str(rng.choice(colours))} for _ in range(300)
    ]
    newest = {"train": split_statistics(span(15, ["red", "blue", "green"]), "train")}
    previous = {"train": split_statistics(span(0, ["red", "blue"]), "train")}
    drift = {"spans": ["3", "2"], "split": "train", "features": [
        {"feature": "age", "comparator": "jensen_shannon", "distance": 0.41, "threshold": 0.1, "drifted": True},
        {"feature": "colour", "comparator": "l_infinity", "distance": 0.05, "threshold": 0.25, "drifted": False},
    ]}  # fmt: skip
    (tmp_path / "page.html").write_text(statistics_page(newest, anomalies={}, previous=previous, drift=drift))
    page.open(tmp_path / "page.html")
    features = {feature["name"]: feature for feature in page.evaluate(_FEATURES)}
    for name, drifted in (("age", True), ("colour", False)):
        cells = features[name]["splits"]
        assert [cell["split"] for cell in cells] == ["train", "train, span 2"]
        assert len({round(cell["top"]) for cell in cells}) == 1 and cells[0]["right"] <= cells[1]["left"]
        assert cells[1]["anomaly"] is drifted and cells[1]["chart"] == cells[0]["chart"]
    text = page.evaluate("document.body.innerText")
    assert "jensen-shannon 0.410: drifted 0.1" in text and "l-infinity 0.050: within 0.25" in text
    assert features["age"]["splits"][1]["figures"]["mean"] != features["age"]["splits"][0]["figures"]["mean"]
    assert layout.overlapping_labels(page) == []
