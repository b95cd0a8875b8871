"""Loading a pipeline config: YAML file → `--set` overrides → JSON Schema validation with defaults.

Errors are `ConfigError`s whose lines name the offending field by its dotted path
(`trainer.epochs: must be ≥ 1`), so the CLI can print them and exit 2.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pydantic
import yaml

from kflow.pipeline.dsl.beam_options import section_beam_args
from kflow.pipeline.dsl.config_data import field_path, plain_data_problems
from kflow.pipeline.dsl.config_model import (
    BeamSection,
    ComponentEntry,
    DataSection,
    EvaluatorSection,
    KflowConfig,
    KubeflowSection,
    OrchestrationSection,
    Section,
    TrackingSection,
    TrainerSection,
    TransformSection,
    TunerSection,
    given,
)
from kflow.pipeline.dsl.config_model.tuning import search_space_problems
from kflow.pipeline.dsl.config_schema import generated_schema
from kflow.pipeline.dsl.config_validation import DefaultFillingValidator, describe_error, did_you_mean
from kflow.pipeline.dsl.config_yaml import read_yaml
from kflow.pipeline.dsl.printable import printable

log = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A config that cannot be used; `problems` holds one `path: message` line each."""

    def __init__(self, problems: list[str], source: str | None = None):
        self.problems = problems
        self.source = source
        # A problem quotes the config (its keys, its values): escaped, it stays one line that a terminal only shows.
        lines = [printable(problem) for problem in problems]
        where = f"{printable(source)}: " if source else ""
        super().__init__(where + ("invalid config:\n  " if len(lines) > 1 else "") + "\n  ".join(lines))


@dataclass(frozen=True)
class PipelineConfig:
    """A validated config with every default filled in: each section the typed object its config model declares
    (`pipeline/dsl/config_model/`), built once, when the config is loaded, and passed down as it is."""

    name: str
    pipeline_root: str
    data: DataSection | None = None  # None only in a config that declares `components`
    trainer: TrainerSection = field(default_factory=TrainerSection)
    evaluator: EvaluatorSection = field(default_factory=EvaluatorSection)
    beam: BeamSection = field(default_factory=BeamSection)
    orchestration: OrchestrationSection = field(default_factory=OrchestrationSection)
    kubeflow: KubeflowSection | None = None  # read by `kflow compile` (pipeline/compiler/settings.py)
    tracking: TrackingSection = field(default_factory=TrackingSection)
    components: list[ComponentEntry] | None = None  # a declared DAG (pipeline/app/declared_pipeline.py)
    tuner: TunerSection | None = None  # a hyperparameter search before the Trainer (components/tuner)
    transform: TransformSection | None = None  # the Transform's settings (components/transform)
    source: str | None = None
    # The dotted fields the config file and its overrides set (`trainer`, `trainer.epochs`, ...), before defaults.
    given_fields: frozenset[str] = frozenset()

    @classmethod
    def from_model(
        cls, model: KflowConfig, source: str | None = None, given_fields: frozenset[str] = frozenset()
    ) -> PipelineConfig:
        """The config's typed sections; the optional ones None when the config leaves them out."""
        sections = {name: given(getattr(model, name)) for name in KflowConfig.model_fields}
        return cls(source=source, given_fields=given_fields, **sections)

    def with_defaults(self, defaults: dict[str, Any]) -> PipelineConfig:
        """This config with `defaults` ({dotted field: value}) in the fields it leaves out, the fields it sets kept:
        a dataset's own training recipe (pipeline/app/dataset_training.py)."""
        sections: dict[str, Any] = {}
        for dotted, value in defaults.items():
            if dotted not in self.given_fields:
                first, *rest = dotted.split(".")
                sections[first] = _with_value(sections.get(first, getattr(self, first)), rest, value)
        return replace(self, **sections) if sections else self

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-like data, every default filled in: what a run records (run.json, MLflow) and what
        a later run compares its own with."""
        fields = {
            "name": self.name,
            "pipeline_root": self.pipeline_root,
            "data": as_data(self.data),
            "trainer": as_data(self.trainer),
            "evaluator": as_data(self.evaluator),
            "beam": as_data(self.beam),
            "orchestration": as_data(self.orchestration),
            "kubeflow": as_data(self.kubeflow),
            "tracking": as_data(self.tracking),
        }
        if self.tuner is not None:  # Only when set: a config without one records the same dict as before.
            fields["tuner"] = as_data(self.tuner)
        if self.transform is not None:  # the same: only when set
            fields["transform"] = as_data(self.transform)
        if self.components is None:
            return fields
        return {**fields, "components": [as_data(entry) for entry in self.components]}

    @property
    def beam_args(self) -> list[str]:
        """The `beam` section (the data components' Beam pipelines) as Beam pipeline arguments; the default runner
        (DirectRunner) is left implicit, so a Python pipeline built without Beam options is the same pipeline as a
        config without a `beam` section."""
        return section_beam_args(self.beam)

    @property
    def orchestration_args(self) -> list[str]:
        """The `orchestration` section (the local DAG runner's own Beam pipeline) as Beam pipeline arguments: apart
        from `beam`, so a distributed runner for the data never ships the Trainer's node to it."""
        return section_beam_args(self.orchestration)


def _with_value(section: Section, path: list[str], value: Any) -> Section:
    name, *rest = path
    return section.model_copy(update={name: _with_value(getattr(section, name), rest, value) if rest else value})


def _dotted_fields(instance: dict[str, Any], prefix: str = "") -> set[str]:
    """The dotted paths of every mapping key in `instance` (the list entries of a declared pipeline not included)."""
    found = set()
    for key, value in instance.items():
        found.add(prefix + str(key))
        if isinstance(value, dict):
            found |= _dotted_fields(value, f"{prefix}{key}.")
    return found


def config_schema() -> dict[str, Any]:
    """The config's JSON Schema, generated from the config model (schemas/config.schema.json is its copy)."""
    return copy.deepcopy(generated_schema())


# A dataset's `data.split` where a config gives none, by the dataset's name (None: no such dataset). The registry
# that knows it is above this layer: a command passes it (config_loading.default_split, in pipeline/app).
SplitDefault = Callable[[str], "dict[str, int] | None"]


def load_config(
    path: str | Path, overrides: Iterable[str] = (), split_default: SplitDefault | None = None
) -> PipelineConfig:
    """Reads a YAML config, applies `a.b=value` overrides, validates it and fills defaults."""
    return validate_config(read_config_file(path, overrides, split_default), str(path))


def read_config_file(
    path: str | Path, overrides: Iterable[str] = (), split_default: SplitDefault | None = None
) -> dict[str, Any]:
    """The YAML mapping of a config file with `a.b=value` overrides applied, not yet validated. An override of one
    share of a split the config leaves out (`data.split.train=5`) changes the dataset's default split
    (`split_default`), its other shares kept, as an override of one field of a section keeps the others' defaults."""
    source = str(path)
    try:
        raw = read_yaml(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError([f"no such config file: {path}"]) from None
    except IsADirectoryError:
        raise ConfigError(["is a folder, not a config file"], source) from None
    except UnicodeDecodeError as error:
        raise ConfigError([f"not UTF-8 text (byte {error.start}: {error.object[error.start]:#04x})"], source) from None
    except OSError as error:
        raise ConfigError([f"cannot be read: {error.strerror or error}"], source) from None
    except yaml.YAMLError as error:
        raise ConfigError([f"not valid YAML: {_one_line(error)}"], source) from None
    if not isinstance(raw, dict):
        raise ConfigError(["(top level): must be a mapping of fields"], source)
    anchor_input_paths(raw, Path(path).resolve().parent)
    overrides = list(overrides)
    by_share = False  # whether data.split holds only the shares overrides set, the dataset's default left out
    for override in overrides:  # Their paths are relative to the current directory, as on a command line.
        by_share = _split_by_share(raw, override, by_share)
        apply_override(raw, override)
    if by_share and split_default is not None:
        _with_default_split(raw["data"], split_default)
    # Anchored too, so a run records where it read whatever the folder it ran from (diff compared '/…/a.csv' with
    # 'data/a.csv', a user trial).
    given = [override.partition("=")[0].strip() for override in overrides]
    anchor_input_paths(raw, Path.cwd(), [field for field in INPUT_PATHS if any(
        field == key or field.startswith(f"{key}.") for key in given)])  # fmt: skip
    return raw


def _split_by_share(raw: dict[str, Any], override: str, by_share: bool) -> bool:
    """Whether, `override` applied, data.split holds only shares overrides set: `data.split.<share>=…` where the
    config leaves data.split out (a whole `data.split={…}` or `data={…}` is the split as given)."""
    key = override.partition("=")[0].strip()
    if key in ("data", "data.split"):
        return False
    data = raw.get("data")
    return by_share or (key.startswith("data.split.") and not (isinstance(data, dict) and "split" in data))


def _with_default_split(data: dict[str, Any], split_default: SplitDefault) -> None:
    """`data.split`'s shares set by overrides over the dataset's default split ({train: 5} → {train: 5, eval: 1,
    test: 1} for csv); left as it is for a dataset the registry lacks (refused naming data.dataset)."""
    dataset, split = data.get("dataset"), data.get("split")
    default = split_default(dataset) if isinstance(dataset, str) else None
    if default and isinstance(split, dict):
        data["split"] = {**default, **split}


# The fields that name what a run reads: relative values in a config file are relative to its folder, so the
# config works from any directory. pipeline_root, what a run writes, stays relative to the current directory.
INPUT_PATHS = ("data.source.path", "data.schema", "trainer.module", "evaluator.baseline", "transform.module",
               "trainer.warm_start")  # fmt: skip
_NOT_PATHS = {"evaluator.baseline": ("latest_blessed", "none"), "trainer.warm_start": ("latest_blessed", "none")}


def anchor_input_paths(raw: dict[str, Any], folder: Path, fields: Iterable[str] = INPUT_PATHS) -> None:
    for dotted in fields:
        section, name = _section_of(raw, dotted)
        value = section.get(name) if section is not None else None
        if isinstance(value, str) and is_relative_local_path(value, dotted):
            section[name] = str(folder / value)


def _section_of(raw: dict[str, Any], dotted: str) -> tuple[dict[str, Any] | None, str]:
    """(the mapping that holds `a.b.c`'s last part, that part); None when a parent is missing or not a mapping."""
    *parents, name = dotted.split(".")
    section: Any = raw
    for part in parents:
        section = section.get(part) if isinstance(section, dict) else None
    return (section if isinstance(section, dict) else None), name


def is_relative_local_path(value: str, field: str) -> bool:
    if not value or value in _NOT_PATHS.get(field, ()) or "://" in value or value.startswith(("/", "~")):
        return False
    # trainer.module is a .py file or an importable `package.module`; trainer.warm_start a run id or a folder's path.
    if field == "trainer.warm_start":
        return "/" in value
    return field != "trainer.module" or value.endswith(".py") or "/" in value


def _one_line(error: yaml.YAMLError) -> str:
    """'line 3, column 8: the alias *a is not allowed …' instead of PyYAML's four lines with a caret."""
    mark, problem = getattr(error, "problem_mark", None), getattr(error, "problem", None)
    if mark is None or problem is None:
        return " ".join(str(error).split())
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


def read_value(text: str) -> Any:
    """A `--set` value read as YAML (`5` an int, `[1, 2]` a list); text YAML cannot read stays text."""
    try:
        return read_yaml(text) if text else ""
    except yaml.YAMLError:
        return text


def apply_override(config: dict[str, Any], override: str) -> None:
    """Sets `a.b.c=value` in place; the value is read as YAML (`5` is an int, `[1, 2]` a list)."""
    key, sep, text = override.partition("=")
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError([f"--set {override!r}: expected FIELD.PATH=VALUE, e.g. trainer.epochs=5"])
    value = read_value(text)
    parts = key.split(".")
    node: Any = config
    for depth, part in enumerate(parts[:-1]):
        if isinstance(node, list):  # components.<id>.…: a list of mappings is addressed by their `id`
            node = _entry_with_id(node, part, override)
            continue
        child = node.setdefault(part, {})
        if not isinstance(child, (dict, list)):
            raise ConfigError([f"--set {override!r}: {'.'.join(parts[: depth + 1])} is not a mapping"])
        node = child
    if isinstance(node, list):
        raise ConfigError([f"--set {override!r}: set a field of an entry, e.g. components.train.parameters.epochs=3"])
    node[parts[-1]] = value


def _entry_with_id(entries: list[Any], entry_id: str, override: str) -> dict[str, Any]:
    for entry in entries:
        if isinstance(entry, dict) and entry.get("id") == entry_id:
            return entry
    ids = [str(entry.get("id")) for entry in entries if isinstance(entry, dict)]
    raise ConfigError(
        [f"--set {override!r}: no entry with id {entry_id!r}{did_you_mean(entry_id, ids)} (ids: {', '.join(ids)})"]
    )


# {former dotted field: field}: a config that still uses the former name is read with a warning.
RENAMED_FIELDS = {"data.task": "data.problem_type"}


def rename_fields(instance: dict[str, Any], source: str | None = None, warn: bool = True) -> None:
    """Moves each former field of `instance` to its name, in place (`warn=False`: a config an earlier run recorded)."""
    for former, name in RENAMED_FIELDS.items():
        section, old_key = _section_of(instance, former)
        if section is None or old_key not in section:
            continue
        new_key = name.rsplit(".", 1)[-1]
        if new_key in section:
            raise ConfigError([f"{former}: is the former name of {name}; keep {name}"], source)
        if warn:
            log.warning("%s: %s is now called %s; the former name will go in a later release", source or "config",
                        former, name)  # fmt: skip
        section[new_key] = section.pop(old_key)


def validate_config(raw: dict[str, Any], source: str | None = None) -> PipelineConfig:
    if problems := plain_data_problems(raw):  # first: the schema's validator and deepcopy recurse, nan passes them
        raise ConfigError(problems, source)
    instance = copy.deepcopy(raw)
    rename_fields(instance, source)
    given_fields = frozenset(_dotted_fields(instance))  # before the validator fills in the defaults
    validator = DefaultFillingValidator(config_schema())
    errors = sorted(validator.iter_errors(instance), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    problems = sorted({line for error in errors for line in describe_error(error)})
    problems += search_space_problems(instance)
    if "data" not in instance and "components" not in instance:
        problems.append("data: is required (or declare the pipeline's components)")
    if problems:
        raise ConfigError(problems, source)
    return PipelineConfig.from_model(typed(KflowConfig, instance, source), source, given_fields)


def typed(model: type[Section], instance: dict[str, Any], source: str | None = None, where: str = "") -> Any:
    """`instance`, checked against the schema generated from `model`, as that model's object. The schema's check
    names each problem in one line; one the model alone refuses is a ConfigError too, its field named."""
    try:
        return model.model_validate(instance)
    except pydantic.ValidationError as error:
        problems = [
            f"{field_path([*filter(None, [where]), *problem['loc']])}: {problem['msg'].removeprefix('Value error, ')}"
            for problem in error.errors()
        ]
        raise ConfigError(problems, source) from None


def as_data(section: Section | None) -> dict[str, Any]:
    """A section as the JSON-like mapping a config file writes (field names as written: `schema`, `from`), its
    defaults filled in; {} for a section the config leaves out."""
    return {} if section is None else section.model_dump(mode="json", by_alias=True)
