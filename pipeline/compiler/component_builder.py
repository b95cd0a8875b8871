"""A pipeline node (a kflow component spec bound to parameters) → a KFP container component.

The KFP SDK builds container components from a function's signature: `Input[Dataset]`
and `Output[Model]` annotations become typed artifacts, `int`/`str`/`dict`/... become
typed parameters. We build that function with a synthetic `__signature__` from the
component's spec rather than writing the IR by hand, so KFP itself checks the types,
the placeholders and the wiring, and its output stays valid as the IR evolves.

Parameters whose value is None (unset optional ones) and optional inputs the node leaves
unwired are left out of the KFP interface; the entrypoint then binds the spec's default, as
`kflow run` does.

A component with a ModelEvaluation output (the Evaluator) also gets a KFP
`ClassificationMetrics` output, and its task receives the executor input `{{$}}`: the
entrypoint then writes the evaluation's scalars and the confusion matrix / ROC curve as
artifact metadata, which the KFP run page shows (see pipeline/runners/kfp_metrics.py).
It also gets a `system.HTML` output (the evaluation's self-contained report.html) and a
`system.Markdown` one (the verdict, the metrics, the failed checks), which the KFP UI shows.
A component with a ModelBlessing output also gets a string output parameter beside it
(`blessing_blessed`: "true" or "false") for the `dsl.If` of the nodes that `run_if` it.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from kfp import dsl
from kfp.dsl.container_component_class import ContainerComponent

from kflow.pipeline.compiler.container_args import (
    BASELINE_RESOLVER,
    ENTRYPOINT,
    JOB_LAUNCHER,
    entrypoint_args,
    executor_input_args,
    job_launcher_args,
    metrics_publishing_args,
)
from kflow.pipeline.compiler.settings import KubeflowSettings
from kflow.pipeline.dsl.artifacts import Artifact, ModelBlessing, ModelEvaluation
from kflow.pipeline.dsl.component import Component

KFP_ARTIFACT_CLASSES: dict[str, type[dsl.Artifact]] = {
    cls.schema_title: cls for cls in (dsl.Artifact, dsl.Dataset, dsl.Model, dsl.Metrics)
}
CLASSIFICATION_METRICS_OUTPUT = "classification_metrics"
# The evaluation's report and a short summary, as the KFP UI renders them (`system.HTML`, `system.Markdown`).
REPORT_OUTPUT, SUMMARY_OUTPUT = "report_html", "summary_markdown"
# The data's statistics page the report links to (a file beside it locally; its own HTML output in the KFP UI).
STATISTICS_OUTPUT = "statistics_html"
KFP_ONLY_OUTPUTS = {
    CLASSIFICATION_METRICS_OUTPUT: dsl.ClassificationMetrics,
    REPORT_OUTPUT: dsl.HTML,
    SUMMARY_OUTPUT: dsl.Markdown,
    STATISTICS_OUTPUT: dsl.HTML,
}


def kfp_artifact_class(kind: type[Artifact]) -> type[dsl.Artifact]:
    try:
        return KFP_ARTIFACT_CLASSES[kind.kfp_schema_title]
    except KeyError:
        raise ValueError(
            f"artifact type {kind.type_name} maps to KFP schema {kind.kfp_schema_title!r}, "
            f"which the compiler does not know (known: {', '.join(sorted(KFP_ARTIFACT_CLASSES))})"
        ) from None


def verdict_output(blessing_output: str) -> str:
    """The KFP output parameter ("true"/"false") beside a ModelBlessing output, which `dsl.If` conditions read."""
    return f"{blessing_output}_blessed"


def component_path(node: Component) -> str:
    """`package.module:Class` of the node's component, as the entrypoint imports it."""
    return f"{type(node).__module__}:{type(node).__qualname__}"


# The input that carries a node's source-file digest (from its fingerprint task) into its KFP cache key.
SOURCE_FINGERPRINT = "source_fingerprint"


def build_container_component(
    node: Component, settings: KubeflowSettings, baseline: tuple[str, str] | None = None
) -> ContainerComponent:
    """The KFP component running `node`; a node with `cluster_replicas` launches a cluster job (a TrainJob, or a
    TFJob under `kubeflow.training: tfjob`) whose replicas run the entrypoint instead of the task's pod.

    `baseline` (parameter, store, identity): the node's parameter that a resolver task feeds with the latest blessed
    model, the store where the task records its model when it blesses it, and what the model was trained for (JSON,
    kept in the record: pipeline/kubeflow/baselines.py).
    """
    spec = node.spec
    fed = {baseline[0]} if baseline else set()  # Fed by the resolver task: declared even though unset here.
    parameters = {name: value for name, value in node.parameters.items() if value is not None or name in fed}
    evaluations = [name for name, kind in spec.outputs.items() if issubclass(kind, ModelEvaluation)]
    if len(evaluations) > 1 or set(KFP_ONLY_OUTPUTS) & set(spec.outputs):
        raise ValueError(
            f"{type(node).__name__}: the compiler publishes at most one ModelEvaluation output and needs the "
            f"output names {', '.join(KFP_ONLY_OUTPUTS)} for it (outputs: {', '.join(spec.outputs)})"
        )
    kfp_only_outputs = list(KFP_ONLY_OUTPUTS) if evaluations else []
    verdicts = {name: verdict_output(name) for name, kind in spec.outputs.items() if issubclass(kind, ModelBlessing)}
    if baseline and (len(verdicts) != 1 or baseline[0] not in spec.parameters):
        raise ValueError(
            f"{node.id}: a latest-blessed baseline needs one ModelBlessing output and a parameter {baseline[0]!r}"
        )
    fingerprinted = [SOURCE_FINGERPRINT] if spec.source_files else []
    if SOURCE_FINGERPRINT in spec.parameters:
        raise ValueError(f"{type(node).__name__}: the compiler needs the parameter name {SOURCE_FINGERPRINT}")
    signature = inspect.Signature(
        [_kw(name, dsl.Input[kfp_artifact_class(spec.inputs[name])]) for name in node.inputs]
        + [_kw(name, dsl.Output[kfp_artifact_class(kind)]) for name, kind in spec.outputs.items()]
        + [_kw(name, dsl.Output[KFP_ONLY_OUTPUTS[name]]) for name in kfp_only_outputs]
        + [_kw(name, dsl.OutputPath(str)) for name in verdicts.values()]
        + [_kw(name, spec.parameters[name].type) for name in parameters]
        + [_kw(name, str) for name in fingerprinted]
    )
    inputs, outputs = list(node.inputs), list(spec.outputs)
    replicas = node.cluster_replicas()
    code_version = type(node).code_version()

    def container(*placeholders: Any) -> dsl.ContainerSpec:
        names = [*inputs, *outputs, *kfp_only_outputs, *verdicts.values(), *parameters, *fingerprinted]
        bound = dict(zip(names, placeholders, strict=True))
        args = entrypoint_args(
            component_path(node),
            inputs={name: bound[name] for name in inputs},
            outputs={name: bound[name] for name in outputs},
            parameters={name: bound[name] for name in parameters},
        )
        # kflow's own code version is part of the task's KFP cache key (an image tag may be pushed again with new
        # code), and so is the digest of the bytes a node reads from outside (fed by its fingerprint task).
        args += ["--code-version", code_version, *executor_input_args()]
        if fingerprinted:
            args += ["--source-fingerprint", bound[SOURCE_FINGERPRINT]]
        if evaluations:
            args += metrics_publishing_args(evaluations[0], CLASSIFICATION_METRICS_OUTPUT)
            args += ["--publish-report", f"{evaluations[0]}={bound[REPORT_OUTPUT].path}"]
            args += ["--publish-summary", f"{evaluations[0]}={bound[SUMMARY_OUTPUT].path}"]
            args += ["--publish-statistics", f"{evaluations[0]}={bound[STATISTICS_OUTPUT].path}"]
            if settings.mlflow:
                producers = {name: channel.producer for name, channel in node.inputs.items()}
                tracked = {**settings.mlflow, "node": node.id, "producers": producers}
                args += ["--track-mlflow", json.dumps(tracked, sort_keys=True)]
        for blessing, verdict in verdicts.items():
            args += ["--publish-verdict", f"{blessing}={bound[verdict]}"]
        if baseline:
            (blessing,) = verdicts  # The compiler checked there is one.
            args += ["--record-blessed-model", f"{blessing}={baseline[1]}", "--baseline-identity", baseline[2]]
        if not replicas:
            return dsl.ContainerSpec(image=settings.image, command=list(ENTRYPOINT), args=args)
        launcher = job_launcher_args(node, settings, [*ENTRYPOINT, *args])
        return dsl.ContainerSpec(image=settings.image, command=list(JOB_LAUNCHER), args=launcher)

    container.__name__ = container.__qualname__ = node.id.replace("-", "_")
    container.__doc__ = (type(node).__doc__ or type(node).__name__).strip().splitlines()[0]
    container.__signature__ = signature  # type: ignore[attr-defined]
    return dsl.container_component(container)


def build_source_fingerprinter(node: Component, image: str) -> ContainerComponent:
    """A task that outputs the digest of the source files `node` will read (never cached: it looks at the data
    as it is now), fed to the node's `source_fingerprint` input so that KFP reuses it only for the same bytes."""
    parameters = {name: value for name, value in node.parameters.items() if value is not None}

    def container(*placeholders: Any) -> dsl.ContainerSpec:
        bound = dict(zip([*parameters, "digest"], placeholders, strict=True))
        args = entrypoint_args(
            component_path(node), inputs={}, outputs={}, parameters={name: bound[name] for name in parameters}
        )
        return dsl.ContainerSpec(
            image=image, command=list(ENTRYPOINT), args=[*args, "--fingerprint-sources", bound["digest"]]
        )

    container.__name__ = container.__qualname__ = f"{node.id}_fingerprint".replace("-", "_")
    container.__doc__ = f"The digest of the source files {node.id} reads, for its cache key."
    container.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [_kw(name, node.spec.parameters[name].type) for name in parameters] + [_kw("digest", dsl.OutputPath(str))]
    )
    return dsl.container_component(container)


def build_baseline_resolver(node: Component, store: str, image: str, identity: str) -> ContainerComponent:
    """A task that outputs the latest blessed model in `store` of the same `identity` (JSON: name, dataset, task,
    label) as `node`'s baseline ("" for none). It takes the model `node` will judge, to avoid comparing a model with
    itself (pipeline/kubeflow/baselines.py)."""

    def container(model: Any, baseline_model_uri: Any) -> dsl.ContainerSpec:
        return dsl.ContainerSpec(
            image=image,
            command=list(BASELINE_RESOLVER),
            args=["--store", store, "--model-uri", model.uri, "--identity", identity, "--output", baseline_model_uri],
        )

    container.__name__ = container.__qualname__ = f"{node.id}_baseline".replace("-", "_")
    container.__doc__ = f"The latest blessed model: the baseline {node.id} compares its model with."
    container.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [_kw("model", dsl.Input[dsl.Model]), _kw("baseline_model_uri", dsl.OutputPath(str))]
    )
    return dsl.container_component(container)


def _kw(name: str, annotation: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation)
