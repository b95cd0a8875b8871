"""`kflow compile` and `kflow submit`: the config → the compiled pipeline.yaml → a run on KFP."""

from __future__ import annotations

import argparse
import glob
import sys
import tempfile
import time
from pathlib import Path

from kflow.pipeline.app.config_loading import default_split
from kflow.pipeline.app.dataset_training import with_dataset_training
from kflow.pipeline.app.pod_paths import node_path_warnings
from kflow.pipeline.app.runtime_parameters import (
    compile_only_problems,
    kubeflow_section_problems,
    run_arguments,
    runtime_parameters,
)
from kflow.pipeline.app.standard_pipeline import build_pipeline, run_time_baselines
from kflow.pipeline.compiler.pipeline_builder import compile_pipeline
from kflow.pipeline.compiler.settings import IMAGE_REQUIRED, KubeflowSettings, load_compile_config
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.kubeflow.baselines import store_path


def _compile_config(path: str, overrides: list[str], image: str | None) -> tuple[PipelineConfig, KubeflowSettings]:
    """The config to compile, with its dataset's training recipe (dataset_training.py), and its `kubeflow` section."""
    config, settings = load_compile_config(path, overrides, image, require_image=False, split_default=default_split)
    return with_dataset_training(config), settings


def _compiled_pipeline(config: PipelineConfig, settings: KubeflowSettings) -> Pipeline:
    """The pipeline to compile; one ConfigError with every problem: the image, credentials, the checks `kflow
    validate` makes (those that read the data where its source is readable here: the pods read it, but a source
    this machine reads is the same one, and a config refused here would fail on the cluster), resources."""
    problems = [] if settings.image else [IMAGE_REQUIRED]
    problems += compile_only_problems(config)
    try:
        pipeline = build_pipeline(config, local_data=_readable_here(config))
    except ConfigError as error:
        raise ConfigError(problems + error.problems, config.source) from None
    problems += kubeflow_section_problems(config, pipeline, settings)
    if problems:
        raise ConfigError(problems, config.source)
    return pipeline


def _readable_here(config: PipelineConfig) -> bool:
    """Whether the data's source is a path this machine reads (not an object store's, nor absent here)."""
    source = config.data.source.path if config.data and config.data.source else None
    return isinstance(source, str) and "://" not in source and bool(glob.glob(str(Path(source).expanduser())))


def compile_config(config_path: str, output: str | Path, overrides: list[str], image: str | None = None) -> Path:
    """Compiles a config file to KFP v2 IR YAML at `output`."""
    config, settings = _compile_config(config_path, overrides, image)
    pipeline = _compiled_pipeline(config, settings)
    warnings = local_path_warnings(config, settings.cluster.shared_mount_path)
    for warning in warnings + node_path_warnings(pipeline, settings.cluster.shared_mount_path, warnings):
        print(f"kflow: warning: {warning}", file=sys.stderr)
    runtime = runtime_parameters(config, pipeline, settings.parameters)
    baselines = run_time_baselines(config)
    if baselines:
        volume = settings.cluster
        print(
            f"{', '.join(baselines)}: compares with the latest blessed model, kept on the volume claim "
            f"{volume.shared_volume_claim!r} at {store_path(volume.shared_mount_path, config.name)} "
            "(kflow manifests writes it; evaluator.baseline: none compiles without it)",
            file=sys.stderr,
        )
    if config.components is None and config.trainer.warm_start == "latest_blessed":
        print(COMPILED_WARM_START, file=sys.stderr)
    spans = _compiled_spans(config)
    if spans:
        print(spans, file=sys.stderr)
    return compile_pipeline(pipeline, settings, output, runtime, baselines)


# What a compiled Trainer does under trainer.warm_start: latest_blessed: no task resolves it (pipeline/app/warm_start.py
# resolves it among the local runs, when `kflow run` is about to train), so warm_start_model_uri stays unset.
COMPILED_WARM_START = (
    "train: trains from scratch on every run: a compiled pipeline resolves no earlier model for trainer.warm_start: "
    "latest_blessed (kflow run resolves it among its local runs; trainer.warm_start: none compiles without this note)"
)


def _compiled_spans(config: PipelineConfig) -> str | None:
    """The note of a compiled pipeline of spans: it reads the spans found now, in every run (a schedule's too)."""
    from kflow.pipeline.app.span_pipeline import resolve_spans

    if config.data is None or config.data.source is None or "://" in str(config.data.source.path):
        return None
    try:
        resolved = resolve_spans(config)
    except (ValueError, OSError):
        return None
    if not resolved:
        return None
    chosen = ", ".join(span.name for span in resolved[1])
    return (f"ingest: reads the spans found now (span {chosen}) in every run, a scheduled one too: a newer span is "
            "read once the pipeline is compiled again (kflow run finds them at each run)")  # fmt: skip


# Read by the pods, not at compile time (trainer.module travels in pipeline.yaml as its source).
POD_INPUT_PATHS = ("data.source.path", "data.schema", "evaluator.baseline")


def local_path_warnings(config: PipelineConfig, shared_mount_path: str) -> list[str]:
    """A line for each input path of `config` the pipeline's pods will not see: a path of this machine that is
    not on the shared volume nor in an object store."""
    warnings = []
    for field in POD_INPUT_PATHS:
        section, name = field.rsplit(".", 1)
        holder = config.to_dict()
        for part in section.split("."):
            holder = holder.get(part) or {}
        value = holder.get(name)
        if not isinstance(value, str) or "://" in value or value in ("latest_blessed", "none"):
            continue
        resolved = Path(value).expanduser().resolve()
        if resolved.is_relative_to(Path(shared_mount_path)):
            continue
        warnings.append(  # the whole path, as the nodes hold it: node_path_warnings says it once
            f"{field}: {resolved} is a path on this machine: the pods will not see it unless it is on the shared "
            f"volume (mounted at {shared_mount_path}) or in an object store (gs://, s3://, minio://)"
        )
    return warnings


def manifests_command(args: argparse.Namespace) -> int:
    """Writes what the cluster needs for the config (see pipeline/compiler/manifests.py)."""
    from kflow.pipeline.compiler.manifests import PER_RUN, render_manifests, write_manifests

    config, settings = _compile_config(args.config, args.overrides, args.image)
    pipeline = _compiled_pipeline(config, settings)
    files = render_manifests(pipeline, settings)
    written = write_manifests(files, args.output)
    size = sum(path.stat().st_size for path in written)
    objects = sum(len(found) for name, found in files.items() if not name.startswith(PER_RUN))
    clusters = [node.id for node in pipeline.components if node.cluster_replicas()]
    print(
        f"wrote {len(written)} files ({size:,} bytes) to {args.output}: "
        f"kubectl apply -f {args.output} creates {objects} objects"
    )
    if clusters:
        print(
            f"{', '.join(clusters)}: runs as a {settings.training} (kubeflow.training); "
            f"{args.output}/{PER_RUN}/ shows what its launcher creates on each run"
        )
    else:
        print("no node runs as a cluster here (trainer.workers is 1): the volume and the accounts only")
    return 0


def compile_command(args: argparse.Namespace) -> int:
    path = compile_config(args.config, args.output, args.overrides, args.image)
    print(f"compiled {args.config} to {path}")
    return 0


def submit_command(args: argparse.Namespace) -> int:
    from kflow.pipeline.kubeflow.submit import SubmissionFailed, submit_package

    cron = _schedule(args)
    # `--set` on a run-time parameter is a run argument: the compiled pipeline keeps the config's default.
    fields = load_compile_config(args.config, args.overrides, args.image)[1].parameters
    overrides, arguments = run_arguments(args.overrides, fields)
    with tempfile.TemporaryDirectory() as scratch:
        package = compile_config(args.config, args.output or Path(scratch) / "pipeline.yaml", overrides, args.image)
        if cron is not None:
            return _schedule_package(args, package, cron, arguments)
        run_name = args.run_name or f"{Path(args.config).stem}-{time.strftime('%Y%m%d-%H%M%S')}"
        try:
            run_id = submit_package(package, args.endpoint, args.experiment, run_name, args.namespace, arguments)
        except SubmissionFailed as error:
            print(f"kflow: {error}", file=sys.stderr)
            return 1
    print(f"submitted run {run_name!r} (id {run_id}) to experiment {args.experiment!r} at {args.endpoint}")
    return 0


def _schedule(args: argparse.Namespace) -> str | None:
    """`--schedule` in KFP's six-field cron form (None without one); a bad one is a usage error (exit 2)."""
    from kflow.pipeline.kubeflow.cron import kfp_cron

    schedule = getattr(args, "schedule", None)
    if schedule is None:
        return None
    if not 1 <= args.max_concurrency <= 10:  # The KFP API server's own bounds for a recurring run.
        raise ConfigError([f"--max-concurrency: must be from 1 to 10 (got {args.max_concurrency})"])
    try:
        return kfp_cron(schedule)
    except ValueError as error:
        raise ConfigError([f"--schedule: {error}"]) from None


def _schedule_package(args: argparse.Namespace, package: Path, cron: str, arguments: dict) -> int:
    """Creates the recurring run of `package`: KFP starts a run of it at each time of `cron`."""
    from kflow.pipeline.kubeflow.submit import SubmissionFailed, schedule_package

    name = args.run_name or Path(args.config).stem
    try:
        recurring_id = schedule_package(
            package,
            args.endpoint,
            args.experiment,
            name,
            cron,
            args.namespace,
            arguments,
            max_concurrency=args.max_concurrency,
            catchup=args.catchup,
        )
    except SubmissionFailed as error:
        print(f"kflow: {error}", file=sys.stderr)
        return 1
    print(
        f"scheduled recurring run {name!r} (id {recurring_id}, cron {cron!r}) in experiment {args.experiment!r} "
        f"at {args.endpoint}"
    )
    return 0
