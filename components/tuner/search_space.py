"""A search space ({trainer field: domain}) as Optuna distributions, and a trial's settings drawn from it.

Domains: `uniform [low, high]`, `log_uniform [low, high]`, `int [low, high]`, `log_int [low, high]` and
`choice [values]`. A choice's values may be lists or maps (`hidden_units: [[64], [128, 64]]`), which Optuna's
categorical distribution cannot hold: it holds their JSON text, read back when the settings are made.
"""

from __future__ import annotations

import json
from typing import Any

import optuna

KINDS = ("uniform", "log_uniform", "int", "log_int", "choice")


def distributions(space: dict[str, dict[str, Any]]) -> dict[str, optuna.distributions.BaseDistribution]:
    """{setting: Optuna distribution} of the space."""
    found = {}
    for key, domain in space.items():
        (kind, values), *_ = domain.items()
        if kind == "choice":
            found[key] = optuna.distributions.CategoricalDistribution([json.dumps(value) for value in values])
        elif kind in ("int", "log_int"):
            found[key] = optuna.distributions.IntDistribution(int(values[0]), int(values[1]), log=kind == "log_int")
        else:
            found[key] = optuna.distributions.FloatDistribution(
                float(values[0]), float(values[1]), log=kind == "log_uniform"
            )
    return found


def settings_of(params: dict[str, Any], space: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A trial's Optuna params as settings: a choice's JSON text read back into its value."""
    return {key: json.loads(params[key]) if "choice" in space[key] else params[key] for key in space if key in params}


def space_problems(space: dict[str, dict[str, Any]], algorithm: str) -> list[str]:
    """`search_space.<key>: ...` for a domain Optuna cannot sample, and an unknown algorithm."""
    problems = []
    for key, domain in space.items():
        kind, values = next(iter(domain.items())) if isinstance(domain, dict) and len(domain) == 1 else (None, None)
        if kind not in KINDS:
            problems.append(f"search_space.{key}: one of {', '.join(KINDS)}, got {domain!r}")
        elif kind != "choice" and not values[0] < values[1]:
            problems.append(f"search_space.{key}: {kind} needs low < high, got {values}")
        elif kind.startswith("log_") and values[0] <= 0:
            problems.append(f"search_space.{key}: {kind} needs low > 0, got {values[0]}")
    if algorithm not in ALGORITHMS:
        problems.append(f"algorithm: one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    return problems


def direction_of(metric: str, direction: str | None) -> str:
    """The objective's direction: as given, else minimize a loss or an error (mae, rmse, ...: metric_direction.py)
    and maximize any other metric."""
    from kflow.components.util.metric_direction import lower_is_better

    if direction:
        return direction
    return "minimize" if lower_is_better(metric) else "maximize"


ALGORITHMS = ("random", "tpe", "hyperband", "successive_halving")


def trial_trainer(trainer: dict[str, Any], trial_epochs: int | None) -> dict[str, Any]:
    """The Trainer's parameters a trial starts from: the trainer's, with tuner.trial_epochs for its epochs where set
    (the best settings are then written with the trainer's own epochs: the Trainer trains them longer)."""
    return {**trainer, "epochs": int(trial_epochs)} if trial_epochs else trainer


def sampler_and_pruner(algorithm: str, seed: int, max_epochs: int) -> tuple[Any, Any]:
    """Optuna's sampler and pruner for `algorithm`: random or TPE sampling without pruning, or TPE with the
    Hyperband or successive-halving pruner, whose resource is the epoch (from 1 to the trainer's epochs). TPE's
    constant liar lets trials running in parallel count as worst-so-far, so that two at a time do not draw the
    same point; it samples at random for 4 trials (Optuna's default is 10), as budgets here are a dozen trials."""
    if algorithm == "random":
        return optuna.samplers.RandomSampler(seed=seed), optuna.pruners.NopPruner()
    sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True, n_startup_trials=4)
    if algorithm == "hyperband":
        return sampler, optuna.pruners.HyperbandPruner(min_resource=1, max_resource=max_epochs, reduction_factor=3)
    if algorithm == "successive_halving":
        return sampler, optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    return sampler, optuna.pruners.NopPruner()
