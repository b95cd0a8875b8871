"""The `trainer` and `evaluator` sections: how a model is trained, and when it is blessed."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import MISSING, ConfigDict, Field, WithJsonSchema, model_validator

from kflow.pipeline.dsl.config_model.base import (
    ModelName,
    Optimizer,
    PositiveInt,
    Scalar,
    Schedule,
    Section,
    empty,
    section,
)

# How deep trainer.model_options may nest lists and maps: a user module's {blocks: [{units: [64, 32]}]} is three.
OPTION_DEPTH = 4
_SCALAR_TYPES = ["string", "integer", "number", "boolean"]


def _option_value(depth: int) -> Any:
    """A model option's Python type: a scalar, or a list or map of option values `depth` levels deep."""
    if depth == 0:
        return Scalar
    inner = _option_value(depth - 1)
    return Scalar | list[inner] | dict[str, inner]


def _option_schema(depth: int) -> dict[str, Any]:
    """Its JSON Schema, one `type` list a level, so a bad value is one line (`must be a string or … or a list or a
    mapping`). Spelled out level by level rather than one recursive type: the config's schema inlines every
    definition, and a bounded depth keeps a config's nesting bounded too."""
    if depth == 0:
        return {"type": list(_SCALAR_TYPES)}
    inner = _option_schema(depth - 1)
    return {"type": [*_SCALAR_TYPES, "array", "object"], "items": inner, "additionalProperties": inner}


# Any JSON-like value (no null): what a registered model or a user module's build_model takes as it is.
ModelOption = Annotated[_option_value(OPTION_DEPTH), WithJsonSchema(_option_schema(OPTION_DEPTH))]


class OptimizerSection(Section):
    name: Optimizer = "adam"
    learning_rate: float = Field(0.001, gt=0)
    """left out: 0.001, or the dataset's own (trainer.epochs says which)"""
    weight_decay: float = Field(0.0, ge=0)
    """adamw only; 0 keeps Keras' default (0.004)"""
    schedule: Schedule = "constant"
    """decay to 0 over the run, after the warm-up"""
    warmup_steps: int = Field(0, ge=0)


class MeshSection(Section):
    shape: list[PositiveInt] = Field(min_length=1)
    axes: list[str] = Field(min_length=1)


class TrainerSection(Section):
    model: ModelName | None = None
    """A registered model (components/models). null: the dataset's own (mnist: mnist_convnet, wikitext2: bert_mlm,
    quora: text_classifier, csv/parquet/tfrecord/tfds: tabular_mlp, images: image_convnet; mnist_convnet also takes
    any image size)."""
    module: str | None = None
    """Your own model: a Python file (or an importable package.module) defining build_model(schema, options) ->
    keras.Model, and optionally loss() and metrics(). It replaces trainer.model; its source is part of the Trainer's
    cache key and travels inside a compiled pipeline.yaml. See docs/your-data.md, 'Your own model'."""
    model_options: dict[str, ModelOption] = empty(dict)
    """Keyword options for the task and its model, e.g. bert_mlm: vocabulary_size, sequence_length,
    mask_selection_rate, mask_selection_length, num_layers, hidden_dim, num_heads, intermediate_dim, dropout;
    text_classifier: max_tokens, class_weighting, max_length, ngrams, embedding_dim, hidden_dim, dropout; tabular_mlp
    (csv): class_weighting, max_categories, text_min_chars, max_tokens, hidden_units (a list, e.g. [64, 32]),
    dropout. Values are scalars, or lists and maps of them. The task refuses unknown ones, except with
    trainer.module, whose build_model gets them as they are (lists as lists, maps as dicts)."""
    strategy: str = "default"
    """A registered strategy (kflow.components.trainer.strategies): default, mirrored, multi_worker_mirrored,
    parameter_server, keras_data_parallel, keras_model_parallel, jax_data_parallel (see docs/training.md,
    'Strategies')."""
    epochs: int = Field(3, ge=1)
    """left out: 3, or the dataset's own training recipe where it has one, as for batch_size,
    early_stopping_patience and optimizer.learning_rate (csv, parquet, tfrecord, tfds: up to 200 epochs with early
    stopping; images: up to 100; docs/your-data.md); a value the config sets is kept, and epochs set train that
    many, stopped early only if early_stopping_patience is set too"""
    batch_size: int = Field(128, ge=1)
    """the global batch size (left out: 128, or the dataset's own, as for epochs)"""
    steps_per_epoch: int | None = Field(None, ge=1)
    """null: one pass over the train split"""
    steps_per_execution: int | None = Field(None, ge=1, le=1000)
    """train steps per call into the backend, every strategy but the explicit JAX loop's. null: the custom loop's
    strategies (multi_worker_mirrored, parameter_server) time a few single steps, then run as many a call as take
    about 0.25 s (at most 64), never past an epoch's end or a checkpoint, so the steps and checkpoints are those of one
    a call; the model.fit strategies take the most, a power of two up to 32, that grow an epoch of one pass by at most
    1 % (one under 100 steps an epoch or with a set steps_per_epoch). N: as Keras' compile(steps_per_execution=N) in
    the model.fit strategies, N steps per tf.function call (per scheduled function on a parameter-server worker) in
    the custom loop's; callbacks, progress, checkpoints and the heartbeat then see every Nth step, which takes the
    per-step overhead off small, fast steps; on JAX (keras_data_parallel, keras_model_parallel, one process) a call
    reads its N batches as one block and runs them as one compiled scan or step by step, whichever the first calls
    time faster. N must divide steps_per_epoch; an epoch of one pass is rounded up to a multiple of N (its last call
    completed from the split's start)"""
    optimizer: OptimizerSection = section(OptimizerSection)
    early_stopping_patience: int | None = Field(None, ge=1)
    """null: off; else stop after this many epochs without improvement of early_stopping_monitor, keeping the weights
    of the best epoch (left out: null, or the dataset's own, as for epochs)"""
    early_stopping_min_steps: int | None = Field(None, ge=1)
    """with early_stopping_patience: stop only after this many training steps without improvement too, however few an
    epoch holds (a small table's epoch is a few steps); null: the patience's epochs alone (left out: null, or the
    dataset's own, as for epochs)"""
    early_stopping_monitor: str | None = Field(None, pattern=r"^val_[a-z0-9_]+$")
    """the validation metric early stopping watches: null, the task's own (val_loss; quora: val_pr_auc, wikitext2:
    val_masked_accuracy); else one of the task's, e.g. val_loss or val_accuracy: a loss must fall, another metric
    rise"""
    shuffle_buffer: int = Field(10000, ge=0)
    """in examples; 0 turns shuffling off"""
    seed: int = 42
    warm_start: str | None = Field(None, min_length=1)
    """latest_blessed: start from the newest blessed model of this pipeline trained on other data; a run id (of
    runs/<pipeline>/): start from that run's model; a Model folder's path (a value with a "/", relative to the
    config's folder): that model, of any pipeline. The earlier model must be compatible: its layers (a table's by
    name, others in order) with weights of the same shapes, but a table's first hidden layer, a text model's
    embedding and a classifier's output, whose rows follow their columns', tokens' and classes' meaning as the data
    grows (docs/training.md, 'Warm start'); it then trains for this section's epochs. null: from scratch."""
    hyperparameters: Literal["tuner", "config"] | None = None
    """Which settings the Trainer trains with when the pipeline has a tuner (docs/tuning.md): tuner, the search's
    best (the settings it did not search are this section's); config, this section's own (the search still runs and
    is reported: its best beside these). null: tuner when the config has a tuner section, else config; tuner
    without a tuner section is refused."""
    devices: int | None = Field(None, ge=1, le=64)
    """mirrored: split the first physical device (the first GPU, else the CPU) into this many logical devices, e.g. 2
    for a real 2-replica MirroredStrategy on a CPU-only machine; the JAX strategies: this many XLA host devices per
    process on CPU (XLA_FLAGS=--xla_force_host_platform_device_count)"""
    workers: int = Field(2, ge=1, le=16)
    """multi_worker_mirrored / parameter_server / the JAX strategies: worker processes of the local cluster (ignored
    under TF_CONFIG or a JAXJob's environment)"""
    parameter_servers: int = Field(1, ge=1, le=8)
    """parameter_server: ps processes of the local cluster"""
    # Two restarts ride out a lost process or two (a preempted pod, an OOM kill) without hiding a deterministic
    # failure for long: a crash that repeats fails the run after three attempts.
    max_restarts: int = Field(2, ge=0, le=10)
    """restarts of the training cluster from the last checkpoint after a process dies; 0 fails at the first loss"""
    mixed_precision: bool = False
    """custom loop only: mixed_float16 on GPU, mixed_bfloat16 on CPU"""
    checkpoint_every_steps: int | None = Field(None, ge=1)
    """custom loop: also checkpoint every N steps (always at each epoch end)"""
    log_every_steps: int = Field(100, ge=1)
    """custom loop: a progress line every N steps within an epoch"""
    # The longest wait between steps measured on the shipped configs (2 cores, the first step with its compiling
    # included) is 8.9 s (WikiText-2's BERT under MWMS; MNIST 2.2 s, Quora PS 1.3 s, JAX loop 2x2 3.8 s): 300 s
    # leaves 30 times that for bigger models, slower machines and checkpoint writes, and sees a hang in 5 minutes.
    stall_timeout: float = Field(300.0, gt=0)
    """multi-process strategies: seconds without a finished train step or evaluation batch in any process after which
    the cluster counts as stalled (the processes' Python stacks are logged, it restarts under max_restarts, then fails
    naming the process that stopped); covers the start-up and the first step's compiling"""
    sidecar_evaluator: bool = False
    """multi_worker_mirrored / parameter_server: an evaluator task (TF_CONFIG type evaluator; a TFJob Evaluator
    replica) evaluates every checkpoint on Split-eval while training runs, into model_run/sidecar_eval.jsonl and
    TensorBoard"""
    mesh: MeshSection | None = None
    """keras_model_parallel: the device mesh; null: (processes, devices per process) on axes (batch, model)"""
    layout_map: dict[str, list[str | None]] | None = None
    """keras_model_parallel: {regex matching whole weight paths, e.g. .*/feedforward_intermediate_dense/kernel: [a
    mesh axis or null for each dimension]}; null: the model's own (kflow.components.models)"""


class ThresholdSection(Section):
    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    lower_bound: float | MISSING = MISSING
    upper_bound: float | MISSING = MISSING
    max_drop: float | MISSING = Field(MISSING, ge=0)
    max_rise: float | MISSING = Field(MISSING, ge=0)
    min_gain: float | MISSING = Field(MISSING, ge=0)
    min_reduction: float | MISSING = Field(MISSING, ge=0)

    @model_validator(mode="after")
    def _bounds_leave_room(self) -> ThresholdSection:
        lower, upper = getattr(self, "lower_bound", MISSING), getattr(self, "upper_bound", MISSING)
        if lower is not MISSING and upper is not MISSING and lower > upper:
            raise ValueError(f"lower_bound {lower:g} is above upper_bound {upper:g}: no model could pass")
        return self


class SliceSection(Section):
    by: str = Field(min_length=1)
    boundaries: list[float] | MISSING = Field(MISSING, min_length=1)

    @model_validator(mode="after")
    def _boundaries_ascend(self) -> SliceSection:
        boundaries = getattr(self, "boundaries", MISSING)
        if boundaries is not MISSING and list(boundaries) != sorted(set(boundaries)):
            raise ValueError(f"boundaries must ascend, each once, got {list(boundaries)}")
        return self


class EvaluatorSection(Section):
    split: str = "test"
    batch_size: int = Field(256, ge=1)
    thresholds: dict[str, ThresholdSection] = empty(dict)
    """Per metric bounds, TFMA style: {accuracy: {lower_bound: 0.98, max_drop: 0.002}, loss: {upper_bound: 0.1,
    max_rise: 0.01}}; max_drop/max_rise bound the change against the baseline model."""
    slices: list[SliceSection] = empty(list)
    """Metrics per slice: [{by: label}] (mnist, quora, csv) or [{by: length, boundaries: [20, 40, 80]}] (quora:
    characters, wikitext2: tokens); csv: also {by: <feature>} (a numeric feature needs boundaries)."""
    baseline: str = Field("latest_blessed", min_length=1)
    """The model the change thresholds compare against: latest_blessed (the newest run of this pipeline whose
    evaluate blessed its model), none, or the path of a Model artifact folder."""
    require_baseline: bool = False
    """Refuse to bless a model that has no baseline to compare with (the verdict says why there is none: the first
    run, no comparable blessed model, evaluator.baseline: none)."""
    on_not_blessed: Literal["fail", "warn"] = "fail"
    """What `kflow run` does when the model is not blessed: fail (exit 1) or warn (exit 0)."""
    seed: int = Field(0, ge=0)
    """Seed of the evaluation randomness (the MLM masks)."""
