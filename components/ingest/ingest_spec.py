"""What the specs of the ingest components share: their outputs and the settings of the shared Beam ingest."""

from __future__ import annotations

from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from kflow.pipeline.dsl.component import Parameter
from kflow.pipeline.dsl.config_model import FiltersSection, declared_parameter

INGEST_OUTPUTS = {"examples": Examples, "schema": Schema, "rejects": Rejects}


def ingest_parameters(**own: Parameter) -> dict[str, Parameter]:
    """A dataset's own ingest parameters, then those of the shared Beam ingest (components/ingest/beam_ingest.py)."""
    return {
        **own,
        "shards_per_split": Parameter(
            int, default=0, description="TFRecord files per split; 0: one per 256 MB of the split's Examples."
        ),
        "max_invalid_fraction": declared_parameter(FiltersSection, "max_invalid_fraction", float),
        "beam_args": Parameter(list, default=[], affects_output=False, description="Apache Beam pipeline options."),
    }
