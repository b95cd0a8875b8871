"""StatisticsGen: per-split feature statistics of Examples (TFMD protos, as TFX's StatisticsGen writes them)."""

from __future__ import annotations

from kflow.pipeline.dsl.artifacts import Examples, ExampleStatistics
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class StatisticsGen(Component):
    """Computes count, missing, mean, std, min, median, max and quantiles of numbers, and unique values,
    top values and length of strings, for every split, with Apache Beam; writes a readable HTML summary."""

    spec = ComponentSpec(
        inputs={"examples": Examples},
        outputs={"statistics": ExampleStatistics},
        parameters={
            "beam_args": Parameter(list, default=[], affects_output=False, description="Apache Beam pipeline options.")
        },
        executor="kflow.components.statistics_gen.executor:run",
    )
