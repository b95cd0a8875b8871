"""How a compiled pipeline runs one node as parallel tasks: a tuner's trials, each a task of a `dsl.ParallelFor`.

A component that can offers `parallel_steps(shared_dir)`; the compiler (pipeline/compiler/pipeline_builder.py)
then compiles its node as `count` tasks of `step`, at most `parallelism` at a time, each given its index in
`index_parameter` and the run's id in `run_parameter` (so that the steps of one run share a folder under
`shared_dir`, the volume mounted into them), and after all of them one `gather` task whose outputs are the node's.
`kflow run` never uses it: the node's own executor runs the same work in processes of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ParallelSteps:
    step: Any  # a Component
    gather: Any  # a Component, with the node's outputs
    count: int
    parallelism: int
    index_parameter: str
    run_parameter: str
