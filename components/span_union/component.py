"""SpanUnion: the Examples of several spans, each ingested (and cached) on its own, as one Examples artifact.

TFX's ExampleGen reads a range of spans in one execution, so a new span ingests them all again; kflow ingests
each span in a node of its own (`ingest_span_<N>`, fingerprinted by that span's files only) and this node
joins their outputs without reading a record: each span's TFRecord shards are linked into the union's splits.
"""

from __future__ import annotations

from kflow.pipeline.dsl.artifacts import Examples, Schema
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter

# A compiled task's inputs are fixed by its spec: at most this many spans a run (data.spans: {last: N} rolls).
MAX_SPANS = 32


class SpanUnion(Component):
    """`span_<i>`: a span's Examples, `span_<i>_schema` its ingest's schema; the union's schema merges them
    (merged_schema.py)."""

    spec = ComponentSpec(
        inputs={
            **{f"span_{index}": Examples for index in range(MAX_SPANS)},
            **{f"span_{index}_schema": Schema for index in range(MAX_SPANS)},
        },
        optional_inputs=frozenset(f"span_{index}{end}" for index in range(1, MAX_SPANS) for end in ("", "_schema")),
        outputs={"examples": Examples, "schema": Schema},
        parameters={
            "spans": Parameter(list, description="The span of each input, in order: span_0's, span_1's, …"),
        },
        executor="kflow.components.span_union.executor:run",
    )

    def check_parameters(self) -> list[str]:
        wired = sum(name.startswith("span_") and not name.endswith("_schema") for name in self.inputs)
        if wired != len(self.parameters["spans"]):
            return [f"{self.id}: {wired} span inputs for the spans {self.parameters['spans']}"]
        return []
