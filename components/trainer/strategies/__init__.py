"""The Trainer's distribution strategies: one module each, one line each in `STRATEGIES`.

A `StrategySpec` says, without importing TensorFlow, how a strategy runs: the processes
its cluster needs (roles and counts: what the local launcher starts and what a TFJob
gets), and the module whose `Runtime` does the TensorFlow side of the training loop.
The compiler and the TFJob rendering see only the replicas (`Trainer.cluster_replicas`).
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
    trains and worker 0 writes. `fit`: Keras' `model.fit` works under it (else the custom loop).
    """

    name: str
    runtime: str
    roles: tuple[tuple[str, int | str], ...] = ()
    fit: bool = False
    logical_devices: bool = False  # takes trainer.devices: splits the first physical device (Runtime.configure)
    description: str = ""

    @property
    def multi_process(self) -> bool:
        return bool(self.roles)

    def replicas(self, workers: int, parameter_servers: int) -> dict[str, int]:
        """{role: count} of the cluster for these settings; {} for a single-process strategy."""
        settings = {"workers": workers, "parameter_servers": parameter_servers}
        for _, count in self.roles:
            if isinstance(count, str) and settings[count] < 1:
                raise ValueError(f"strategy {self.name} needs {count} ≥ 1 (got {settings[count]})")
        return {role: settings[count] if isinstance(count, str) else count for role, count in self.roles}

    def serves(self, role: str | None) -> bool:
        """Whether a process of this role only serves: every role but the chief, in a cluster with a chief."""
        roles = {name for name, _ in self.roles}
        return "chief" in roles and role in roles and role != "chief"

    def runtime_class(self) -> Any:
        module, _, name = self.runtime.partition(":")
        return getattr(importlib.import_module(module), name)


_PACKAGE = "kflow.components.trainer.strategies"
STRATEGIES: dict[str, StrategySpec] = {
    spec.name: spec
    for spec in (
        StrategySpec("default", f"{_PACKAGE}.default:Runtime", fit=True, description="one device"),
        StrategySpec(
            "mirrored", f"{_PACKAGE}.mirrored:Runtime", fit=True, logical_devices=True, description="all local devices"
        ),
        StrategySpec(
            "multi_worker_mirrored",
            f"{_PACKAGE}.multi_worker_mirrored:Runtime",
            roles=(("worker", "workers"),),
            description="synchronous all-reduce over workers",
        ),
        StrategySpec(
            "parameter_server",
            f"{_PACKAGE}.parameter_server:Runtime",
            roles=(("chief", 1), ("worker", "workers"), ("ps", "parameter_servers")),
            description="asynchronous workers, variables on parameter servers",
        ),
    )
}


def get_strategy(name: str) -> StrategySpec:
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    return STRATEGIES[name]


__all__ = ["STRATEGIES", "StrategySpec", "get_strategy"]
