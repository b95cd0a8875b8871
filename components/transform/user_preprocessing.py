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

from collections.abc import Sequence
from typing import Any

import apache_beam as beam
import keras
import numpy as np
import tensorflow as tf

from kflow.components.datasets.module_imports import UserCode
from kflow.components.transform.analyzers import Analyzer, parse_columns, run_analyzers
from kflow.components.transform.module_check import FUNCTION, load_preprocessing_module
from kflow.components.transform.preprocessing_trace import call_preprocessing_fn, load_module
from kflow.components.transform.tabular_analysis import label_analyzers, label_head
from kflow.pipeline.dsl.artifacts import Examples, TransformGraph

SAMPLE_RECORDS = 512  # the training records the function is traced on
ANALYSIS_MODEL = ".analysis.keras"  # the analyzers' inputs as a model, for the Beam workers (removed after)


def user_graph(
    task: Any, examples: Examples, module: UserCode, beam_args: Sequence[str], graph: TransformGraph
) -> tuple[dict[str, Any], list[Analyzer], dict[str, Any], keras.Model]:
    """(the plan, the analyzers, their results, the preprocessing model) of the user's preprocessing_fn."""
    source, origin = module.source, module.origin
    function = getattr(load_module(source, origin, module.imports), FUNCTION)
    sample = task.inputs(_sample_records(examples))
    traced = call_preprocessing_fn(function, task, sample, origin)  # step 1: a mistake stops here, before the Beam pass
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
    parse = AnalysisColumns(str(model_path) if outputs else None, task.schema, module, label_columns)
    patterns = {split: str(examples.split_uri(split) / "*.gz") for split in examples.splits}
    results_file = graph.path / ".results.json"
    results = run_analyzers(patterns, [*analyzers, *labels], label_columns, beam_args, results_file, parse)
    model_path.unlink(missing_ok=True)
    values = [(kind, _value(kind, results[a.id])) for (kind, _, _), a in zip(traced.calls, analyzers, strict=True)]
    final = call_preprocessing_fn(function, task, None, origin, values)  # step 3: the full pass's values
    read = _read_inputs(final.inputs, final.outputs)  # a column the function never reads is no model input
    preprocessing = keras.Model(read, final.outputs, name="preprocessing")
    plan = {
        "label": task.label,
        "features": [],
        "head": label_head(task, results),
        "left_out": {},
        "inputs": {name: kind for name, kind in task.types.items() if name in read},
        "outputs": sorted(final.outputs),
        # The columns read as free text (a tokens analyzer's): new data is told their words, not their values.
        "texts": sorted(
            {name for kind, x, _ in traced.calls if kind == "tokens" for name in _read_inputs(traced.inputs, {"x": x})}
        ),
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
    if kind in ("vocabulary", "tokens"):
        return [value for value, _ in result["ranked"]] or ["[none]"]
    return result or [0.0]


def _sample_records(examples: Examples) -> tf.Tensor:
    records = tf.data.TFRecordDataset(examples.split_files("train"), compression_type="GZIP")
    return next(iter(records.batch(SAMPLE_RECORDS)))


class AnalysisColumns(beam.DoFn):
    """A batch of serialized records → {column: values}: each analyzer's input computed by the analysis model (the
    function's tensors, on the task's parsed inputs), and the label's raw values."""

    def __init__(self, model_path: str | None, schema: Any, module: UserCode, label_columns: dict[str, str]):
        self.model_path, self.schema, self.module = model_path, schema, module
        self.label_columns = label_columns

    def setup(self) -> None:
        from kflow.components.datasets.tabular.task import TabularTask

        # its custom layers, registered before the model loads
        load_preprocessing_module(self.module.source, self.module.origin, self.module.imports)
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
