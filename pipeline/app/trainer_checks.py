"""The config checks of the `trainer` section (config_checks.py runs them with the others): a registered strategy and
what it takes, a model that trains on the dataset and the options it takes (set, or searched by the tuner), and what
the Trainer refuses when it parses its parameters."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from kflow.components.datasets import DATASETS, get_dataset
from kflow.components.trainer.strategies import STRATEGIES
from kflow.pipeline.dsl.config import PipelineConfig, as_data, did_you_mean
from kflow.pipeline.dsl.config_model import given


def strategy_problems(config: PipelineConfig) -> list[str]:
    name, devices = config.trainer.strategy, config.trainer.devices
    if name in STRATEGIES:
        # The schema keeps trainer.workers and trainer.parameter_servers at 1 or more.
        strategy, problems = STRATEGIES[name], []
        if devices is not None and not strategy.devices:
            able = ", ".join(spec.name for spec in STRATEGIES.values() if spec.devices)
            problems.append(f"trainer.devices: strategy {name} does not take a device count (only {able})")
        if config.trainer.sidecar_evaluator and not strategy.takes_sidecar_evaluator:
            able = ", ".join(spec.name for spec in STRATEGIES.values() if spec.takes_sidecar_evaluator)
            problems.append(f"trainer.sidecar_evaluator: strategy {name} has no sidecar evaluator (only {able})")
        dataset = get_dataset(config.data.dataset) if config.data.dataset in DATASETS else None
        if dataset is not None and (limit := dataset.backend_problem(strategy.backend)):
            problems.append(
                f"trainer.strategy: {name} trains on {strategy.backend}, where {dataset.name} cannot: {limit}"
            )
        return problems or _batch_problems(config, strategy) or _trainer_settings(config)
    choices = ", ".join(STRATEGIES)
    return [f"trainer.strategy: unknown strategy {name!r}{did_you_mean(name, STRATEGIES)} (registered: {choices})"]


# The strategies whose replicas each take an equal share of the global batch (check_batch of their runtimes).
SPLIT_BATCH = {"mirrored", "multi_worker_mirrored", "keras_data_parallel", "jax_data_parallel"}


def _batch_problems(config: PipelineConfig, strategy: Any) -> list[str]:
    """A trainer.batch_size (set, or searched) that the strategy's replicas cannot share equally: each worker
    refused it at its start and the cluster was restarted on it (mirrored: a raw shape error mid-step)."""
    if strategy.name not in SPLIT_BATCH:
        return []
    trainer = config.trainer
    workers = trainer.workers if strategy.multi_process else 1
    devices = (trainer.devices or 1) if strategy.devices else 1
    replicas = workers * devices
    if replicas < 2:
        return []
    made = f"{workers} worker(s) × {devices} device(s)"
    domain = tuner.search_space.get("trainer.batch_size") if (tuner := given(config.tuner)) else None
    sizes = [("trainer.batch_size", trainer.batch_size)]
    sizes += [(f"tuner.search_space.trainer.batch_size.{kind}", value) for kind, value in _domain_values(domain)]
    return [
        f"{field}: {size} is not a multiple of the {replicas} replicas of strategy {strategy.name} ({made}), which "
        f"share each batch equally; take {size - size % replicas or replicas} or {size - size % replicas + replicas}"
        for field, size in sizes
        if isinstance(size, int) and size % replicas
    ]


def model_problems(config: PipelineConfig) -> list[str]:
    """A registered model that does not train on the dataset's task, or model options neither takes (the Trainer
    refused them after the ingest: a TypeError from the model's builder, or the task's unknown options)."""
    dataset = get_dataset(config.data.dataset)
    if config.trainer.module:  # the user's build_model decides what it takes, but the task's own options
        return _module_options(config, set(dataset.model_options or ()))
    model, problems = config.trainer.model, []
    if model and dataset.models and model not in dataset.models:
        problems.append(f"trainer.model: {model} does not train on {dataset.name} (its models: "
                        f"{', '.join(dataset.models)})")  # fmt: skip
    if dataset.model_options is not None:
        taken = dataset.model_options
        problems += [
            f"trainer.model_options.{name}: {dataset.name} takes no such option{did_you_mean(name, taken)} "
            f"(it takes: {', '.join(taken)})"
            for name in config.trainer.model_options
            if name not in taken
        ]
        searched = tuner.search_space if (tuner := given(config.tuner)) is not None else {}
        prefix = "trainer.model_options."
        problems += [  # every trial failed on it, after the ingest
            f"tuner.search_space.{key}: {dataset.name} takes no such option{did_you_mean(name, taken)} "
            f"(it takes: {', '.join(taken)})"
            for key in searched
            if key.startswith(prefix) and (name := key.removeprefix(prefix)) not in taken
        ]
        problems += _searched_options(config, searched)
    return problems


def module_tree(config: PipelineConfig) -> ast.Module | None:
    """The syntax of trainer.module (None: no module, or one refused as it is: _trainer_settings says why)."""
    from kflow.components.datasets.user_module import module_problems, read_module_source

    module = config.trainer.module
    if not module or module_problems(module):
        return None
    return ast.parse(read_module_source(module), module)


def _module_options(config: PipelineConfig, dataset_options: set[str]) -> list[str]:
    """A model option set or searched that the module's build_model never reads, where it reads its options by
    name only (module_source_checks.options_read): every run or trial trained without it, silently. The dataset's
    own options (Quora's max_tokens, a table's class_weighting: its task reads them) are not the module's to read."""
    from kflow.components.datasets.module_source_checks import options_read

    tree = module_tree(config)
    read = options_read(tree) if tree is not None else None
    if read is None:
        return []
    prefix = "trainer.model_options."
    searched = tuner.search_space if (tuner := given(config.tuner)) is not None else {}
    fields = [(f"{prefix}{name}", name) for name in config.trainer.model_options]
    fields += [(f"tuner.search_space.{key}", key.removeprefix(prefix)) for key in searched if key.startswith(prefix)]
    module = Path(config.trainer.module).name
    return [
        f"{field}: {module}'s build_model never reads options[{name!r}]{did_you_mean(name, read)} (it reads: "
        f"{', '.join(sorted(read)) or 'none'})"
        for field, name in fields
        if name not in read and name not in dataset_options
    ]


def _searched_options(config: PipelineConfig, searched: dict[str, Any]) -> list[str]:
    """A searched model option's choice, low or high that the model refuses (hidden_units [0], dropout 1.5): every
    trial it drew failed on it, after the ingest; checked as the option set directly is (option_problems)."""
    from kflow.components.models import option_problems

    problems, prefix = [], "trainer.model_options."
    for key, domain in searched.items():
        if not key.startswith(prefix):
            continue
        for kind, value in _domain_values(domain):
            for _, problem in option_problems(config.trainer.model, {key.removeprefix(prefix): value}):
                problems.append(f"tuner.search_space.{key}.{kind}: {problem}")
    return problems


def _domain_values(domain: Any) -> list[tuple[str, Any]]:
    """(kind, value) of each value a search domain names: a choice's, a range's low and high; none of no domain."""
    kinds = as_data(domain).items() if domain is not None else ()
    return [(kind, value) for kind, values in kinds for value in (values if isinstance(values, list) else ())]


def _trainer_settings(config: PipelineConfig) -> list[str]:
    """What the Trainer itself refuses when it parses its parameters (e.g. a layout map naming no mesh axis)."""
    from kflow.components.datasets.user_module import module_problems
    from kflow.components.trainer.config import SettingError, TrainerSettings
    from kflow.pipeline.app.sections import trainer_field, trainer_parameters

    parameters = trainer_parameters(config)
    try:
        TrainerSettings.from_parameters(parameters)
    except SettingError as error:  # its parameter, or a path inside one: trainer.model_options.hidden_units
        return [f"{trainer_field(error.parameter)}: {error.problem}"]
    except (ValueError, TypeError) as error:
        return [f"trainer: {error}"]
    module = parameters.get("module")
    return [f"trainer.module: {problem}" for problem in module_problems(module)] if module else []
