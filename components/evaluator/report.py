"""report.html: one self-contained page (plots embedded) that a browser or the KFP UI's HTML viewer shows.

Order: the verdict and the failed checks, the headline metrics beside the baseline's, every
check, what the model was trained with (its settings, tuned or not; the data: rows per split, sources, spans,
a link to the data's statistics page), per-class and slice tables (slices in their natural order), the plots
(inline SVG, their text laid out by the browser), then the training run and the related files. Every link is
relative to the page, so the folder reads the same wherever it is copied.
"""

from __future__ import annotations

import base64
import html
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kflow.components.evaluator.gate import describe
from kflow.components.evaluator.slice_order import class_names, in_natural_order

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1em;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0} td,th{padding:3px 10px;border-bottom:1px solid #ddd;text-align:right}
td:first-child,th:first-child,.text td,.text th{text-align:left}
.pass{color:#1a7f37} .fail{color:#c62828;font-weight:bold}
.verdict{font-size:1.6em;padding:.4em .8em;border-radius:6px;display:inline-block}
.blessed{background:#e6f4ea;color:#1a7f37} .refused{background:#fde8e8;color:#c62828}
figure{display:inline-block;margin:.5em;vertical-align:top;max-width:100%}
figcaption{max-width:40em;font-size:.9em;color:#555}
img,figure svg{max-width:100%;height:auto} .muted{color:#666}
"""


def write_report(
    path: Path,
    *,
    task: str,
    metrics: dict[str, Any],
    checks: list[dict],
    blessed: bool,
    figures: list[dict[str, str]],
    data: Mapping[str, Any] | None = None,
    training: Mapping[str, Any] | None = None,
    links: Mapping[str, str] | None = None,
    title: str | None = None,
    provenance: Mapping[str, Any] | None = None,
    statistics_page: Path | None = None,
) -> None:
    """Writes the page. `data`: the Examples' stats.json; `training`: the Trainer's history.json
    (without per-epoch rows); `links`: {label: path} of related files (rejects, TensorBoard logs), made
    relative to the page; `title`: the pipeline's name; `provenance`: what the model was trained with
    (provenance.trained_with); `statistics_page`: the data's statistics page, linked. Numbers are rounded
    for reading (four significant digits); metrics.json keeps them whole."""
    e = html.escape
    failed = [check for check in checks if not check["passed"]]
    verdict = "BLESSED" if blessed else "NOT BLESSED"
    heading = f"{task} model, evaluated on the {metrics.get('split')} split"
    parts = [
        f"<h1>{e(title + ': ' if title else '')}{e(heading)}</h1>",
        f"<p class='verdict {'blessed' if blessed else 'refused'}'>{verdict}</p>",
    ]
    if failed:
        parts.append("<p class=fail>Failed checks:</p><ul>" + "".join(f"<li>{e(describe(c))}</li>" for c in failed))
        parts.append("</ul>")
    parts += ["<h2>Metrics</h2>", _metrics_table(metrics)]
    check_rows = [(("pass", "pass") if c["passed"] else ("FAIL", "fail")) + (describe(c),) for c in checks]
    parts += [
        "<h2>Checks</h2>",
        _table(
            ["result", "check"], [[f"<span class={cls}>{word}</span>", e(text)] for word, cls, text in check_rows], True
        )
        if checks
        else "<p>No thresholds are configured (evaluator.thresholds): the model is blessed.</p>",
    ]
    here = published_folder(path.parent)
    statistics_link = os.path.relpath(statistics_page, path.parent) if statistics_page else None
    if provenance:
        parts += _trained_with(provenance, statistics_link)
    elif statistics_link:
        parts.append(f"<p><a href='{e(statistics_link)}'>The data's statistics</a></p>")
    parts += _per_class_tables(metrics)
    slices = {
        name: in_natural_order(values, class_names(metrics)) for name, values in (metrics.get("slices") or {}).items()
    }
    parts += ["<h2>Slices</h2>", _slices_table(slices)]
    parts.append("<h2>Plots</h2>")
    parts += [_figure(path.parent, figure, index) for index, figure in enumerate(figures, 1)] or ["<p>none</p>"]
    if data and not provenance:
        parts += ["<h2>Data</h2>", _data_summary(data)]
    if training:
        parts += ["<h2>Training run</h2>", _training_summary(training)]
    beside = {label: os.path.relpath(target, here) for label, target in (links or {}).items()}
    related = {"metrics.json": "metrics.json", "kfp_metrics.json": "kfp_metrics.json", **beside}
    parts.append(
        "<p class=muted>Files: " + ", ".join(f"<a href='{e(href)}'>{e(label)}</a>" for label, href in related.items())
    )
    if links and "TensorBoard logs" in links:
        parts.append(f"<br>TensorBoard: <code>tensorboard --logdir {e(str(links['TensorBoard logs']))}</code>")
    parts.append("</p>")
    path.write_text(
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{e(title or 'kflow')} evaluation: {verdict}</title>"
        f"<style>{_STYLE}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n"
    )


def published_folder(folder: Path) -> Path:
    """Where `folder` is read from once its node has run: under `kflow run` a node writes into
    `<run>/.staging/<node>-<random>/<output>/`, published as `<run>/<node>/<output>/` (docs/runs.md), one level
    higher, so a link out of the output folder is made relative to the published one."""
    staging = folder.parent
    if staging.parent.name == ".staging" and "-" in staging.name:
        return staging.parent.parent / staging.name.rsplit("-", 1)[0] / folder.name
    return folder


def _table(header: list[str], rows: list[list[str]], text: bool = False) -> str:
    """A table of numbers (right-aligned after the first column), or of `text` (all left-aligned)."""
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table{' class=text' if text else ''}><tr>{head}</tr>{body}</table>"


def _metrics_table(metrics: Mapping[str, Any]) -> str:
    baseline = metrics.get("baseline") or {}
    rows = []
    for name, value in metrics.items():
        if not _is_number(value) or name == "seed":
            continue
        before = baseline.get(name)
        change = _number(value - before, signed=True) if _is_number(before) else ""
        rows.append([html.escape(name), _number(value), _number(before) if _is_number(before) else "", change])
    caption = f"<p class=muted>Baseline: {html.escape(str(baseline.get('model') or 'none'))}</p>"
    return _table(["metric", "value", "baseline", "change"], rows) + caption


def _per_class_tables(metrics: Mapping[str, Any]) -> list[str]:
    per_class = {name: values for name, values in metrics.items() if name.startswith("per_class_") and values}
    parts = []
    if per_class:
        columns = list(per_class)
        classes = list(next(iter(per_class.values())))
        rows = [[html.escape(label)] + [_number(per_class[c].get(label)) for c in columns] for label in classes]
        parts += ["<h2>Per class</h2>", _table(["class", *[c.removeprefix("per_class_") for c in columns]], rows)]
    matrix = metrics.get("confusion_matrix")
    if matrix:
        labels = matrix["categories"]
        rows = [
            [f"true {html.escape(label)}", *map(str, row)] for label, row in zip(labels, matrix["matrix"], strict=True)
        ]
        parts += ["<h3>Confusion matrix (counts)</h3>", _table(["", *[f"pred {label}" for label in labels]], rows)]
    return parts


def _slices_table(slices: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    columns: list[str] = []
    for values in slices.values():
        for numbers in values.values():
            columns += [key for key, value in numbers.items() if _is_number(value) and key not in columns]
    rows = [
        [html.escape(name), html.escape(key), *[_number(numbers.get(column)) for column in columns]]
        for name, values in slices.items()
        for key, numbers in values.items()
    ]
    if not rows:
        return "<p>No slices configured (evaluator.slices).</p>"
    return _table(["slice", "value", *columns], rows).replace("<table>", "<table class=slices>", 1)


def _figure(folder: Path, figure: Mapping[str, str], index: int) -> str:
    """The figure inline: its SVG (text the browser lays out) where there is one, else its PNG, base64."""
    e = html.escape
    svg = folder / figure["svg"] if figure.get("svg") else None
    if svg is not None and svg.is_file():
        drawing = inline_svg(svg.read_text(), f"f{index}-", figure["title"])
    else:
        encoded = base64.b64encode((folder / figure["file"]).read_bytes()).decode()
        drawing = f"<img src='data:image/png;base64,{encoded}' alt='{e(figure['title'])}'>"
    return f"<figure>{drawing}<figcaption><b>{e(figure['title'])}</b>. {e(figure['caption'])}</figcaption></figure>"


_ID = re.compile(r"""(\bid="|url\(#|href="#)([^")]+)""")


def inline_svg(text: str, prefix: str, title: str) -> str:
    """An SVG file's drawing for inlining in HTML: without its XML prologue, each id (and every reference to
    it) prefixed, so that two drawings' ids (matplotlib's clip paths, markers, gids) never collide."""
    drawing = text[text.index("<svg") :]
    ids = set(re.findall(r'\bid="([^"]+)"', drawing))
    drawing = _ID.sub(lambda m: m.group(1) + (prefix + m.group(2) if m.group(2) in ids else m.group(2)), drawing)
    return drawing.replace("<svg ", f"<svg role='img' aria-label='{html.escape(title)}' ", 1)


def _trained_with(provenance: Mapping[str, Any], statistics_link: str | None) -> list[str]:
    """The model and its settings (tuned or not), and the data it saw."""
    e = html.escape
    model = provenance.get("model") or {}
    parts = ["<h2>Trained with</h2>"]
    tuned = provenance.get("tuned")
    rows = [[e(name.replace("_", " ")), e(_setting(value))] for name, value in model.items()]
    parts.append("<h3>The model and its settings</h3>" + _table(["setting", "value"], rows, True))
    if tuned:
        shown = tuned.get("values", tuned) if isinstance(tuned, Mapping) else tuned
        items = shown.items() if isinstance(shown, Mapping) else [("settings", shown)]
        tuned_rows = [[e(str(name)), e(_setting(value))] for name, value in items]
        parts.append("<p>Tuned: the settings a Tuner chose</p>" + _table(["setting", "value"], tuned_rows, True))
    else:
        parts.append("<p class=muted>Not tuned: the config's settings.</p>")
    transform = provenance.get("transform")
    if transform:
        rows = [[e(name), e(_setting(value))] for name, value in transform.items()]
        parts.append("<p>Transform: preprocessing learnt once over Split-train</p>" + _table(["", ""], rows, True))
    else:
        parts.append("<p class=muted>No Transform: the model's own preprocessing layers.</p>")
    data = provenance.get("data") or {}
    data_rows = [[f"rows in {e(split)}", _number(count)] for split, count in (data.get("rows") or {}).items()]
    if data.get("read") is not None:
        data_rows.insert(0, ["rows read", _number(data["read"])])
    data_rows += [[f"rejected ({e(reason)})", _number(count)] for reason, count in (data.get("rejected") or {}).items()]
    parts.append("<h3>The data</h3>" + _table(["", "rows"], data_rows))
    facts = []
    if data.get("sources"):
        facts.append("Sources: " + ", ".join(f"<code>{e(str(source))}</code>" for source in data["sources"]))
    if data.get("spans"):
        facts.append(f"Spans: {e(_setting(data['spans']))}")
    if data.get("ingested in run"):
        facts.append(f"Ingested in run <code>{e(str(data['ingested in run']))}</code>")
    if statistics_link:
        facts.append(f"<a href='{e(statistics_link)}'>The data's statistics</a> (per feature and split)")
    parts += [f"<p>{fact}</p>" for fact in facts]
    return parts


def _setting(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{key}={_setting(item)}" for key, item in value.items()) or "–"
    if isinstance(value, list | tuple):
        return ", ".join(_setting(item) for item in value)
    return _number(value)


def _data_summary(stats: Mapping[str, Any]) -> str:
    accepted = stats.get("accepted") or {}
    rows = [["records read", str(stats.get("read", "?"))]]
    rows += [[f"accepted into {html.escape(split)}", str(count)] for split, count in accepted.items()]
    for kind in ("invalid", "filtered"):
        for reason, count in (stats.get(kind) or {}).items():
            rows.append([f"rejected ({kind}): {html.escape(reason)}", str(count)])
    return _table(["", "records"], rows)


def _training_summary(history: Mapping[str, Any]) -> str:
    shown = {
        "strategy": history.get("strategy"),
        "replicas in sync": history.get("replicas"),
        "model": history.get("model_name"),
        "epochs": history.get("epochs"),
        "global batch size": history.get("batch_size"),
        "steps": history.get("final_step"),
        "resumed from step": history.get("start_step") or None,
        "cluster restarts": history.get("restarts"),
        "examples per second": history.get("examples_per_second"),
        "training seconds": history.get("train_seconds"),
        "stopped early": history.get("stopped_early"),
    }
    rows = [[html.escape(name), html.escape(_number(value))] for name, value in shown.items() if value is not None]
    return _table(["", ""], rows)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: Any, signed: bool = False) -> str:
    """For reading: four significant digits, thousands grouped (0.9333, 3,516, 387.5, +0.0012)."""
    if value is None:
        return "–"
    if isinstance(value, float):
        sign = "+" if signed else ""
        if value and abs(value) >= 1000:
            return f"{value:{sign},.0f}"
        return f"{value:{sign}.4g}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
