"""The data's statistics page: per feature, its splits side by side, as TFDV's Facets Overview shows them.

For each feature, one row: per split a chart (a histogram of a number, the top values with their counts of
a categorical or text feature) and the figures under it (missing fraction, min, max, mean; distinct values
and length of strings); an anomaly the ExampleValidator found is marked on the feature and on the split
where it is. With the previous span's statistics (the drift view), each feature's row ends with that span's
chart and figures and the drift distance the ExampleValidator measured. A static page, no server, no network:
the charts are inline SVG, their text laid out by the browser (tests/browser/ measure it).

The charts are written here rather than by matplotlib: a wide table has hundreds of them (a feature times a
split), matplotlib takes about 30 ms a figure, and each is a few rectangles and labels. They read the
statistics StatisticsGen computed (components/statistics_gen/statistics.py): the histogram of a number is
drawn from its 10-bucket quantiles histogram, each quantile's examples spread evenly over its range.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from tensorflow_metadata.proto.v0 import statistics_pb2

from kflow.components.util.statistics_proto import feature_stats

HISTOGRAM_BINS = 10
TOP_VALUES = 8
# A string feature whose values average more characters than this, or are nearly all distinct, is text.
TEXT_LENGTH = 30
_WIDTH, _HEIGHT = 240, 120
_STYLE = """
body{font-family:system-ui,sans-serif;margin:1em;padding:0 1em;color:#222}
.feature{border-top:1px solid #ccc;padding:.4em 0}
.feature h2{font-size:1.1em;margin:.3em 0} .kind{color:#666;font-weight:normal;font-size:.9em}
.splits{display:flex;flex-wrap:nowrap;gap:1em;overflow-x:auto}
.split{flex:0 0 auto;padding:.3em;border:1px solid transparent;border-radius:4px}
.split h3{font-size:.95em;margin:0 0 .2em 0}
.split.anomaly{border-color:#c62828;background:#fdf3f3} .split.previous{border-left:2px dashed #999}
.badge{background:#c62828;color:white;border-radius:3px;padding:0 .4em;font-size:.8em;margin-left:.5em}
.warning{background:#b26a00}
table{border-collapse:collapse;font-size:.85em} td{padding:1px 6px} td:last-child{text-align:right}
.note{color:#c62828;font-size:.85em;max-width:240px} .muted{color:#666}
svg text{font:10px sans-serif} .bar{fill:#4c78a8} .axis{stroke:#999}
"""


def statistics_page(
    splits: Mapping[str, statistics_pb2.DatasetFeatureStatistics],
    *,
    anomalies: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    title: str = "Feature statistics",
    links: Mapping[str, str] | None = None,
    previous: Mapping[str, statistics_pb2.DatasetFeatureStatistics] | None = None,
    drift: Mapping[str, Any] | None = None,
) -> str:
    """The page of `splits` ({split: its statistics}); `anomalies` as anomalies.json's `splits`
    ({split: [{feature, kind, description, severity}]}); `links` {label: relative href} shown on top;
    `previous` the previous span's statistics ({split: …}) and `drift` anomalies.json's `drift` verdict
    ({"spans": [newest, previous], "split", "features": [{feature, comparator, distance, threshold, drifted}]})."""
    e = html.escape
    order = sorted(splits, key=lambda split: (["train", "eval", "test"] + [split]).index(split))
    features: dict[str, dict[str, Any]] = {}
    for split in order:
        for name, feature in feature_stats(splits[split]).items():
            features.setdefault(name, {})[split] = feature
    found = _by_feature(anomalies or {})
    rows = ", ".join(f"{e(split)} {splits[split].num_examples:,}" for split in order)
    parts = [f"<h1>{e(title)}</h1>", f"<p>Rows: {rows}. {len(features)} features.</p>"]
    if anomalies is None:
        parts.append("<p class=muted>Anomalies: not checked here (the ExampleValidator checks them).</p>")
    else:
        count = sum(len(items) for items in found.values())
        listed = "; ".join(f"<a href='#{_anchor(name)}'>{e(name)}</a>" for name in found)
        parts.append(f"<p>Anomalies: {count}{': ' + listed if listed else ''}</p>")
    if links:
        parts.append("<p>" + " · ".join(f"<a href='{e(href)}'>{e(label)}</a>" for label, href in links.items()))
    beside = _beside(previous, drift)
    if beside:
        parts.append(f"<p>Beside each feature: {html.escape(beside['label'])} (the drift view).</p>")
    for name, by_split in features.items():
        parts.append(_feature(name, by_split, order, splits, found.get(name, []), beside))
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{e(title)}</title><style>{_STYLE}</style>"
        "</head><body>\n" + "\n".join(parts) + "\n</body></html>\n"
    )


def _beside(previous: Mapping[str, Any] | None, drift: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The previous span's split to show beside each feature, its label and the drift distances; None without one."""
    if not previous:
        return None
    drift = drift or {}
    split = (
        drift.get("split")
        if drift.get("split") in previous
        else ("train" if "train" in previous else next(iter(previous)))
    )
    spans = drift.get("spans") or []
    label = f"{split}, span {spans[1]}" if len(spans) > 1 else f"{split}, previous"
    distances = {entry["feature"]: entry for entry in drift.get("features") or [] if "feature" in entry}
    return {"split": split, "label": label, "features": feature_stats(previous[split]),
            "total": previous[split].num_examples, "distances": distances}  # fmt: skip


def _feature(
    name: str,
    by_split: Mapping[str, Any],
    order: Sequence[str],
    splits: Mapping[str, Any],
    found,
    beside: Mapping[str, Any] | None = None,
) -> str:
    e = html.escape
    kind = _kind(by_split.values())
    badges = "".join(
        f"<span class='badge{'' if item.get('severity', 'error') == 'error' else ' warning'}'>{e(item['kind'])}"
        f" ({e(item['split'])})</span>"
        for item in found
    )
    cells = []
    for split in order:
        feature = by_split.get(split)
        notes = [item for item in found if item["split"] == split]
        total = splits[split].num_examples
        body = "<p class=muted>absent</p>" if feature is None else _chart(feature, kind) + _figures(feature, total)
        body += "".join(f"<p class=note>{e(item['kind'])}: {e(item.get('description', ''))}</p>" for item in notes)
        cells.append(
            f"<div class='split{' anomaly' if notes else ''}' data-split='{e(split)}'><h3>{e(split)}</h3>{body}</div>"
        )
    if beside is not None:
        cells.append(_previous_cell(name, kind, beside))
    return (
        f"<section class='feature{' anomaly' if found else ''}' id='{_anchor(name)}' data-feature='{e(name)}'>"
        f"<h2>{e(name)} <span class=kind>{kind}</span>{badges}</h2><div class=splits>{''.join(cells)}</div></section>"
    )


def _previous_cell(name: str, kind: str, beside: Mapping[str, Any]) -> str:
    """The previous span's chart and figures of one feature, and the distance from it."""
    e = html.escape
    feature = beside["features"].get(name)
    body = (
        "<p class=muted>absent</p>" if feature is None else _chart(feature, kind) + _figures(feature, beside["total"])
    )
    entry = beside["distances"].get(name)
    drifted = bool(entry and entry.get("drifted"))
    if entry:
        comparator = str(entry.get("comparator", "distance")).replace("_", "-")
        verdict = "drifted" if drifted else "within"
        body += (
            f"<p class='{'note' if drifted else 'muted'} drift'>{e(comparator)} {float(entry['distance']):.3f}: "
            f"{verdict} {float(entry['threshold']):g}</p>"
        )
    return (
        f"<div class='split previous{' anomaly' if drifted else ''}' data-split='{e(beside['label'])}'>"
        f"<h3>{e(beside['label'])}</h3>{body}</div>"
    )


def _kind(features: Any) -> str:
    """numeric, categorical or text (a string feature of long or nearly all distinct values)."""
    features = list(features)
    if not any(feature.HasField("string_stats") for feature in features):
        return "numeric"
    for feature in features:
        stats = feature.string_stats
        present = stats.common_stats.num_non_missing
        if stats.avg_length > TEXT_LENGTH or (present >= 20 and stats.unique > 0.9 * present):
            return "text"
    return "categorical"


def _figures(feature: Any, total: int) -> str:
    """The figures under a chart: missing fraction, then min/max/mean or distinct values and length."""
    if feature.HasField("string_stats"):
        stats = feature.string_stats
        common = stats.common_stats
        rows = [("distinct", f"{stats.unique:,}"), ("mean length", _number(stats.avg_length))]
    else:
        stats = feature.num_stats
        common = stats.common_stats
        rows = [
            ("min", _number(stats.min)),
            ("max", _number(stats.max)),
            ("mean", _number(stats.mean)),
            ("std dev", _number(stats.std_dev)),
            ("zeros", f"{stats.num_zeros / max(common.num_non_missing, 1):.1%}"),
        ]
    missing = common.num_missing / total if total else 0.0
    rows.insert(0, ("missing", f"{missing:.1%} ({common.num_missing:,})"))
    rows.insert(0, ("present", f"{common.num_non_missing:,}"))
    return "<table>" + "".join(f"<tr><td>{label}</td><td>{value}</td></tr>" for label, value in rows) + "</table>"


def _chart(feature: Any, kind: str) -> str:
    if feature.HasField("string_stats"):
        values = [(value.value, int(value.frequency)) for value in feature.string_stats.top_values[:TOP_VALUES]]
        return _top_values(values, feature.string_stats.unique)
    stats = feature.num_stats
    quantiles = next((h for h in stats.histograms if h.type == statistics_pb2.Histogram.QUANTILES), None)
    if quantiles is None or not quantiles.buckets:
        return "<p class=muted>no values</p>"
    return _histogram(histogram_from_quantiles(quantiles.buckets, stats.min, stats.max), stats.min, stats.max)


def histogram_from_quantiles(
    buckets: Sequence[Any], low: float, high: float, bins: int = HISTOGRAM_BINS
) -> list[float]:
    """Equal-width bins over [low, high], filled from equal-count quantile buckets: a bucket's examples spread
    evenly over its range (one of zero width: all in the bin that holds its value)."""
    counts = [0.0] * bins
    width = (high - low) / bins
    if width <= 0:
        counts[0] = sum(bucket.sample_count for bucket in buckets)
        return counts
    for bucket in buckets:
        start, end, count = bucket.low_value, bucket.high_value, bucket.sample_count
        if end <= start:
            counts[min(int((start - low) / width), bins - 1)] += count
            continue
        for index in range(bins):
            left, right = low + index * width, low + (index + 1) * width
            overlap = min(end, right) - max(start, left)
            if overlap > 0:
                counts[index] += count * overlap / (end - start)
    return counts


def _histogram(counts: Sequence[float], low: float, high: float) -> str:
    """Bars over the range, the range's ends under them; each bar's range and count in its tooltip."""
    plot_height, top = _HEIGHT - 24, max(max(counts), 1e-9)
    width = _WIDTH / len(counts)
    step = (high - low) / len(counts)
    bars = []
    for index, count in enumerate(counts):
        height = plot_height * count / top
        tip = f"[{_number(low + index * step)}, {_number(low + (index + 1) * step)}): {count:,.0f}"
        bars.append(
            f"<rect class=bar x='{index * width + 1:.1f}' y='{4 + plot_height - height:.1f}' "
            f"width='{width - 2:.1f}' height='{height:.1f}'><title>{html.escape(tip)}</title></rect>"
        )
    axis = f"<line class=axis x1='0' x2='{_WIDTH}' y1='{4 + plot_height}' y2='{4 + plot_height}'/>"
    labels = (
        f"<text x='0' y='{_HEIGHT - 6}' text-anchor='start'>{_number(low)}</text>"
        f"<text x='{_WIDTH}' y='{_HEIGHT - 6}' text-anchor='end'>{_number(high)}</text>"
    )
    return _svg("".join(bars) + axis + labels, _HEIGHT, "histogram")


def _top_values(values: Sequence[tuple[str, int]], unique: int) -> str:
    """One row a value: its name (shortened), a bar, its count."""
    if not values:
        return "<p class=muted>no values</p>"
    row, label_width, bar_width = 14, 104, 86
    top = max(count for _, count in values)
    parts = []
    for index, (value, count) in enumerate(values):
        y = index * row + 2
        length = bar_width * count / top
        shown = value if len(value) <= 16 else value[:15] + "…"
        parts.append(
            f"<text x='0' y='{y + 10}'><title>{html.escape(value)}</title>{html.escape(shown)}</text>"
            f"<rect class=bar x='{label_width}' y='{y + 1}' width='{length:.1f}' height='{row - 3}'/>"
            f"<text x='{label_width + length + 3:.1f}' y='{y + 10}'>{count:,}</text>"
        )
    height = len(values) * row + 4
    if unique > len(values):
        parts.append(f"<text x='0' y='{height + 10}' class=more>and {unique - len(values):,} more values</text>")
        height += 14
    return _svg("".join(parts), height, "top values")


def _svg(body: str, height: int, label: str) -> str:
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' role='img' aria-label='{label}' width='{_WIDTH}' height='{height}' "
        f"viewBox='0 0 {_WIDTH} {height}'>{body}</svg>"
    )


def _by_feature(anomalies: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for split, items in anomalies.items():
        for item in items:
            found.setdefault(str(item.get("feature")), []).append({**item, "split": split})
    return found


def _anchor(name: str) -> str:
    return "feature-" + "".join(char if char.isalnum() or char in "-_" else "_" for char in name)


def _number(value: float) -> str:
    if value != value:  # NaN
        return "–"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"
