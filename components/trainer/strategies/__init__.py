"""The Trainer's distribution strategies: one module each, one line each in `STRATEGIES`.

A `StrategySpec` says, without importing TensorFlow, how a strategy runs: the processes
its cluster needs (roles and counts: what the local launcher starts and what a TFJob or
JAXJob gets), the Keras backend it trains on, the training path (Keras' `model.fit`, the
custom loop, or the explicit JAX loop), and the module whose `Runtime` does the
distribution side. The compiler and the job rendering see only the replicas
(`Trainer.cluster_replicas`) and the backend.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StrategySpec:
    """How a strategy runs.

    `roles`: the cluster's processes as (role, count), the count a number or the name of the
    trainer setting that gives it (`workers`, `parameter_servers`); empty for a strategy that
    trains in the Trainer's own process. The `chief` role, when there is one, ends the run and
    writes the outputs, and the other roles serve until stopped; without it, every worker
    trains and worker 0 writes. `trainer`: the training path, a module of kflow.components.trainer
    (`fit`: Keras' `model.fit`, where it works; `loop`: the custom loop; `jax_loop`: the explicit
    JAX loop). `backend`: the Keras backend; a backend other than TensorFlow runs in worker
    processes of its own (Keras fixes its backend per process, at import), as JAX processes whose
    coordinator is process 0 (the environment a Training Operator JAXJob gives its pods).
    """

    name: str
    runtime: str
    roles: tuple[tuple[str, int | str], ...] = ()
    trainer: str = "loop"
    backend: str = "tensorflow"
    devices: bool = False  # takes trainer.devices (Runtime.configure): logical TF devices, or XLA host devices
    description: str = ""
    guide: str = ""

    def train_module(self) -> Any:
        return importlib.import_module(TRAINERS[self.trainer])

    @property
    def multi_process(self) -> bool:
        return bool(self.roles)

    @property
    def takes_sidecar_evaluator(self) -> bool:
        """A sidecar evaluator follows the custom loop's tf.train checkpoints, in a cluster."""
        return self.multi_process and self.trainer == "loop"

    def replicas(self, workers: int, parameter_servers: int, evaluator: bool = False) -> dict[str, int]:
        """{role: count} of the cluster for these settings (with `evaluator`, a sidecar evaluator task too);
        {} for a single-process strategy."""
        settings = {"workers": workers, "parameter_servers": parameter_servers}
        for _, count in self.roles:
            if isinstance(count, str) and settings[count] < 1:
                raise ValueError(f"strategy {self.name} needs {count} ≥ 1 (got {settings[count]})")
        if evaluator and not self.takes_sidecar_evaluator:
            able = ", ".join(spec.name for spec in STRATEGIES.values() if spec.takes_sidecar_evaluator)
            raise ValueError(f"strategy {self.name} has no sidecar evaluator (only {able})")
        replicas = {role: settings[count] if isinstance(count, str) else count for role, count in self.roles}
        return {**replicas, "evaluator": 1} if evaluator else replicas

    def serves(self, role: str | None) -> bool:
        """Whether a process of this role only serves: every role but the chief, in a cluster with a chief."""
        roles = {name for name, _ in self.roles}
        return "chief" in roles and role in roles and role != "chief"

    def runtime_class(self) -> Any:
        module, _, name = self.runtime.partition(":")
        return getattr(importlib.import_module(module), name)


# Whole module names, here and in STRATEGIES, not built ones: a component's code version (pipeline/dsl/code_version.py)
# follows the module names it finds in string literals, so that editing a loop or a strategy re-runs the Trainer.
TRAINERS = {
    "fit": "kflow.components.trainer.fit",
    "loop": "kflow.components.trainer.loop",
    "jax_loop": "kflow.components.trainer.jax_loop",
}
STRATEGIES: dict[str, StrategySpec] = {
    spec.name: spec
    for spec in (
        StrategySpec(
            "default",
            "kflow.components.trainer.strategies.default:Runtime",
            trainer="fit",
            description="one device",
            guide="Keras: training & evaluation with the built-in methods",
        ),
        StrategySpec(
            "mirrored",
            "kflow.components.trainer.strategies.mirrored:Runtime",
            trainer="fit",
            devices=True,
            description="synchronous all-reduce over the local devices (or N logical devices of one)",
            guide="TensorFlow: distributed training with Keras; logical devices: TensorFlow's GPU guide",
        ),
        StrategySpec(
            "multi_worker_mirrored",
            "kflow.components.trainer.strategies.multi_worker_mirrored:Runtime",
            roles=(("worker", "workers"),),
            description="synchronous all-reduce over worker processes",
            guide="TensorFlow: multi-worker training with Keras / a custom training loop",
        ),
        StrategySpec(
            "parameter_server",
            "kflow.components.trainer.strategies.parameter_server:Runtime",
            roles=(("chief", 1), ("worker", "workers"), ("ps", "parameter_servers")),
            description="asynchronous workers, variables on parameter servers",
            guide="TensorFlow: parameter server training with ParameterServerStrategy",
        ),
        StrategySpec(
            "keras_data_parallel",
            "kflow.components.trainer.strategies.keras_distribution:DataParallelRuntime",
            roles=(("worker", "workers"),),
            trainer="fit",
            backend="jax",
            devices=True,
            description="keras.distribution.DataParallel: the batch split over every device of every process",
            guide="Keras: distributed training with JAX; Keras: the distribution API",
        ),
        StrategySpec(
            "keras_model_parallel",
            "kflow.components.trainer.strategies.keras_distribution:ModelParallelRuntime",
            roles=(("worker", "workers"),),
            trainer="fit",
            backend="jax",
            devices=True,
            description="keras.distribution.ModelParallel: weights sharded by a LayoutMap over a (batch, model) mesh",
            guide="Keras: the distribution API (ModelParallel, LayoutMap)",
        ),
        StrategySpec(
            "jax_data_parallel",
            "kflow.components.trainer.strategies.jax_data_parallel:Runtime",
            roles=(("worker", "workers"),),
            trainer="jax_loop",
            backend="jax",
            devices=True,
            description="an explicit JAX loop: jitted stateless steps, replicated state, NamedSharding batches",
            guide="Keras: distributed training with JAX (a custom loop over stateless_call)",
        ),
    )
}


def get_strategy(name: str) -> StrategySpec:
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    return STRATEGIES[name]


__all__ = ["STRATEGIES", "StrategySpec", "get_strategy"]
