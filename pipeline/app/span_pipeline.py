"""The ingest of a config whose `data.source.path` has `{SPAN}`: one cached ingest per span, then their union.

    ingest_span_1 ─┐
    ingest_span_2 ─┼─► ingest (SpanUnion: the Examples of the spans data.spans selects, with their `spans`)
    ingest_span_3 ─┘
    ingest_span_2 ─► statistics_span_2 ─┐ (the previous span's and the newest span's Split-train statistics:
    ingest_span_3 ─► statistics_span_3 ─┴─► validate   the drift between them, data.drift / data.on_drift)

Why a node per span rather than one ingest over every span: the runner's cache is per node, keyed by the files
the node reads (pipeline/dsl/fingerprint.py), so a node per span is cached by that span's files alone: a new
span runs only its own ingest, and `kflow plan` says so with the runner's own reasons. The union links the
spans' shards (no record is read again), and the standard nodes after it (`statistics`, `schema`, `validate`,
`train`, `evaluate`) see one Examples artifact as without spans. The spans are resolved from the files when the
pipeline is built, so a compiled pipeline holds the spans found then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kflow.components.ingest.spans import Span, describe, find_spans, has_spans, previous_span, select_spans
from kflow.components.span_union import SpanUnion
from kflow.components.span_union.component import MAX_SPANS
from kflow.components.statistics_gen import StatisticsGen
from kflow.pipeline.app.sections import absolute, ingest_parameters
from kflow.pipeline.dsl.component import Component
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig, as_data
from kflow.pipeline.dsl.config_model import Section


@dataclass
class SpanIngest:
    """The nodes of a span ingest: `ingest` (the union), and what drift compares (None without a previous span)."""

    nodes: list[Component]
    ingest: Component
    spans: list[Span]
    newest_statistics: Component | None = None
    previous_statistics: Component | None = None
    previous: Span | None = None

    def metadata(self, config: PipelineConfig) -> dict[str, Any]:
        """What the run record keeps and `kflow plan` says: the spans read, and each span node's span."""
        shown = describe(spans_selection(config))
        header = f"spans: {', '.join(span.name for span in self.spans)} (data.spans: {shown})"
        if self.previous is not None:
            header += f"; drift: span {self.spans[-1].name} against span {self.previous.name}"
        notes = {f"ingest_span_{span.name}": [f"span {span.name}: {', '.join(span.files)}"] for span in self.spans}
        if self.previous is not None and self.previous not in self.spans:
            notes[f"ingest_span_{self.previous.name}"] = [f"span {self.previous.name}: the previous span, for drift"]
        return {"spans": [span.name for span in self.spans], "plan_header": [header], "plan_notes": notes}


def resolve_spans(config: PipelineConfig) -> tuple[list[Span], list[Span]] | None:
    """(every span found, those data.spans selects), or None when the source has no {SPAN}. ValueError (one line
    naming the field) for a bad pattern, no file, or a selection of none."""
    path = config.data.source.path
    if not has_spans(path):
        if config.data.spans is not None:
            raise ValueError(
                "data.spans: needs {SPAN} (or a date: {YYYY}, {MM}, {DD}) in data.source.path, e.g. "
                "data/survey-{SPAN}.csv or data/sales-{YYYY}-{MM}.csv"
            )
        return None
    found = find_spans(absolute(path))
    chosen = select_spans(found, spans_selection(config))
    if len(chosen) > MAX_SPANS:
        raise ValueError(
            f"data.spans: selects {len(chosen)} spans, a run reads at most {MAX_SPANS}; use {{last: {MAX_SPANS}}}"
        )
    return found, chosen


def span_problems(config: PipelineConfig) -> list[str]:
    try:
        resolve_spans(config)
    except ValueError as error:
        return [str(error)]
    return []


def newest_span_source(config: PipelineConfig) -> str | None:
    """The newest selected span's path (what `kflow validate` inspects), or None without spans or when they
    cannot be resolved (span_problems says why)."""
    try:
        resolved = resolve_spans(config)
    except ValueError:
        return None
    return resolved[1][-1].path if resolved else None


def span_ingest(config: PipelineConfig, ingest_class: type[Component], validates_data: bool) -> SpanIngest | None:
    """The span ingest's nodes, or None when `data.source.path` has no {SPAN}. ConfigError for what
    `span_problems` finds."""
    try:
        resolved = resolve_spans(config)
    except ValueError as error:
        raise ConfigError([str(error)], config.source) from None
    if resolved is None:
        return None
    found, chosen = resolved
    parameters = ingest_parameters(config)
    previous = previous_span(found, chosen[-1]) if validates_data else None
    ingests = {
        span.number: ingest_class(f"ingest_span_{span.name}", parameters={**parameters, "source_path": span.path})
        for span in ([previous] if previous and previous not in chosen else []) + chosen
    }
    union = SpanUnion(
        "ingest",
        parameters={"spans": [span.name for span in chosen]},
        **{f"span_{index}": ingests[span.number].outputs["examples"] for index, span in enumerate(chosen)},
        **{f"span_{index}_schema": ingests[span.number].outputs["schema"] for index, span in enumerate(chosen)},
    )
    result = SpanIngest([*sorted(ingests.values(), key=_span_order), union], union, chosen)
    if previous is not None:
        result.previous = previous
        for span, attribute in ((previous, "previous_statistics"), (chosen[-1], "newest_statistics")):
            node = StatisticsGen(
                f"statistics_span_{span.name}",
                examples=ingests[span.number].outputs["examples"],
                parameters={"beam_args": config.beam_args},
            )
            setattr(result, attribute, node)
            result.nodes.insert(-1, node)
    return result


def drift_parameters(config: PipelineConfig, spans: SpanIngest | None) -> dict[str, Any]:
    """ExampleValidator's drift parameters: which spans it compares and the thresholds."""
    if spans is None or spans.previous is None:
        return {}
    drift = config.data.drift
    return {
        "on_drift": config.data.on_drift,
        "drift_spans": [spans.spans[-1].name, spans.previous.name],
        "l_infinity_threshold": drift.l_infinity,
        "jensen_shannon_threshold": drift.jensen_shannon,
    }


def spans_selection(config: PipelineConfig) -> Any:
    """`data.spans` as the config writes it (latest, all, {last: N}, {from: A, to: B}; None: unset)."""
    spans = config.data.spans
    return as_data(spans) if isinstance(spans, Section) else spans


def _span_order(node: Component) -> int:
    return int(node.id.rsplit("_", 1)[1])
