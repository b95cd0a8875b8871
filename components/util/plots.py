"""The Evaluator's plots, drawn with matplotlib on its headless Agg backend.

Each function writes one figure into `folder` twice, as a PNG (for MLflow and image viewers) and as an
SVG whose text stays text (`svg.fonttype: none`), and returns `{"file", "svg", "title", "caption"}` for
the report, which embeds the SVG: the browser lays its labels out, so they stay sharp, searchable, and
measurable by tests (tests/browser/). Every plot carries its own title, axis labels and legend; legends
sit outside the plotting area, so they never hide a point; tick labels turn or the bars lie down when
there are many. The plotted artists carry ids `kflow-data-<n>`, the legends `kflow-legend-<n>`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

Figure = dict[str, str]
# Per-epoch history entries that are bookkeeping, not metrics.
_NOT_METRICS = {"epoch", "step", "seconds", "examples_per_second"}


def _pyplot() -> Any:
    """matplotlib's pyplot on the headless Agg backend (no display on servers and in containers), imported
    at the first plot: it takes half a second, and the metrics modules that import this one are read by
    every `kflow validate` and cached run too."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot

    return matplotlib.pyplot


def _save(fig: Any, folder: Path, file: str, title: str, caption: str) -> Figure:
    import matplotlib

    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    _mark_artists(fig)
    fig.tight_layout()
    # "tight": the legends outside the axes are part of the picture.
    fig.savefig(
        folder / file, dpi=100, bbox_inches="tight", metadata={"Software": f"matplotlib {matplotlib.__version__}"}
    )
    svg = Path(file).with_suffix(".svg").name
    # Text as <text> elements (not glyph paths); a fixed hash salt keeps the clip-path ids the same on every run.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "kflow"}):
        fig.savefig(folder / svg, bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return {"file": file, "svg": svg, "title": title, "caption": caption}


def _mark_artists(fig: Any) -> None:
    """Ids on what a reader must see: the plotted lines, markers, bars and images, and the legends."""
    from matplotlib.collections import Collection
    from matplotlib.image import AxesImage
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    data, legends = 0, 0
    for axis in fig.axes:
        for artist in [*axis.lines, *axis.patches, *axis.collections, *axis.images]:
            if artist.get_gid() is None and isinstance(artist, Line2D | Rectangle | Collection | AxesImage):
                data += 1
                artist.set_gid(f"kflow-data-{data}")
        if axis.get_legend() is not None:
            legends += 1
            axis.get_legend().set_gid(f"kflow-legend-{legends}")
    for legend in fig.legends:
        legends += 1
        legend.set_gid(f"kflow-legend-{legends}")


def _outside_legend(axis: Any, **options: Any) -> Any:
    """The axis's legend to the right of its plotting area, where it covers nothing."""
    return axis.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **options)


def _tick_labels(axis: Any, labels: Sequence[str], *, width_inches: float) -> None:
    """x tick labels that fit side by side, else turned 45 degrees (their ends under their ticks)."""
    room = width_inches * 72 / max(len(labels), 1)  # points a label may take
    longest = max((len(str(label)) for label in labels), default=0) * 6.5  # ~6.5 pt a character at 10 pt
    if longest <= room * 0.9:
        axis.set_xticks(range(len(labels)), labels)
    else:
        axis.set_xticks(range(len(labels)), labels, rotation=45, ha="right", rotation_mode="anchor")


def training_curves(per_epoch: Sequence[Mapping[str, Any]], folder: Path) -> list[Figure]:
    """One panel per metric, its train and validation (`val_`) series over the epochs."""
    plt = _pyplot()
    from matplotlib import ticker

    names = sorted(
        {
            key.removeprefix("val_")
            for epoch in per_epoch
            for key, value in epoch.items()
            if isinstance(value, int | float) and key not in _NOT_METRICS
        },
        key=lambda name: (name != "loss", name),
    )
    if not names:
        return []
    columns = min(len(names), 3)
    rows = -(-len(names) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.2 * rows), squeeze=False)
    for axis, name in zip(axes.flat, names, strict=False):
        for key, label, style in ((name, "train", "-o"), (f"val_{name}", "validation", "--s")):
            points = [
                (epoch.get("epoch", index + 1), epoch[key]) for index, epoch in enumerate(per_epoch) if key in epoch
            ]
            if points:
                axis.plot(*zip(*points, strict=True), style, markersize=3, label=label)
        axis.set(title=name, xlabel="epoch", ylabel=name)
        axis.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        axis.grid(alpha=0.3)
    for axis in list(axes.flat)[len(names) :]:
        axis.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2)  # below the panels
    caption = "Each metric on the train split (solid) and the eval split (dashed), per epoch."
    return [_save(fig, folder, "training_curves.png", "Training curves", caption)]


def confusion_matrix(matrix: np.ndarray, labels: Sequence[str], folder: Path) -> Figure:
    """Counts in every cell; each row's label carries that class's recall."""
    plt = _pyplot()
    matrix = np.asarray(matrix)
    totals = matrix.sum(axis=1)
    recall = np.divide(np.diag(matrix), totals, out=np.zeros(len(totals)), where=totals > 0)
    size = max(4.0, 0.55 * len(labels) + 2)
    fig, axis = plt.subplots(figsize=(size + 1, size))
    image = axis.imshow(matrix, cmap="Blues")
    fig.colorbar(image, ax=axis, label="examples")
    _tick_labels(axis, labels, width_inches=size - 1)
    axis.set_yticks(range(len(labels)), [f"{label} (recall {r:.3f})" for label, r in zip(labels, recall, strict=True)])
    axis.set(xlabel="predicted label", ylabel="true label", title="Confusion matrix")
    bright = matrix.max() / 2 if matrix.size else 0
    for (row, column), count in np.ndenumerate(matrix):
        axis.text(column, row, str(count), ha="center", va="center", fontsize=8,
                  color="white" if count > bright else "black")  # fmt: skip
    caption = "Rows are the true labels, columns the predictions; the diagonal holds the correct ones."
    return _save(fig, folder, "confusion_matrix.png", "Confusion matrix", caption)


def class_bars(labels: Sequence[str], precision: Sequence[float], recall: Sequence[float], folder: Path) -> Figure:
    """Precision and recall of each class; an undefined one (a class never predicted) has no bar."""
    plt = _pyplot()
    precision, recall = ([np.nan if v is None else v for v in values] for values in (precision, recall))
    positions = np.arange(len(labels))
    width = max(5.0, 0.6 * len(labels) + 2)
    fig, axis = plt.subplots(figsize=(width, 3.5))
    axis.bar(positions - 0.2, precision, width=0.4, label="precision")
    axis.bar(positions + 0.2, recall, width=0.4, label="recall")
    low = float(np.nanmin([*precision, *recall, 1.0]))
    axis.set(xlabel="class", ylabel="score", ylim=(max(0.0, low - 0.05), 1.0))
    _tick_labels(axis, labels, width_inches=width - 1.5)
    axis.set_title("Per-class precision and recall")
    _outside_legend(axis)  # Beside the plot: over it, it would hide bars.
    axis.grid(axis="y", alpha=0.3)
    caption = "Precision and recall of each class; the y axis starts just below the lowest bar."
    return _save(fig, folder, "per_class.png", "Per-class precision and recall", caption)


def roc_and_pr_curves(fpr, tpr, roc_auc: float, recall, precision, pr_auc: float, base_rate: float, folder: Path):
    plt = _pyplot()
    fig, (roc, pr) = plt.subplots(1, 2, figsize=(9, 4.2))
    roc.plot(fpr, tpr, label=f"model (AUC {roc_auc:.3f})")
    roc.plot([0, 1], [0, 1], ":", color="grey", label="chance (AUC 0.5)")
    roc.set(xlabel="false positive rate", ylabel="true positive rate", title="ROC curve")
    pr.plot(recall, precision, label=f"model (AUC {pr_auc:.3f})")
    pr.axhline(base_rate, linestyle=":", color="grey", label=f"chance (positive rate {base_rate:.3f})")
    pr.set(xlabel="recall", ylabel="precision", title="Precision-recall curve", ylim=(0, 1.02))
    for axis in (roc, pr):
        axis.grid(alpha=0.3)
        # Under the axis (a curve may pass through any corner of it), clear of the axis label.
        axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), borderaxespad=0.0)
    caption = "Left: true against false positive rate over every threshold; right: precision against recall."
    return _save(fig, folder, "roc_pr_curves.png", "ROC and precision-recall curves", caption)


def predicted_vs_actual(actual: np.ndarray, predicted: np.ndarray, folder: Path) -> Figure:
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(5, 4.5))
    axis.scatter(actual, predicted, s=8, alpha=0.5)
    low, high = float(min(actual.min(), predicted.min())), float(max(actual.max(), predicted.max()))
    axis.plot([low, high], [low, high], ":", color="grey", label="perfect prediction")
    axis.set(xlabel="actual", ylabel="predicted", title="Predicted against actual")
    axis.grid(alpha=0.3)
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), borderaxespad=0.0)
    caption = "One point per example; points on the dotted line are predicted exactly."
    return _save(fig, folder, "predicted_vs_actual.png", "Predicted against actual", caption)


def score_histogram(scores: np.ndarray, labels: np.ndarray, threshold: float | None, folder: Path) -> Figure:
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(6, 3.5))
    bins = np.linspace(0, 1, 26)
    for value, name in ((0, "negative"), (1, "positive")):
        axis.hist(
            scores[labels == value], bins=bins, alpha=0.6, density=True, label=f"{name} ({(labels == value).sum()})"
        )
    if threshold is not None:
        axis.axvline(threshold, color="black", linestyle="--", label=f"chosen threshold {threshold:.3f}")
    axis.set(xlabel="predicted probability of the positive class", ylabel="density", title="Scores by true class")
    _outside_legend(axis)
    caption = "How the model's scores spread for each true class (each histogram normalised to area 1)."
    return _save(fig, folder, "score_histogram.png", "Score histogram", caption)


# Past this many slices, or with long names, the bars lie down: their names then read across, one a row.
_UPRIGHT_SLICES = 6
_UPRIGHT_NAME = 12


def slice_bars(slices: Mapping[str, Mapping[str, Mapping[str, Any]]], metric: str, folder: Path) -> list[Figure]:
    """One bar chart per slice feature: `metric` per slice value, with each slice's example count, the slices in
    the order given (metrics.json's: their natural order)."""
    plt = _pyplot()
    figures = []
    for name, values in slices.items():
        keys = [key for key, numbers in values.items() if isinstance(numbers.get(metric), int | float)]
        if not keys:
            continue
        heights = [values[key][metric] for key in keys]
        counts = [f"n={values[key].get('example_count', '?')}" for key in keys]
        shown = [_shorter(key, name) for key in keys]
        upright = len(keys) <= _UPRIGHT_SLICES and max(map(len, shown)) <= _UPRIGHT_NAME
        top = max(heights) * 1.18 or 1
        if upright:
            fig, axis = plt.subplots(figsize=(max(5.0, 0.9 * len(keys) + 2), 3.5))
            bars = axis.bar(range(len(keys)), heights)
            axis.set_xticks(range(len(keys)), shown)
            axis.set(xlabel=name, ylabel=metric, ylim=(min(0, min(heights)), top))
            axis.grid(axis="y", alpha=0.3)
        else:
            fig, axis = plt.subplots(figsize=(7.0, 0.32 * len(keys) + 1.4))
            bars = axis.barh(range(len(keys)), heights)
            axis.set_yticks(range(len(keys)), shown)
            axis.invert_yaxis()  # the first slice on top, as in the table
            axis.set(ylabel=name, xlabel=metric, xlim=(min(0, min(heights)), top * 1.08))
            axis.grid(axis="x", alpha=0.3)
        axis.bar_label(bars, labels=counts, fontsize=8, padding=2)
        axis.set_title(f"{metric} by {name}")
        caption = f"{metric} on each slice by {name}; n is the slice's example count."
        file = "slices_" + "".join(char if char.isalnum() or char in "_-." else "_" for char in name) + ".png"
        figures.append(_save(fig, folder, file, f"{metric} by {name}", caption))
    return figures


def _shorter(key: str, name: str) -> str:
    """A slice's key without its feature's name, which the axis names once: "age [30,45)" -> "[30,45)"."""
    for prefix in (f"{name}=", f"{name} "):
        if key.startswith(prefix) and len(key) > len(prefix):
            return key[len(prefix) :]
    return key


def against_baseline(values: Mapping[str, float], metric: str, folder: Path, file: str) -> Figure:
    """A metric of the model beside reference values (e.g. the MLM against the most frequent token)."""
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(5.5, 3.5))
    bars = axis.bar(list(values), list(values.values()), color=["tab:blue", *["tab:grey"] * (len(values) - 1)])
    axis.bar_label(bars, fmt="%.4f")
    axis.set(ylabel=metric, title=f"{metric}: model and baseline", ylim=(0, max(values.values()) * 1.2 or 1))
    caption = f"The model's {metric} beside what a trivial predictor scores on the same examples."
    return _save(fig, folder, file, f"{metric} against a baseline", caption)
