"""A command's config, loaded with every problem said in one round.

A config's own errors (an unknown field, a value out of range) are found before its data is read, so a config with a
typo in `trainer` and a label its data lacks was refused twice: the typo, then, once fixed, the label (a user trial's
two rounds). Where none of the config's errors is in its `data` section, the data's checks run too, on the config
with the sections in error left at their defaults, and their problems join the same refusal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from kflow.pipeline.app.dataset_training import with_dataset_training
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig, read_config_file, validate_config

# The sections whose errors leave the data's checks nothing to run on: the data itself, and the declared DAG.
_NEEDED = {"data", "components"}


def load_for_command(path: str | Path, overrides: Iterable[str] = ()) -> PipelineConfig:
    """The validated config of `path` with its dataset's training recipe; a ConfigError names every problem."""
    raw = read_config_file(path, list(overrides), default_split)
    try:
        return with_dataset_training(validate_config(raw, str(path)))
    except ConfigError as error:
        raise ConfigError(error.problems + _data_problems(raw, error.problems), error.source) from None


def default_split(dataset: str) -> dict[str, int] | None:
    """The dataset's `data.split` where a config gives none; None for a dataset the registry lacks (refused naming
    data.dataset by the checks): what an override of one share (`--set data.split.train=5`) changes."""
    from kflow.components.datasets import get_dataset

    try:
        return get_dataset(dataset).default_split
    except ValueError:
        return None


def _data_problems(raw: dict, problems: list[str]) -> list[str]:
    """The problems the data's checks find in `raw` without the sections `problems` are in; none where one of them is
    in the data section, or the rest does not make a config."""
    from kflow.pipeline.app.standard_pipeline import build_pipeline

    sections = {_section(problem) for problem in problems}
    if sections & _NEEDED or "data" not in raw:
        return []
    kept = {key: value for key, value in raw.items() if key not in sections}
    try:
        config = with_dataset_training(validate_config(kept))
    except ConfigError:  # a section left out that the rest needs (a required name): the first round's errors stand
        return []
    try:
        build_pipeline(config)
    except ConfigError as error:
        return [problem for problem in error.problems if problem not in problems]
    except Exception:  # noqa: BLE001 - the first round's errors stand alone; the data's are said once they are fixed
        return []
    return []


def _section(problem: str) -> str:
    """The top-level field a problem line names (`trainer.epochs: …` → trainer; `(top level): …` → itself)."""
    return re.split(r"[.:\[ ]", problem, maxsplit=1)[0]
