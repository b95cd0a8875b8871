"""`kflow validate`'s look at every span a run ingests: each span's header (its columns, no record), so that a span
whose ingest would lack the label or the key is refused before the run, naming the span and its file.

`kflow validate` reads the newest span's header and sample as without spans (config_checks._source); the run ingests
each selected span, and the one before the newest for drift, each by a node of its own that refuses a label or key
its span's file does not hold (`ingest_span_1975 failed: data.label: 'union' is not a column of the data`). Reading
only the headers keeps validate fast: a CSV's first lines, a Parquet file's footer.
"""

from __future__ import annotations

import os
from pathlib import Path

from kflow.components.datasets import get_dataset
from kflow.components.ingest.spans import Span, previous_span
from kflow.pipeline.app.sections import ingest_parameters
from kflow.pipeline.app.span_pipeline import resolve_spans
from kflow.pipeline.dsl.config import PipelineConfig, did_you_mean


def span_header_problems(config: PipelineConfig) -> list[str]:
    """One line a field (data.label, data.key) that a span's columns lack, naming the first such span and its file
    (the others after it), or a span's file whose header cannot be read; [] without spans, when they cannot be
    resolved (span_problems says why), or for an ingest that cannot read a header alone."""
    try:
        resolved = resolve_spans(config)
        dataset = get_dataset(config.data.dataset)
        parameters = ingest_parameters(config)
    except (ValueError, TypeError, KeyError):
        return []  # Named by the other checks.
    if resolved is None:
        return []
    found, chosen = resolved
    previous = previous_span(found, chosen[-1]) if dataset.validates_data else None
    spans = sorted({*chosen, *([previous] if previous else [])}, key=lambda span: span.number)
    named = {field: parameters.get(field) for field in ("label", "key")}
    lacking: dict[str, list[tuple[Span, str, list[str]]]] = {}
    problems = []
    for span in spans:
        span_parameters = {**parameters, "source_path": span.path}
        try:
            ingest = dataset.ingest_component()(f"ingest_span_{span.name}", parameters=span_parameters)
        except (ValueError, TypeError):
            return []  # Parameters the ingest refuses: named by the other checks.
        try:
            read = ingest.source_columns() if hasattr(ingest, "source_columns") else None
        except (ValueError, OSError) as error:
            if span is not chosen[-1]:  # the newest span's: said by the look at its header and sample
                problems.append(_unreadable(span, error))
            continue
        if read is None:
            return []
        file, columns = read
        for field, name in named.items():
            if isinstance(name, str) and name not in columns:
                lacking.setdefault(field, []).append((span, file, columns))
    for field, spans_lacking in lacking.items():
        span, file, columns = spans_lacking[0]
        name = named[field]
        what = f"span {span.name}" + (", read for drift against the newest" if span not in chosen else "")
        others = ", ".join(other.name for other, _, _ in spans_lacking[1:])
        problems.append(
            f"data.{field}: {name!r} is not a column of {what}{did_you_mean(name, columns)} "
            f"({shown(file, config)}; columns: {', '.join(columns)}){f'; nor of span(s) {others}' if others else ''}"
        )
    return problems


def _unreadable(span: Span, error: Exception) -> str:
    said = str(error) or type(error).__name__
    if isinstance(error, OSError):
        said = f"cannot be read ({error.strerror or error})"
    return said if said.startswith("data.") else f"data.source.path: span {span.name}: {said}"


def shown(path: str, config: PipelineConfig) -> str:
    """A span's file as the config names it: relative to the config's folder (its paths' anchor), else to the working
    directory, where it is below it."""
    anchors = [Path(config.source).resolve().parent] if config.source else []
    for anchor in [*anchors, Path(os.getcwd()).resolve()]:
        try:
            return str(Path(path).resolve().relative_to(anchor))
        except ValueError:
            continue
    return path
