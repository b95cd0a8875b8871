"""SchemaGen: infers a TFMD Schema from the training split's statistics (or copies a frozen one)."""

from __future__ import annotations

from kflow.pipeline.dsl.artifacts import ExampleStatistics, Schema
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class SchemaGen(Component):
    """Types, presence, value counts, string domains, numeric ranges and drift thresholds from Split-train.

    `ingest_schema` (optional): the ingest's schema, whose types and annotation tags (the label's
    role) the inferred schema keeps. `schema_file`: a frozen schema to use instead of inferring.
    """

    spec = ComponentSpec(
        inputs={"statistics": ExampleStatistics, "ingest_schema": Schema},
        optional_inputs=frozenset({"ingest_schema"}),
        outputs={"schema": Schema},
        parameters={
            "schema_file": Parameter(
                str, optional=True, is_path=True, description="A frozen schema.pbtxt to use instead of inferring."
            ),
            "max_string_domain": Parameter(
                int, default=100, description="Strings with at most this many training values get a domain."
            ),
            "range_margin": Parameter(
                float, default=0.5, description="Numeric ranges: the training min and max ± this × their span."
            ),
            "max_category_drift": Parameter(
                float,
                default=0.25,
                description="L-infinity distance between a split's and train's value frequencies that counts as "
                "drift (TFDV's infinity_norm threshold).",
            ),
        },
        executor="kflow.components.schema_gen.executor:run",
        source_files="kflow.components.schema_gen.executor:source_files",
    )
