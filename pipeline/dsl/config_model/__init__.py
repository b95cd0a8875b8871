"""The config, declared once: every section and field with its type, default, bounds and description.

`schemas/config.schema.json` is generated from these classes (`kflow schema`; a test fails when the committed file
is stale), the config is validated and its defaults filled against that schema (`pipeline/dsl/config.py`), and the
components take their defaults from here (`components/trainer/config.py`). A field that may be left out without a
default is `X | MISSING = MISSING`; `X | None = None` is a field whose default is null.
"""

from __future__ import annotations

from typing import Any

from pydantic import MISSING, Field

from kflow.pipeline.dsl.config_model.base import (
    CPU,
    MEMORY,
    BeamOption,
    BeamRunner,
    ColumnType,
    Identifier,
    ModelName,
    NodeOutput,
    Optimizer,
    PositiveInt,
    ProblemType,
    Scalar,
    Schedule,
    Section,
    SourceFormat,
    declared_parameter,
    default_of,
    empty,
    given,
    section,
)
from kflow.pipeline.dsl.config_model.data import (
    CsvSection,
    DataSection,
    FiltersSection,
    ImageSection,
    SourceSection,
    TfdsSection,
)
from kflow.pipeline.dsl.config_model.deployment import (
    BeamSection,
    ClusterSection,
    KubeflowSection,
    MlflowSection,
    OrchestrationSection,
    Resources,
    RoleResources,
    TrackingSection,
)
from kflow.pipeline.dsl.config_model.training import (
    EvaluatorSection,
    MeshSection,
    OptimizerSection,
    SliceSection,
    ThresholdSection,
    TrainerSection,
)
from kflow.pipeline.dsl.config_model.transform import TransformSection
from kflow.pipeline.dsl.config_model.tuning import ObjectiveSection, SearchDomain, TunerSection, search_space_problems


class ComponentEntry(Section):
    id: Identifier
    """The node's name (lower-case letters, digits, _): its run folder and its KFP task."""
    type: str = Field(min_length=1)
    """A kflow component (ingest, mnist_ingest, wikitext2_ingest, quora_ingest, trainer, evaluator, pusher) or a user
    component as package.module:Class."""
    inputs: dict[str, NodeOutput] = empty(dict)
    """{input: node.output}, e.g. {examples: ingest.examples}."""
    parameters: dict[str, Any] = empty(dict)
    """The component's parameters; they override the section defaults."""
    run_if: NodeOutput | MISSING = MISSING
    """node.output of a ModelBlessing: the node runs only when that model is blessed."""


class KflowConfig(Section):
    """A kflow pipeline: ingest -> train -> evaluate from the data, trainer and evaluator sections, or any DAG declared
    under components. Defaults below are filled in when a config is loaded."""

    name: str = Field(pattern="^[a-z0-9][a-z0-9-]*$", max_length=128)
    """Pipeline name: lower-case letters, digits and dashes, at most 128 (it is also the KFP pipeline name, which KFP
    caps there)."""
    pipeline_root: str = Field("runs", min_length=1)
    """Where runs and their artifacts go: <pipeline_root>/<name>/<run_id>/<component>/<output>/."""
    data: DataSection | MISSING = MISSING
    trainer: TrainerSection = section(TrainerSection)
    evaluator: EvaluatorSection = section(EvaluatorSection)
    beam: BeamSection = section(BeamSection)
    orchestration: OrchestrationSection = section(OrchestrationSection)
    kubeflow: KubeflowSection | MISSING = MISSING
    tracking: TrackingSection = section(TrackingSection)
    tuner: TunerSection | MISSING = MISSING
    """A hyperparameter search whose best settings the Trainer trains with (docs/tuning.md); absent: no search."""
    transform: TransformSection | MISSING = MISSING
    """The Transform's settings (docs/transform.md): a tabular dataset's preprocessing, learnt once by Beam."""
    components: list[ComponentEntry] | MISSING = Field(MISSING, min_length=1)
    """A declared DAG of components, in place of the standard ingest -> train -> evaluate. The data, trainer and
    evaluator sections, when given, are the defaults of the ingest, trainer and evaluator nodes."""


__all__ = [
    "BeamOption",
    "BeamRunner",
    "BeamSection",
    "CPU",
    "ClusterSection",
    "ColumnType",
    "ComponentEntry",
    "CsvSection",
    "DataSection",
    "EvaluatorSection",
    "FiltersSection",
    "Identifier",
    "ImageSection",
    "KflowConfig",
    "KubeflowSection",
    "MEMORY",
    "MeshSection",
    "MlflowSection",
    "ModelName",
    "NodeOutput",
    "ObjectiveSection",
    "Optimizer",
    "OptimizerSection",
    "OrchestrationSection",
    "PositiveInt",
    "ProblemType",
    "Resources",
    "RoleResources",
    "Scalar",
    "Schedule",
    "SearchDomain",
    "Section",
    "SliceSection",
    "SourceFormat",
    "SourceSection",
    "TfdsSection",
    "ThresholdSection",
    "TrackingSection",
    "TrainerSection",
    "TransformSection",
    "TunerSection",
    "declared_parameter",
    "default_of",
    "empty",
    "given",
    "search_space_problems",
    "section",
]
