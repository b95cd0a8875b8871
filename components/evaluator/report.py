"""report.html: a static one-page summary of an evaluation, linking the PNG plots next to it."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from kflow.components.evaluator.gate import describe
from kflow.components.util import plots


def training_curves(history: dict[str, Any], folder: Path) -> list[dict[str, str]]:
    """Plots the per-epoch losses and the other per-epoch metrics of the Trainer's history.json."""
    epochs = history.get("per_epoch") or []
    names = sorted({key for epoch in epochs for key, value in epoch.items() if isinstance(value, (int, float))})
    names = [name for name in names if name not in ("epoch", "seconds") and not name.endswith("seconds")]
    written = []
    for group, file, keep in (
        ("loss", "training_loss.png", lambda name: "loss" in name),
        ("metrics", "training_metrics.png", lambda name: "loss" not in name and "per_second" not in name),
    ):
        chosen = [name for name in names if keep(name)][: len(plots.COLOURS)]
        series = [
            ([i + 1 for i, e in enumerate(epochs) if name in e], [e[name] for e in epochs if name in e])
            for name in chosen
        ]
        series = [s for s in series if s[0]]
        if not series:
            continue
        plots.line_plot(series, folder / file)
        legend = ", ".join(
            f"{name} ({colour})" for name, colour in zip(chosen, ("blue", "orange", "green", "red"), strict=False)
        )
        values = [value for _, ys in series for value in ys]
        legend += f"; x: epoch 1 to {len(epochs)}, y: {min(values):.4g} (bottom) to {max(values):.4g} (top)"
        written.append({"file": file, "title": f"Training {group} per epoch", "caption": legend})
    return written


def write_report(
    path: Path,
    *,
    task: str,
    metrics: dict[str, Any],
    checks: list[dict],
    blessed: bool,
    baseline_uri: str | None,
    figures: list[dict[str, str]],
) -> None:
    """Writes the page: verdict and checks, scalar metrics, the slice table and the plots."""
    e = html.escape
    scalars = {
        k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "seed"
    }
    rows = "".join(f"<tr><td>{e(k)}</td><td>{_number(v)}</td></tr>" for k, v in scalars.items())
    check_rows = (
        "".join(
            f"<tr class={'pass' if c['passed'] else 'fail'}><td>{'pass' if c['passed'] else 'FAIL'}</td>"
            f"<td>{e(describe(c))}</td></tr>"
            for c in checks
        )
        or "<tr><td colspan=2>no thresholds: the model is blessed</td></tr>"
    )
    slice_rows = ""
    columns = []
    for slice_metrics in metrics.get("slices", {}).values():
        for numbers in slice_metrics.values():
            columns += [k for k, v in numbers.items() if isinstance(v, (int, float)) and k not in columns]
    for name, slice_metrics in metrics.get("slices", {}).items():
        for key, numbers in slice_metrics.items():
            cells = "".join(f"<td>{_number(numbers.get(column))}</td>" for column in columns)
            slice_rows += f"<tr><td>{e(name)}</td><td>{e(key)}</td>{cells}</tr>"
    slice_table = (
        "<table><tr><th>slice</th><th>value</th>"
        + "".join(f"<th>{e(c)}</th>" for c in columns)
        + f"</tr>{slice_rows}</table>"
        if slice_rows
        else "<p>No slices configured (evaluator.slices).</p>"
    )
    figure_html = "".join(
        f"<figure><img src='{e(f['file'])}' alt='{e(f['title'])}'><figcaption><b>{e(f['title'])}</b>: "
        f"{e(f['caption'])}</figcaption></figure>"
        for f in figures
    )
    verdict = "BLESSED" if blessed else "NOT BLESSED"
    path.write_text(
        f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>kflow evaluation: {e(verdict)}</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:1em auto}}
td,th{{padding:2px 8px;border-bottom:1px solid #ddd}}
.pass td:first-child{{color:#2a2}} .fail td:first-child{{color:#c22;font-weight:bold}}
figure{{display:inline-block;margin:0.5em}} .verdict{{font-size:1.5em}}</style></head><body>
<h1>Evaluation of the {e(task)} model on the {e(str(metrics.get("split")))} split</h1>
<p class="verdict"><b>{e(verdict)}</b></p>
<p>Baseline model: {e(baseline_uri or "none (change checks do not apply)")}</p>
<h2>Checks</h2><table>{check_rows}</table>
<h2>Metrics</h2><table>{rows}</table>
<p>Machine-readable: <a href="metrics.json">metrics.json</a>, <a href="kfp_metrics.json">kfp_metrics.json</a>.</p>
<h2>Slices</h2>{slice_table}
<h2>Plots</h2>{figure_html or "<p>none</p>"}
</body></html>
"""
    )


def _number(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)
