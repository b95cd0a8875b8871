"""A user's `preprocessing_fn(inputs, analyzers)` (transform.module): traced on a sample, analysed by Beam, built.

TFX's contract in spirit, with Keras doing the applying: `inputs` are Keras tensors, one per raw feature ([batch,
1]: numbers as float32, NaN when missing; strings, "" when missing); `analyzers.mean(x)`, `.variance(x)`,
`.min(x)`, `.max(x)`, `.vocabulary(x, top_k=, frequency_threshold=)` and `.quantiles(x, num_buckets=)` return
values computed over the whole training split, which the function passes to Keras layers as constructor arguments
(`Normalization(mean=, variance=)`, `StringLookup(vocabulary=)`, `Discretization(bin_boundaries=)`); it returns
{name: tensor}, the model's inputs. The function runs three times:

1. traced on a sample of the training split, each analyzer answering with the sample's value: a mistake fails here,
   before any Beam pass, in one line naming the module's file and line;
2. its analyzers' inputs (any tensor the function computed, `log1p(income)` as well as a raw feature) are computed
   for every training record in the Beam pass (`AnalysisColumns`) and folded by the analyzers' combiners;
3. called again with the full pass's values, which builds the preprocessing model that is saved.
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from typing import Any

import apache_beam as beam
import keras
import numpy as np
import tensorflow as tf

from kflow.components.transform.analyzers import Analyzer, parse_columns, run_analyzers
from kflow.components.transform.module_check import FUNCTION, load_preprocessing_module
from kflow.components.transform.tabular_analysis import label_analyzers, label_head
from kflow.pipeline.dsl.artifacts import Examples, TransformGraph
from kflow.pipeline.dsl.config_validation import did_you_mean

SAMPLE_RECORDS = 512  # the training records the function is traced on
ANALYSIS_MODEL = ".analysis.keras"  # the analyzers' inputs as a model, for the Beam workers (removed after)


class PreprocessingError(ValueError):
    """The user's preprocessing_fn failed: one line naming its file and line."""


class Analyzers:
    """What `preprocessing_fn` calls: each call records an analyzer and answers with its value, from `values`
    (the full pass's, by call order) or else computed on the traced sample."""

    def __init__(self, sample: dict[str, tf.Tensor], inputs: dict[str, Any], values: list[Any] | None = None):
        self.sample, self.inputs, self.values = sample, inputs, values
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []
        self.outputs: dict[str, Any] = {}

    def mean(self, x: Any) -> float:
        return self._ask("mean", x)

    def variance(self, x: Any) -> float:
        return self._ask("variance", x)

    def min(self, x: Any) -> float:
        return self._ask("min", x)

    def max(self, x: Any) -> float:
        return self._ask("max", x)

    def vocabulary(self, x: Any, top_k: int | None = None, frequency_threshold: int = 1) -> list[str]:
        """The most frequent values of a string tensor, most frequent first (at most top_k, each seen at least
        frequency_threshold times); never empty (a placeholder when nothing qualifies)."""
        return self._ask("vocabulary", x, top_k=top_k, frequency_threshold=frequency_threshold)

    def quantiles(self, x: Any, num_buckets: int) -> list[float]:
        """Bucket boundaries splitting the values into num_buckets of about equal count (Beam's approximate
        quantiles: each boundary's rank within 0.1 % of the rows of the exact one's)."""
        if int(num_buckets) < 2:
            raise ValueError(f"quantiles: num_buckets must be at least 2, got {num_buckets}")
        return self._ask("quantiles", x, num_buckets=int(num_buckets))

    def _ask(self, kind: str, x: Any, **options: Any) -> Any:
        if not isinstance(x, keras.KerasTensor):
            raise TypeError(f"analyzers.{kind} takes a tensor computed from `inputs`, got {type(x).__name__}")
        index = len(self.calls)
        self.calls.append((kind, x, options))
        if self.values is not None:
            if index >= len(self.values) or self.values[index][0] != kind:
                raise ValueError(f"analyzers.{kind}: the full pass's call {index + 1} differs from the trace's")
            return self.values[index][1]
        values = keras.Model(self.inputs, x)(self.sample)
        return answer(kind, np.asarray(values).ravel(), options)


def answer(kind: str, values: np.ndarray, options: dict[str, Any]) -> Any:
    """An analyzer's value on values held in memory (the traced sample's)."""
    if values.dtype.kind in "SUO":
        values = np.array([v for v in values if v], dtype=object)
        if kind != "vocabulary":
            raise TypeError(f"analyzers.{kind} takes numbers, got strings")
    elif kind == "vocabulary":
        raise TypeError("analyzers.vocabulary takes strings, got numbers")
    else:
        values = values[np.isfinite(values.astype(np.float64))].astype(np.float64)
    if kind == "vocabulary":
        found, counts = np.unique(values, return_counts=True) if len(values) else ([], [])
        ranked = sorted(zip(found, counts, strict=True), key=lambda item: (-item[1], item[0]))
        ranked = [_text(v) for v, n in ranked if n >= options["frequency_threshold"]][: options["top_k"]]
        return ranked or ["[none]"]
    if kind == "quantiles":
        inner = np.quantile(values, np.linspace(0, 1, options["num_buckets"] + 1)[1:-1]) if len(values) else []
        return sorted({float(q) for q in inner}) or [0.0]
    if not len(values):
        return {"mean": 0.0, "variance": 1.0, "min": 0.0, "max": 0.0}[kind]
    return float({"mean": np.mean, "variance": np.var, "min": np.min, "max": np.max}[kind](values))


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def user_graph(
    task: Any, examples: Examples, source: str, origin: str, beam_args: Sequence[str], graph: TransformGraph
) -> tuple[dict[str, Any], list[Analyzer], dict[str, Any], keras.Model]:
    """(the plan, the analyzers, their results, the preprocessing model) of the user's preprocessing_fn."""
    function = getattr(_load(source, origin), FUNCTION)
    sample = task.inputs(_sample_records(examples))
    traced = _call(function, task, sample, origin)  # step 1: a mistake stops here, before the Beam pass
    analyzers, outputs = [], {}
    for index, (kind, x, options) in enumerate(traced.calls):
        column = f"analyzer_{index}"
        beam_kind = {"mean": "moments", "variance": "moments", "min": "moments", "max": "moments"}.get(kind, kind)
        analyzers.append(Analyzer(f"{kind}.{index}", beam_kind, column, options))
        outputs[column] = x
    labels, label_columns = label_analyzers(task)
    model_path = graph.path / ANALYSIS_MODEL
    if outputs:
        keras.Model(traced.inputs, outputs).save(model_path)
    parse = AnalysisColumns(str(model_path) if outputs else None, task.schema, source, origin, label_columns)
    patterns = {split: str(examples.split_uri(split) / "*.gz") for split in examples.splits}
    results_file = graph.path / ".results.json"
    results = run_analyzers(patterns, [*analyzers, *labels], label_columns, beam_args, results_file, parse)
    model_path.unlink(missing_ok=True)
    values = [(kind, _value(kind, results[a.id])) for (kind, _, _), a in zip(traced.calls, analyzers, strict=True)]
    final = _call(function, task, None, origin, values)  # step 3: the full pass's values
    read = _read_inputs(final.inputs, final.outputs)  # a column the function never reads is no model input
    preprocessing = keras.Model(read, final.outputs, name="preprocessing")
    plan = {
        "label": task.label,
        "features": [],
        "head": label_head(task, results),
        "left_out": {},
        "inputs": {name: kind for name, kind in task.types.items() if name in read},
        "outputs": sorted(final.outputs),
    }
    return plan, [*analyzers, *labels], results, preprocessing


def _read_inputs(inputs: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
    """The `inputs` the `outputs` are computed from (a walk back through the Keras graph): the columns a Trainer
    feeds and `kflow predict` asks of new data. preprocessing_fn gets every raw feature; one it never reads would
    otherwise be a column every scored file must hold (a user trial's `wks`). All of them when it reads none."""
    reached, stack = set(), list(keras.tree.flatten(outputs))
    while stack:
        tensor = stack.pop()
        if id(tensor) in reached:
            continue
        reached.add(id(tensor))
        history = getattr(tensor, "_keras_history", None)
        if history is not None:
            operation, node_index, _ = history
            stack.extend(operation._inbound_nodes[node_index].input_tensors)
    read = {name: tensor for name, tensor in inputs.items() if id(tensor) in reached}
    return read or dict(inputs)


def _value(kind: str, result: Any) -> Any:
    if kind in ("mean", "variance", "min", "max"):
        value = result[kind]
        return {"mean": 0.0, "variance": 1.0}.get(kind, 0.0) if value is None or not result["count"] else value
    if kind == "vocabulary":
        return [value for value, _ in result["ranked"]] or ["[none]"]
    return result or [0.0]


def _call(function: Any, task: Any, sample: dict | None, origin: str, values: list | None = None) -> Analyzers:
    """Runs preprocessing_fn on fresh inputs; its outputs checked: a dict of tensors, numeric, a row per row."""
    inputs = {name: keras.Input(shape=(1,), dtype=_dtype(kind), name=_safe(name)) for name, kind in task.types.items()}
    analyzers = Analyzers(sample, inputs, values)
    try:
        outputs = function(Columns(inputs), analyzers)
        if not isinstance(outputs, dict):
            raise TypeError(
                f"{FUNCTION} must return a dict of tensors (the model's inputs), got {type(outputs).__name__}"
            )
        if not outputs:
            raise TypeError(f"{FUNCTION} returned an empty dict: the model would have no inputs")
        for name, tensor in outputs.items():
            if not isinstance(tensor, keras.KerasTensor):
                raise TypeError(f"{FUNCTION}'s output {name!r} is a {type(tensor).__name__}, not a tensor from inputs")
            if tensor.dtype == "string":
                raise TypeError(f"{FUNCTION}'s output {name!r} is strings: map them to numbers (StringLookup)")
        if sample is not None:  # the traced model runs on the sample
            _refuse_non_finite(keras.Model(inputs, outputs)(sample))
    except Exception as error:
        kind = "KeyError" if isinstance(error, KeyError) else type(error).__name__
        raise PreprocessingError(
            f"transform.module: {_where(error, origin, function)}: {kind}: {_first_line(error)}"
        ) from error
    analyzers.outputs = outputs
    return analyzers


class Columns(dict):
    """preprocessing_fn's `inputs`: a name that is no column says the likely one and the columns."""

    def __missing__(self, name: Any) -> Any:
        raise NoColumn(f"{name!r} is no column of the data{did_you_mean(str(name), list(self))} (columns: "
                       f"{', '.join(self)})")  # fmt: skip


class NoColumn(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def _refuse_non_finite(produced: dict[str, Any]) -> None:
    """Each output a finite number in every sampled row: a NaN reaches the model's weights and, through a ReLU, need
    not show in its loss (a user trial's model scored every row alike and was blessed)."""
    for name, value in produced.items():
        values = np.asarray(value, dtype=np.float64).reshape(len(value), -1)
        rows = int((~np.isfinite(values).all(axis=1)).sum())
        if rows:
            raise ValueError(
                f"{FUNCTION}'s output {name!r} is NaN or infinite in {rows} of {len(values)} sampled rows (a missing "
                "number is NaN in `inputs`: keras.ops.nan_to_num it first)"
            )


def _where(error: BaseException, origin: str, function: Any = None) -> str:
    """`my_preprocessing.py:LINE`: the module's deepest frame in `error`'s traceback, else preprocessing_fn's line
    (a wrong return value), else the file alone."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == origin]
    if frames:
        return f"{origin}:{frames[-1].lineno}"
    return f"{origin}:{function.__code__.co_firstlineno}" if function is not None else origin


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else ""


def _load(source: str, origin: str) -> Any:
    try:
        return load_preprocessing_module(source, origin)
    except ValueError:
        raise
    except Exception as error:
        raise PreprocessingError(
            f"transform.module: {_where(error, origin)}: {type(error).__name__}: {_first_line(error)}"
        ) from error


def _sample_records(examples: Examples) -> tf.Tensor:
    records = tf.data.TFRecordDataset(examples.split_files("train"), compression_type="GZIP")
    return next(iter(records.batch(SAMPLE_RECORDS)))


def _dtype(kind: str) -> str:
    return "string" if kind == "string" else "float32"


def _safe(name: str) -> str:
    return "".join(char if char.isascii() and (char.isalnum() or char == "_") else "_" for char in name) or "feature"


class AnalysisColumns(beam.DoFn):
    """A batch of serialized records → {column: values}: each analyzer's input computed by the analysis model (the
    function's tensors, on the task's parsed inputs), and the label's raw values."""

    def __init__(self, model_path: str | None, schema: Any, source: str, origin: str, label_columns: dict[str, str]):
        self.model_path, self.schema, self.source, self.origin = model_path, schema, source, origin
        self.label_columns = label_columns

    def setup(self) -> None:
        from kflow.components.datasets.tabular.task import TabularTask

        load_preprocessing_module(self.source, self.origin)  # its custom layers, registered before the model loads
        self.task = TabularTask(self.schema)
        self.model = (
            keras.saving.load_model(self.model_path, compile=False, safe_mode=False) if self.model_path else None
        )

    def process(self, records: list[bytes]):
        columns = parse_columns(records, self.label_columns)
        if self.model is not None:
            for name, values in self.model(self.task.inputs(tf.constant(records))).items():
                values = np.asarray(values).ravel()
                if values.dtype.kind in "SUO":
                    columns[name] = [value for value in values if value]
                else:
                    columns[name] = values[np.isfinite(values.astype(np.float64))].astype(np.float64)
        yield columns
