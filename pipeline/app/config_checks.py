"""The checks a config must pass beyond its JSON Schema: those that span fields or need a registry.

Each check is a small function returning `path: message` lines (Metaflow's lint style);
`check_config` runs them all and raises one ConfigError listing every problem, so that
`kflow validate` reports everything `kflow run` and `kflow compile` would refuse, at once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kflow.components.datasets import DATASETS, get_dataset
from kflow.pipeline.app.dataset_settings import settings_problems
from kflow.pipeline.app.trainer_checks import model_problems, strategy_problems
from kflow.pipeline.app.transform_section import preprocessing_problems
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig, as_data, did_you_mean
from kflow.pipeline.dsl.config_model import DataSection, FiltersSection, default_of, given

# The data.filters fields some dataset takes (every ingest takes max_invalid_fraction), with their declared defaults:
# a field left at its default is "not set".
FILTER_DEFAULTS = {
    name: default_of(FiltersSection, name) for name in FiltersSection.model_fields if name != "max_invalid_fraction"
}

VALIDATION_FIELDS = ("schema", "on_anomaly")  # Only for datasets that validate their data (Dataset.validates_data).
# The data fields only some datasets take (components/datasets/bundle.py: Dataset.data_fields): the declared ones
# but those every dataset has and those of data validation.
_COMMON_DATA_FIELDS = ("dataset", "source", "filters", "split", "shards_per_split", "settings")
_COMMON_DATA_FIELDS += ("spans", "on_drift", "drift")  # Data over time: components/ingest spans, drift checks.
DATA_FIELDS = tuple(
    field.alias or name
    for name, field in DataSection.model_fields.items()
    if (field.alias or name) not in (*_COMMON_DATA_FIELDS, *VALIDATION_FIELDS)
)

Check = Callable[[PipelineConfig], list[str]]


def _dataset(config: PipelineConfig) -> list[str]:
    name = config.data.dataset
    if name in DATASETS:
        return []
    return [f"data.dataset: unknown dataset {name!r}{did_you_mean(name, DATASETS)} (registered: {', '.join(DATASETS)})"]


def _splits(config: PipelineConfig) -> list[str]:
    dataset = get_dataset(config.data.dataset)
    split = given(config.data.split) or dataset.default_split
    if config.data.split_files:
        return []  # The source's own files decide (tfrecord).
    if not dataset.source_test_split and "test" not in split:
        if typos := [name for name in split if name not in ("train", "eval") and did_you_mean(name, ["test"])]:
            return [f"data.split.{typos[0]}: no such split; did you mean test? ({dataset.name} needs a test share)"]
        return [
            f"data.split.test: {dataset.name}'s source has no labelled test split; "
            "give it a share, e.g. {train: 8, eval: 1, test: 1}"
        ]
    unusable = sorted(set(split) - {"train", "eval"})
    if dataset.source_test_split and unusable:
        return [
            f"data.split: {dataset.name} uses its source's own test split, so it cannot use {unusable} "
            f"(data.split.test is for datasets without one, such as quora)"
        ]
    return []


def _filters(config: PipelineConfig) -> list[str]:
    dataset, filters = get_dataset(config.data.dataset), config.data.filters
    return [
        f"data.filters.{name}: not used by {dataset.name} (it takes: {', '.join(dataset.filters) or 'none'})"
        for name, default in FILTER_DEFAULTS.items()
        if name not in dataset.filters and getattr(filters, name) != default
    ]


def _data_fields(config: PipelineConfig) -> list[str]:
    dataset, written = get_dataset(config.data.dataset), as_data(config.data)
    taken = ", ".join(dataset.data_fields) or "none"
    problems = [
        f"data.{field}: not used by {dataset.name} (its extra data fields: {taken})"
        for field in DATA_FIELDS
        if field not in dataset.data_fields and written[field] is not None
    ]
    problems += [
        f"data.{field}: {dataset.name} does not validate its data (statistics, schema, anomalies); csv, tfrecord and "
        "tfds do"
        for field in VALIDATION_FIELDS
        if not dataset.validates_data and written[field] is not None
    ]
    if "label" in dataset.required_data_fields and config.data.label is None:
        problems.append(f"data.label: {dataset.name} needs the column to predict, e.g. data.label: species")
    return problems


def _ingest_parameters(config: PipelineConfig) -> list[str]:
    """The ingest's required parameters that the config leaves unset (data.source.path, data.tfds, …), named by
    the config field that sets each (pipeline/app/sections.py: ingest_parameters), so that building the pipeline
    never stops on Component's MissingParameter."""
    from kflow.pipeline.app.sections import ingest_parameters

    dataset = get_dataset(config.data.dataset)
    parameters, spec = ingest_parameters(config), dataset.ingest_component().spec
    fields = {"source_path": "source.path", "source_format": "source.format", "max_records": "source.max_records"}
    fields |= {name: f"filters.{name}" for name in dataset.filters}
    fields |= {name: field for field, name in dataset.data_fields.items()}
    return [
        f"data.{fields.get(name, name)}: required by the {dataset.name} dataset: {parameter.description or name}"
        for name, parameter in spec.parameters.items()
        if parameter.required
        and parameters.get(name) is None
        # _data_fields names a missing label with an example.
        and not (name == "label" and "label" in dataset.required_data_fields)
    ]


def _metric_meant(metric: str, names: list[str]) -> str:
    """ "; did you mean X?": a metric the name is a part of (auc → roc_auc, f1 → macro_f1), else a close one."""
    within = [name for name in names if metric.lower() in name.split("_")]
    return f"; did you mean {within[0]}?" if within else did_you_mean(metric, names)


def _evaluator(config: PipelineConfig) -> list[str]:
    dataset = get_dataset(config.data.dataset)
    metrics = dataset.metrics_class()
    # A task's own metrics where the config names it (a classification lists no rmse), else the dataset's.
    by_kind = getattr(metrics, "BY_KIND", {})
    kind = config.data.problem_type if config.data.problem_type in by_kind else None
    names = list(by_kind[kind] if kind else metrics.SCALARS)
    problems = [
        f"evaluator.thresholds.{metric}: no such metric{f' of a {kind}' if kind else ''}"
        f"{_metric_meant(metric, names)} (metrics: {', '.join(names)})"
        for metric in config.evaluator.thresholds
        if not metrics.known_threshold(metric)
    ]
    problems += [
        f"evaluator.slices[{index}].by: {dataset.name} slices by {', '.join(metrics.SLICES)}, not {spec.by!r}"
        for index, spec in enumerate(config.evaluator.slices)
        if spec.by not in metrics.SLICES and not metrics.SLICES_BY_FEATURE
    ]
    splits = _output_splits(config)
    echo = config.evaluator.split == "test" and any(line.startswith("data.split") for line in _splits(config))
    if splits and config.evaluator.split not in splits and not echo:  # not the echo of data.split's problem
        split = config.evaluator.split
        problems.append(f"evaluator.split: the ingest writes no split {split!r}{did_you_mean(split, splits)} "
                        f"(splits: {', '.join(sorted(splits))})")  # fmt: skip
    return problems


def _output_splits(config: PipelineConfig) -> set[str] | None:
    """The splits the ingest writes, where the config says (data.split, and the source's own test split); None where
    the source's files or a TFDS dataset's split specs decide."""
    if config.data.split_files or config.data.tfds is not None or config.data.source.format == "tfds":
        return None
    dataset = get_dataset(config.data.dataset)
    split = given(config.data.split) or dataset.default_split
    return set(split) | ({"test"} if dataset.source_test_split else set())


def source_facts(config: PipelineConfig, *, check_others: bool = True) -> Any | None:
    """What the ingest's first look at the source finds (columns, types, the task and why it was inferred), where
    it can look (csv, parquet, tfrecord); None where it has nothing to say (images: it checks the source is there).
    Raises the ValueError or OSError the ingest would."""
    from kflow.components.ingest.spans import has_spans
    from kflow.pipeline.app.sections import ingest_parameters
    from kflow.pipeline.app.span_pipeline import newest_span_source

    dataset = get_dataset(config.data.dataset)
    try:
        parameters = ingest_parameters(config)
        if has_spans(parameters.get("source_path")):  # the newest span's files; none: span_problems says why
            parameters["source_path"] = newest_span_source(config)
            if parameters["source_path"] is None:
                return None
        ingest = dataset.ingest_component()("ingest", parameters=parameters)
    except (ValueError, TypeError):
        return None  # Named by the other checks.
    if hasattr(ingest, "inspect_source"):
        return ingest.inspect_source()
    if not check_others:  # checked already (its warnings said once)
        return None
    problems = ingest.check_parameters()  # an ingest that looks at its source without facts to say (images)
    if problems:
        raise ValueError(problems[0])
    return None


def _source(config: PipelineConfig) -> list[str]:
    """What the ingest would refuse in the data itself (no such file; a label, key or column the header lacks; a
    task it cannot infer) and thresholds or slices the data cannot have, from the first file's header and
    sample, where the ingest can look (csv); of spans, each span's header first (span_headers.py)."""
    from kflow.pipeline.app.span_headers import span_header_problems

    if headers := span_header_problems(config):  # a span lacking the label: said naming it, not the sample's facts
        return headers
    dataset = get_dataset(config.data.dataset)
    try:
        facts = source_facts(config)
        if facts is None:
            return []
    except ValueError as error:  # its message names the field
        return [str(error) or f"data.source.path: cannot be read ({type(error).__name__})"]
    except OSError as error:  # the OS's message names a file, not the field (a name too long, a folder unreadable)
        return [f"data.source.path: cannot be read ({error.strerror or error})"]
    metrics = dataset.metrics_class()
    # An inferred task says so, and why: the user set no data.problem_type and may disagree with the rule.
    inferred = f" (data.problem_type not set: {facts.problem_type}, as {facts.problem_type_reason})"
    problems = [
        f"evaluator.thresholds.{metric}: {problem}{inferred if facts.problem_type_reason else ''}"
        for metric in config.evaluator.thresholds
        if (problem := metrics.threshold_problem(metric, facts.problem_type, facts.labels))
    ]
    slices = [spec.by for spec in config.evaluator.slices]
    # The key and a column of row names or numbers name records, they are no features: the Evaluator could not slice
    # by them; the label's column is sliced by `label`.
    from kflow.components.datasets.tabular.examples import ROW_NAME_COLUMNS

    not_features = {column: "the row names" for column in facts.header if column in ROW_NAME_COLUMNS}
    not_features |= {config.data.key: "the data.key", facts.numbered: "the row numbers"}
    not_features[config.data.label] = "the label (slice by label)"
    features = [column for column in facts.header if column not in not_features]
    problems += _backend_problems(config, dataset, {column: facts.types.get(column, "string") for column in features})
    problems += [
        (
            f"evaluator.slices[{index}].by: {by!r} is {not_features[by]}, not a feature"
            if by in not_features
            else f"evaluator.slices[{index}].by: no column {by!r} in the data{did_you_mean(by, features)}"
        )
        + f" (slice by: {', '.join(['label', *features])})"
        for index, by in enumerate(slices)
        if by not in features and by != "label"
    ]
    from kflow.components.datasets.tabular.dataset import INFER_ROWS

    infer_rows = config.data.infer_rows or INFER_ROWS
    whole = 0 < facts.sampled < infer_rows and _one_file(config)  # the sample is the whole table
    problems += [
        f"evaluator.slices[{index}].boundaries: {spec.by!r} is text; boundaries cut a column of numbers (left out, "
        "its slices are its values)"
        for index, spec in enumerate(config.evaluator.slices)
        if isinstance(getattr(spec, "boundaries", None), list) and facts.types.get(spec.by) == "string"
    ]
    problems += [  # the Evaluator's refusal, after training: a slice per distinct decimal is no slice
        f"evaluator.slices[{index}].boundaries: slicing by the non-integer feature {spec.by!r} needs boundaries, "
        "e.g. [0, 10, 100]"
        for index, spec in enumerate(config.evaluator.slices)
        if not given(getattr(spec, "boundaries", None)) and facts.types.get(spec.by) == "float"
    ]
    allowed = config.data.filters.max_invalid_fraction
    if whole and facts.repeated_keys > allowed * facts.sampled:  # the ingest rejects each, then fails over the share
        problems.append(f"data.key: {config.data.key!r} repeats in {facts.repeated_keys} of the {facts.sampled} "
                        f"records, more than data.filters.max_invalid_fraction ({allowed:g}) allows: each is "
                        "rejected as duplicate_key")  # fmt: skip
    if facts.sampled == 0 and _one_file(config):  # the ingest: "holds no records"
        problems.append(f"data.source.path: {config.data.source.path} holds no records"
                        f"{' after its header' if config.data.dataset == 'csv' else ''}")  # fmt: skip
    elif whole and not facts.labels:  # the ingest leaves out every record as missing_label
        problems.append(f"data.label: {config.data.label!r} has no value in any of the {facts.sampled} records: "
                        "nothing to learn from (is it the column to predict?)")  # fmt: skip
    elif facts.problem_type == "classification" and len(facts.labels) == 1 and whole:
        # The sample is the whole table (fewer rows than it takes): the Transform refused one class after the ingest.
        problems.append(f"data.label: {config.data.label!r} holds one value, {facts.labels[0]!r}, in every record "
                        "that has one: a classifier needs at least two classes")  # fmt: skip
    problems += preprocessing_problems(config, facts, dict(not_features))
    return problems + _validation_metrics(config, facts.problem_type)


def _backend_problems(config: PipelineConfig, dataset: Any, input_types: dict[str, str]) -> list[str]:
    """The Trainer's refusal of a strategy whose backend cannot train a model of these columns (a table's strings
    under JAX), said before the ingest."""
    from kflow.components.trainer.strategies import STRATEGIES

    name = config.trainer.strategy
    if name not in STRATEGIES or STRATEGIES[name].backend in dataset.backend_limits:  # strategy_problems says so
        return []
    backend = STRATEGIES[name].backend
    limit = dataset.backend_problem(backend, input_types)
    return [f"trainer.strategy: {name} trains on {backend}, where this table cannot: {limit}"] if limit else []


def _one_file(config: PipelineConfig) -> bool:
    """Whether the data is one file (not a folder, a glob's files or spans): what the sample of its first file saw."""
    from kflow.components.ingest.spans import has_spans
    from kflow.pipeline.app.sections import ingest_parameters

    path = ingest_parameters(config).get("source_path")
    return bool(path) and not has_spans(path) and Path(path).is_file()


def _validation_metrics(config: PipelineConfig, problem_type: str | None) -> list[str]:
    """A tuner objective or an early-stopping monitor that the training does not report (the search failed after
    every trial; the Trainer after the ingest): a table task's metrics, or those of trainer.module's metrics()."""
    from kflow.components.datasets.tabular.dataset import TRAINING_METRICS

    if _module_metrics(config):
        known = _metrics_of_module(config)
        reports = f"with {Path(config.trainer.module).name}'s metrics() the training reports"
    elif problem_type in TRAINING_METRICS:
        known = ["val_loss", *(f"val_{name}" for name in TRAINING_METRICS[problem_type])]
        reports = f"a {problem_type} trains with"
    else:
        known = None
    if known is None:
        return []
    watched = {"trainer.early_stopping_monitor": config.trainer.early_stopping_monitor}
    if config.tuner is not None:
        watched["tuner.objective.metric"] = config.tuner.objective.metric
    return [
        f"{field}: {reports} {', '.join(known)}, not {metric}{_monitor_meant(metric, known)}"
        for field, metric in watched.items()
        if metric is not None and metric not in known
    ]


def _monitor_meant(metric: str, known: list[str]) -> str:
    """ "; did you mean X?": the name the metric spells out (val_acc of val_accuracy: a metric named `acc`), else a
    close one (difflib took val_auc for val_accuracy)."""
    spelt = [name for name in known if metric.startswith(name)]
    return f"; did you mean {max(spelt, key=len)}?" if spelt else did_you_mean(metric, known)


def _module_metrics(config: PipelineConfig) -> bool:
    """Whether trainer.module names its own validation metrics (its metrics()), or may: one validate cannot read.
    A module without metrics() trains with the task's."""
    from kflow.components.datasets.module_source_checks import defines
    from kflow.pipeline.app.trainer_checks import module_tree

    if not config.trainer.module:
        return False
    tree = module_tree(config)
    return tree is None or defines(tree, "metrics")


def _metrics_of_module(config: PipelineConfig) -> list[str] | None:
    """The names trainer.module's metrics() makes the training report, when a monitor or an objective is set to
    check against them; None when there is none to check, or validate cannot tell (module_metrics.py): a module it
    refuses as it is (said by _trainer_settings), a metrics() that takes arguments or raises."""
    from kflow.pipeline.app.module_metrics import module_metric_names
    from kflow.pipeline.app.trainer_checks import module_tree

    watched = config.trainer.early_stopping_monitor or (config.tuner is not None and config.tuner.objective.metric)
    if not watched or module_tree(config) is None:
        return None
    return module_metric_names(config.trainer.module)


def _spans(config: PipelineConfig) -> list[str]:
    """A span pattern kflow cannot read, one that matches no file, a data.spans that selects none."""
    from kflow.pipeline.app.span_pipeline import span_problems

    return span_problems(config)


def _frozen_schema(config: PipelineConfig) -> list[str]:
    """A data.schema that is no file, or no TensorFlow Metadata schema: the schema component refused it after the
    ingest and the statistics had run."""
    if not config.data.schema_:
        return []
    from kflow.components.util.schema import load_schema
    from kflow.pipeline.app.sections import absolute

    path = Path(absolute(config.data.schema_))
    if not path.is_file():
        return [f"data.schema: {path} is not a file"]
    try:
        load_schema(path)
    except (ValueError, OSError, UnicodeDecodeError) as error:
        return [f"data.schema: {str(error).splitlines()[0]}"]
    return []


# Checks after the first need a registered dataset.
CHECKS: tuple[Check, ...] = (
    _splits, _filters, _data_fields, settings_problems, _ingest_parameters, strategy_problems, model_problems,
    _evaluator, _spans, _source, _frozen_schema,
)  # fmt: skip


def check_config(config: PipelineConfig, *, local_data: bool = True) -> None:
    """Raises one ConfigError with every problem the checks find. `local_data=False` (compiling for a cluster,
    whose pods read the data) leaves out the checks that read the data's source on this machine."""
    problems = _dataset(config)
    if not problems:
        local = (_source, _spans, _frozen_schema)
        checks = CHECKS if local_data else tuple(check for check in CHECKS if check not in local)
        problems = [problem for check in checks for problem in check(config)]
    else:
        problems += strategy_problems(config)
    if problems:
        raise ConfigError(problems, config.source)
