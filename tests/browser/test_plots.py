"""Every plot of the report, drawn from hard cases (a binary task's curves, 12 classes with long names, 20 slices,
a regression's scatter) and read in headless Chromium: no two labels overlap, no plotted point under a legend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kflow.components.datasets.formulas import pr_auc, precision_recall_curve, roc_auc, roc_curve
from kflow.components.evaluator.report import inline_svg
from kflow.components.util import plots
from tests.browser import layout


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> Path:
    """One page of every plot."""
    folder = tmp_path_factory.mktemp("plots")
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 400)
    scores = np.clip(labels * 0.35 + rng.normal(0.35, 0.2, 400), 0, 1)
    positives = labels == 1
    fpr, tpr, _ = roc_curve(positives, scores)
    precision, recall, _ = precision_recall_curve(positives, scores)
    classes = [f"class number {index} of the catalogue" for index in range(12)]
    matrix = rng.integers(0, 30, (12, 12)) + np.eye(12, dtype=int) * 60
    districts = "north south east west centre harbour hills valley coast airport campus old-town new-town".split()
    districts += "riverside forest lakes market docks heights fields".split()
    slices = {
        "district": {
            f"district={name}": {"rmse": float(rng.uniform(1, 9)), "example_count": int(rng.integers(5, 500))}
            for name in districts
        }
    }
    actual = rng.normal(50, 10, 300)
    figures = [
        plots.roc_and_pr_curves(fpr, tpr, roc_auc(positives, scores), recall, precision, pr_auc(positives, scores),
                                positives.mean(), folder),
        plots.score_histogram(scores, labels, 0.5, folder),
        plots.confusion_matrix(matrix, classes, folder),
        plots.class_bars(classes, list(rng.uniform(0.5, 1, 12)), list(rng.uniform(0.5, 1, 12)), folder),
        *plots.slice_bars(slices, "rmse", folder),
        plots.predicted_vs_actual(actual, actual + rng.normal(0, 3, 300), folder),
        *plots.training_curves([{"epoch": e, "loss": 1 / e, "val_loss": 1.2 / e, "accuracy": 1 - 1 / (e + 1),
                                 "val_accuracy": 1 - 1.3 / (e + 1)} for e in range(1, 21)], folder),
    ]  # fmt: skip
    body = "".join(
        f"<figure>{inline_svg((folder / figure['svg']).read_text(), f'f{index}-', figure['title'])}</figure>"
        for index, figure in enumerate(figures)
    )
    page = folder / "plots.html"
    page.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{body}</body></html>")
    return page


def test_no_two_labels_of_any_plot_overlap(drawn, page):
    page.open(drawn)
    assert page.evaluate("document.querySelectorAll('svg').length") == 7
    overlaps = layout.overlapping_labels(page)
    assert overlaps == [], overlaps[:5]


def test_no_legend_covers_a_plotted_point(drawn, page):
    page.open(drawn)
    covered = layout.points_under_legends(page)
    assert covered["legends"] >= 5 and covered["points"] > 1000
    assert covered["found"] == [], covered["found"][:5]


def test_the_measures_see_what_the_old_charts_did_wrong(tmp_path, page):
    """The checks above can fail: crowded upright labels (the old slice chart) overlap, and a legend in the
    plotting area (the old precision-recall curve's) covers points of the curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (bars, curve) = plt.subplots(1, 2, figsize=(8, 3))
    names = [f"a long slice name {index}" for index in range(15)]
    bars.bar(range(15), range(15))
    bars.set_xticks(range(15), names)
    xs = np.linspace(0, 1, 50)
    curve.plot(xs, xs, label="model (AUC 0.5)")
    curve.legend(loc="center")
    plots._mark_artists(fig)
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(tmp_path / "bad.svg")
    plt.close(fig)
    html = f"<!DOCTYPE html><html><body>{inline_svg((tmp_path / 'bad.svg').read_text(), 'bad-', 'bad')}</body></html>"
    (tmp_path / "bad.html").write_text(html)
    page.open(tmp_path / "bad.html")
    assert {name for pair in layout.overlapping_labels(page) for name in pair["labels"]} >= set(names[1:-1])
    assert layout.points_under_legends(page)["found"]
