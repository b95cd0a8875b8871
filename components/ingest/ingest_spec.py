"""What the specs of the ingest components share: their outputs and the parameters every ingest takes."""

from __future__ import annotations

from typing import Any

from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from kflow.pipeline.dsl.component import ComponentSpec, Parameter
from kflow.pipeline.dsl.config_model import FiltersSection, declared_parameter

INGEST_OUTPUTS = {"examples": Examples, "schema": Schema, "rejects": Rejects}


def ingest_component_spec(
    dataset: str,
    *,
    source_files: str,
    executor: str | None = None,
    renamed_parameters: dict[str, str] | None = None,
    **parameters: Any,
) -> ComponentSpec:
    """The spec of `dataset`'s ingest: no inputs, INGEST_OUTPUTS, `ingest_component_parameters(**parameters)`, its
    executor (default: `run` in the dataset's `ingest/executor.py`) and `source_files`, "module:function" listing
    the files it reads (for the data fingerprint)."""
    return ComponentSpec(
        inputs={},
        outputs=INGEST_OUTPUTS,
        parameters=ingest_component_parameters(**parameters),
        executor=executor or f"kflow.components.datasets.{dataset}.ingest.executor:run",
        renamed_parameters=renamed_parameters or {},
        source_files=source_files,
    )


def ingest_component_parameters(
    *,
    source: str,
    formats: str,
    split: Parameter,
    records: str,
    source_optional: bool = False,
    reading: dict[str, Parameter] | None = None,
    filters: dict[str, Parameter] | None = None,
) -> dict[str, Parameter]:
    """An ingest's parameters, in the order its task's command line lists them: `source_path` (`source` says what
    it may be), `source_format` ("auto" or one of `formats`), the dataset's `reading` parameters, `split`,
    `max_records` (of the `records`), the dataset's `filters`, then those of the shared Beam ingest
    (components/ingest/beam_ingest.py)."""
    return {
        "source_path": Parameter(str, optional=source_optional, is_path=True, description=source),
        "source_format": Parameter(str, default="auto", description=formats),
        **(reading or {}),
        "split": split,
        "max_records": Parameter(int, optional=True, description=f"Read at most this many {records}."),
        **(filters or {}),
        "shards_per_split": Parameter(
            int, default=0, description="TFRecord files per split; 0: one per 256 MB of the split's Examples."
        ),
        "max_invalid_fraction": declared_parameter(FiltersSection, "max_invalid_fraction", float),
        "beam_args": Parameter(list, default=[], affects_output=False, description="Apache Beam pipeline options."),
    }


def split_shares(default: dict[str, int], description: str) -> Parameter:
    """The `split` parameter of an ingest that divides its records by shares (`default`: its dataset's
    `default_split`)."""
    return Parameter(dict, default=default, description=description)
