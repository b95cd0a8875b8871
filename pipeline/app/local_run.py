"""`kflow run`, `kflow plan` and `kflow validate` without the printing: the config's pipeline built, cut by
`--until` / `--only`, and run (or planned) locally on Beam. The command line (cli/main.py) parses the arguments,
calls these and says what they return."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kflow.pipeline.app.pipeline_cut import cut_pipeline
from kflow.pipeline.app.runtime_parameters import compile_only_problems, kubeflow_section_problems
from kflow.pipeline.app.standard_pipeline import build_pipeline
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig
from kflow.pipeline.dsl.config_model.base import given
from kflow.pipeline.dsl.dag import Pipeline

log = logging.getLogger("kflow")


def run_locally(
    config: PipelineConfig,
    *,
    until: str | None = None,
    only: str | None = None,
    enable_cache: bool = True,
    verify: bool = False,
    handle_signals: bool = False,
) -> Any:
    """Runs the config's pipeline (up to `until`, or `only` one node with its ancestors' cached outputs) on the
    local Beam runner and returns its result; a failed run raises the runner's PipelineFailed, a cancelled one
    (SIGINT or SIGTERM, with `handle_signals`) Cancelled. The unpublished outputs of earlier runs that stopped are
    removed first."""
    from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner
    from kflow.pipeline.runners.cancellation import signals_cancel
    from kflow.pipeline.runners.gc import sweep_staging

    pipeline = build_pipeline(config, local_runs=True)
    if swept := sweep_staging(Path(config.pipeline_root) / pipeline.name):
        log.info("removed the unpublished outputs of %d earlier run(s) that stopped", swept)
    pipeline = cut_pipeline(pipeline, ("--until", until), ("--only", only))
    cached_only: set[str] = pipeline.ancestors(only) if only else set()
    if cached_only:  # refused before a run is recorded: the arguments ask for outputs there are none of
        from kflow.pipeline.runners.plan import plan_pipeline

        plans = plan_pipeline(pipeline, config.pipeline_root)  # ancestors come from the cache, --no-cache or not
        reused = ("cached", "skipped")  # a skipped ancestor (a model not blessed) skips the node, as the runner says
        if uncached := [plan for plan in plans if plan.node in cached_only and plan.action not in reused
                        and not (plan.why and plan.why[0].startswith("reused from run"))]:  # fmt: skip
            names = ", ".join(plan.node for plan in uncached)
            raise ConfigError([f"--only {only}: {names} ha{'s' if len(uncached) == 1 else 've'} no cached outputs "
                               f"for this config ({'; '.join(uncached[0].why)}); run them first: kflow run --until "
                               f"{uncached[-1].node}"])  # fmt: skip
    with signals_cancel() if handle_signals else contextlib.nullcontext():
        runner = BeamDagRunner(enable_cache=enable_cache, verify_hashes=verify, cached_only=cached_only)
        return runner.run(pipeline, config.pipeline_root)


@dataclass(frozen=True)
class Plan:
    pipeline: Pipeline
    plans: list[Any]  # runners/plan.py's ComponentPlan, one a node in order


def plan_locally(config: PipelineConfig, *, until: str | None = None, enable_cache: bool = True) -> Plan:
    """What `run_locally` would run and what it would take from the cache, without running anything."""
    from kflow.pipeline.runners.plan import plan_pipeline

    pipeline = cut_pipeline(build_pipeline(config, local_runs=True), ("--until", until))
    return Plan(pipeline, plan_pipeline(pipeline, config.pipeline_root, enable_cache=enable_cache))


@dataclass(frozen=True)
class Validated:
    nodes: list[str]
    inferred_problem_type: tuple[str, str] | None  # (problem type, why), when the config leaves it to the data
    notes: tuple[str, ...] = ()  # what the data's sample suggests setting, and how it reads columns (SourceFacts)


def validate_locally(config: PipelineConfig) -> Validated:
    """Builds the pipeline (the checks that span fields — splits, filters, the DAG — run while building: a
    ConfigError names the field) and says what a run would infer from the data."""
    pipeline = build_pipeline(config)
    if given(config.kubeflow) is not None:  # what compile would refuse in it, said now
        problems = kubeflow_section_problems(config, pipeline, config.kubeflow)
        if problems:
            raise ConfigError(problems, config.source)
    inferred, notes = None, ()
    if given(config.kubeflow) is not None:  # legal here, refused by compile: said, not refused
        notes = tuple(f"kflow compile would refuse: {problem}" for problem in compile_only_problems(config))
    if config.components is None:
        from kflow.pipeline.app.config_checks import source_facts

        facts = source_facts(config, check_others=False)  # the checks above read the same sample: nothing new
        if facts is not None and facts.problem_type_reason:
            inferred = (facts.problem_type, facts.problem_type_reason)
        notes += (*facts.notes, *facts.readings) if facts is not None else ()
    return Validated([node.id for node in pipeline.components], inferred, notes)
