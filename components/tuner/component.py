"""The Tuner component: Examples + Schema in, the best trainer settings (HyperParameters) out."""

from __future__ import annotations

from kflow.pipeline.dsl.artifacts import ExampleAnomalies, Examples, HyperParameters, Schema, TransformGraph
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter
from kflow.pipeline.dsl.config_model import ObjectiveSection, TunerSection, declared_parameter
from kflow.pipeline.dsl.parallel_steps import ParallelSteps

# The trials' training: the Trainer's executor, by import path (a component never imports another).
TRAINER_EXECUTOR = "kflow.components.trainer.executor:run"


class Tuner(Component):
    """Searches `search_space` ({trainer field: domain}) with Optuna: each trial is one process that trains with
    the Trainer's executor (its parameters `trainer` with the trial's settings) on Split-train and is scored on
    Split-eval by `objective_metric`, which it reports each epoch so that a pruner can stop it; the test split is
    not in the Examples a trial is given. Writes the best settings, every trial (settings, curve, how it ended) and
    a plot of the objective by trial into `hyperparameters`, which a Trainer takes.
    """

    spec = ComponentSpec(
        # anomalies (optional): ExampleValidator's verdict; the search waits for it, and each trial's Trainer reads it.
        # transform_graph (optional): the Transform's preprocessing, which each trial's Trainer takes as the Trainer.
        inputs={
            "examples": Examples,
            "schema": Schema,
            "anomalies": ExampleAnomalies,
            "transform_graph": TransformGraph,
        },
        optional_inputs=frozenset({"anomalies", "transform_graph"}),
        outputs={"hyperparameters": HyperParameters},
        parameters={
            "search_space": declared_parameter(TunerSection, "search_space", dict),
            "algorithm": declared_parameter(TunerSection, "algorithm", str),
            "max_trials": declared_parameter(TunerSection, "max_trials", int),
            "max_time": Parameter(float, default=None, description="seconds after which no trial starts"),
            "objective_metric": declared_parameter(ObjectiveSection, "metric", str),
            "objective_direction": Parameter(str, default=None, description="minimize or maximize; null: by name"),
            "parallel_trials": declared_parameter(TunerSection, "parallel_trials", int, affects_output=False),
            "trial_epochs": Parameter(int, default=None, description="each trial's epochs; null: the trainer's"),
            "seed": declared_parameter(TunerSection, "seed", int),
            "trainer": Parameter(dict, description="the Trainer's parameters the trials start from"),
            "trainer_executor": Parameter(str, default=TRAINER_EXECUTOR, description="what trains a trial"),
        },
        executor="kflow.components.tuner.executor:run",
    )

    def parallel_steps(self, shared_dir: str) -> ParallelSteps:
        """In a compiled pipeline: `max_trials` trial tasks, `parallel_trials` at a time, sharing the study in a
        journal under `shared_dir`, and the task gathering their best (parallel.py)."""
        from kflow.components.tuner.parallel import parallel_steps

        return parallel_steps(self, shared_dir)

    def check_parameters(self) -> list[str]:
        from kflow.components.tuner.search_space import space_problems

        return space_problems(self.parameters["search_space"], self.parameters["algorithm"])
