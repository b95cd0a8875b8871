"""What every config section is built from: the Section base, its field helpers, and the shared field types."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import MISSING, BaseModel, ConfigDict, Field

from kflow.pipeline.dsl.component import Parameter

PositiveInt = Annotated[int, Field(ge=1)]
CPU = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?m?$")]
MEMORY = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?(E|P|T|G|M|K|Ei|Pi|Ti|Gi|Mi|Ki)?$")]
Identifier = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")]
# What the cluster checks a name against (k8s.io/apimachinery's validation): a DNS-1123 subdomain (a service account,
# a claim), a label's key (an optional subdomain prefix and a name of ≤ 63) and value (≤ 63), an extended resource
# (a prefixed name: nvidia.com/gpu). A value the API server refuses is refused by kflow validate, naming the field.
_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
# A container image reference as the kubelet parses it (github.com/distribution/reference): [host[:port]/]path[:tag]
# [@digest], the path's parts in lower case; a host is the first part when it holds a `.` or `:`, is `localhost` or
# has an upper-case letter (REGISTRY/kflow:0.1.0). Kubernetes accepts any string, and the pod waits in InvalidImageName.
_HOST = r"[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*(:[0-9]+)?"
_PATH = r"[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*"
_TAG = r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
_DIGEST = r"(@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?"
# Each pattern in words, for the line that refuses a value (config_validation.describe_error): {pattern: words}.
FORMS: dict[str, str] = {}
# A field of several forms (an anyOf) in words, for the line that refuses a value of none of them: {field: words}.
ALTERNATIVES: dict[str, str] = {}


def _named(pattern: str, words: str, max_length: int) -> Any:
    FORMS[pattern] = words
    return Field(pattern=pattern, max_length=max_length)


_NAME_CHARACTERS = "letters, digits, '-', '_', '.', starting and ending with a letter or digit"
KubernetesName = Annotated[str, _named(
    f"^{_SUBDOMAIN}$", "a Kubernetes name: lower-case letters, digits, '-' and '.', starting and ending with a "
    "letter or digit", 253)]  # fmt: skip
LabelKey = Annotated[str, _named(
    f"^({_SUBDOMAIN}/)?{_LABEL_NAME}$", f"a Kubernetes label key: [prefix/]name, the name at most 63 "
    f"{_NAME_CHARACTERS}", 317)]  # fmt: skip
LabelValue = Annotated[str, _named(
    f"^({_LABEL_NAME})?$", f"a Kubernetes label value: at most 63 {_NAME_CHARACTERS}", 63)]  # fmt: skip
ResourceName = Annotated[
    str,
    _named(
        f"^{_SUBDOMAIN}/{_LABEL_NAME}$", "an extended resource name: domain/name (nvidia.com/gpu, amd.com/gpu)", 317
    ),
]
ImageReference = Annotated[str, _named(
    f"^({_HOST}/)?{_PATH}{_TAG}{_DIGEST}$", "an image reference: [registry/]repository[:tag][@digest], the "
    "repository in lower case (registry.example.com/kflow:0.1.0)", 4096)]  # fmt: skip
NodeOutput = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*\.[A-Za-z0-9_]+$")]
# A Beam pipeline option's name, as it follows `--` (an empty or spaced one became an argument Beam discards).
BeamOption = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]*$")]
# A Beam runner: its name or its class's dotted path (an empty one became `--runner=`, which Beam refuses mid-run).
BeamRunner = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$")]
Scalar = str | int | float | bool
Optimizer = Literal["adam", "adamw", "sgd"]
Schedule = Literal["constant", "cosine", "polynomial"]
ProblemType = Literal["classification", "regression"]
ColumnType = Literal["int", "float", "string", "bool"]
SourceFormat = Literal[
    "auto", "npz", "idx", "sklearn_digits", "tfds", "download", "csv", "jsonl", "kaggle", "tfrecord", "parquet",
    "folders", "manifest",
]  # fmt: skip
# The registered models (kflow.components.models registers exactly these; a test keeps the two equal).
ModelName = Literal["mnist_convnet", "bert_mlm", "text_classifier", "tabular_mlp", "image_convnet"]


class Section(BaseModel):
    """A mapping of the config: unknown fields are refused."""

    # allow_inf_nan: a NaN or an infinity in any float field is refused by the model too (the loader refuses them in
    # every field of a config file: config_data.py).
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False)


def section(kind: type[Section], description: str | None = None) -> Any:
    """A section that may be left out: it is then filled with its own defaults."""
    return Field(default_factory=kind, description=description, json_schema_extra={"default": {}})


def empty(kind: type, description: str | None = None, **bounds: Any) -> Any:
    """An empty dict or list by default."""
    return Field(default_factory=kind, description=description, json_schema_extra={"default": kind()}, **bounds)


def declared_parameter(section: type[Section], name: str, kind: type, **options: Any) -> Parameter:
    """A component parameter with the default and description of the config field it comes from."""
    description = section.model_fields[name].description or ""
    return Parameter(kind, default=default_of(section, name), description=description, **options)


def default_of(section: type[Section], name: str) -> Any:
    """The declared default of a config field, for code that holds the setting outside the config."""
    return section.model_fields[name].get_default(call_default_factory=True)


def given(value: Any, default: Any = None) -> Any:
    """A field's value, or `default` when the config leaves it out (a field declared `X | MISSING = MISSING`)."""
    return default if value is MISSING else value
