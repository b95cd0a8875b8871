"""Transform (TFX's name): preprocessing learnt once by a Beam pass over Split-train, as a TransformGraph."""

from __future__ import annotations

from kflow.components.datasets.module_imports import module_parameters
from kflow.components.transform.module_check import preprocessing_problems
from kflow.pipeline.dsl.artifacts import Examples, Schema, TransformGraph
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter


class Transform(Component):
    """Full-pass analyzers (mean and variance, min and max, vocabularies with counts, quantile boundaries, the
    label's classes and weights) over the training split, and the Keras preprocessing model built from them.

    `dataset`: a tabular dataset (csv, parquet, tfrecord, tfds); `options`: its data options (the Trainer's
    `model_options` `max_categories`, `max_tokens`, `text_min_chars`, `class_weighting`); `module`: the user's
    file with `preprocessing_fn(inputs, analyzers)`, read when the pipeline is built (`module_source`: the cache
    key sees its bytes). The Trainer takes the graph as its `transform_graph` input.
    """

    spec = ComponentSpec(
        inputs={"examples": Examples, "schema": Schema},
        outputs={"transform_graph": TransformGraph},
        parameters={
            "dataset": Parameter(str, description="The registered dataset whose task reads the Examples."),
            "options": Parameter(dict, default={}, description="The dataset task's data options."),
            "module": Parameter(
                str, optional=True, is_path=True, affects_output=False, description="A file with preprocessing_fn."
            ),
            "module_source": Parameter(
                str, optional=True, description="The module's source, read when the pipeline is built."
            ),
            "module_imports": Parameter(
                dict, optional=True, description="The first-party files the module imports: {path: source}."
            ),
            "beam_args": Parameter(list, default=[], affects_output=False, description="Apache Beam pipeline options."),
        },
        executor="kflow.components.transform.executor:run",
    )

    def _bind_parameters(self, parameters: dict) -> dict:
        """Reads `module` into `module_source` when the pipeline is built (its bytes are in the cache key)."""
        module = parameters.get("module")
        if module and parameters.get("module_source") is None and not preprocessing_problems(module):
            parameters = {**parameters, **module_parameters(module)}
        return super()._bind_parameters(parameters)

    def check_parameters(self) -> list[str]:
        module = self.parameters.get("module")
        return [f"transform.module: {problem}" for problem in preprocessing_problems(module)] if module else []
