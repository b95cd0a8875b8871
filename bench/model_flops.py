"""A trained model's FLOPs an example, counted from its graph: what bench/guides/run.py's utilisation column uses.

    .venv/bin/python bench/model_flops.py RUN_FOLDER     # a kflow run folder; prints one JSON line

The run's model (its Trainer's model.keras, loaded as the Evaluator loads it) is traced on one real example of the
Trainer's Examples (read by the model's own task, so every shape is the data's: a text's token count, an image's size)
into a TensorFlow graph with its weights folded in. A task that cuts each batch to its lines (the masked LM under
TensorFlow: components/datasets/wikitext2/task.py) is counted twice: at the full shapes every example is padded to (as
the guide's script trains: `forward`, `training`), and over the batches it trains on (as each process or replica reads
them), up to SAMPLE_BATCHES of them in file order, per example (`training_as_trained`). Its multiply-accumulate
ops are counted, 2 FLOPs a multiply-add: MatMul 2·m·k·n, BatchMatMul the same a batch, Einsum 2 × the product of every
index's size (keras-hub's attention), Conv2D 2 × output size × kernel height × width × input channels, depthwise
convolutions without the input channels; a dimension the graph leaves unknown is the example's batch, 1. Element-wise
ops, embedding look-ups and the optimizer's update are left out, and training is 3× the forward pass (MFU's
convention, as bench/peak.py counts the MLM by hand).
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path


def forward_flops(run_folder: Path) -> dict[str, float]:
    """{"forward": FLOPs of one example's forward pass, "<op type>": each op type's part}."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    from kflow.components.datasets.task import task_for_model
    from kflow.components.trainer.training import load_trained
    from kflow.pipeline.dsl.artifacts import Examples, Model

    trainer = json.loads((Path(run_folder) / "run.json").read_text())["components"]["train"]
    model = Model(trainer["outputs"]["model"]["uri"])  # a cached step's artifacts are in an earlier run's folder
    task = task_for_model(model, model.training_schema_file)
    examples = Examples(trainer["inputs"]["examples"]["uri"])
    keras_model = load_trained(model.keras_file, model.task_spec.get("model_name"))

    def counted(x) -> dict[str, float]:
        specs = tf.nest.map_structure(lambda tensor: tf.TensorSpec(tensor.shape, tensor.dtype), x)
        concrete = tf.function(lambda given: keras_model(given, training=False)).get_concrete_function(specs)
        parts: dict[str, float] = {}
        for op in convert_variables_to_constants_v2(concrete).graph.get_operations():
            count = COUNTS.get(op.type)
            if count is not None:
                parts[op.type] = parts.get(op.type, 0.0) + count(op)
        return parts

    trims = getattr(task, "trim_batches", False)
    task.trim_batches = False
    parts = counted(next(iter(task.dataset(examples, examples.splits[0], batch_size=1, training=False, seed=0)))[0])
    figures = {"forward": sum(parts.values()), **parts}
    history = json.loads((Path(trainer["outputs"]["model_run"]["uri"]) / "history.json").read_text())
    if trims and history.get("backend") == "tensorflow":
        task.trim_batches = True
        # Cut as read: one process' global batch (Keras' fit splits it after), a parameter server's workers' global
        # batches, a multi-process loop's replicas' own shares.
        processes, replicas = int(history.get("processes") or 1), int(history.get("replicas") or 1)
        shared = processes > 1 and history.get("strategy") != "parameter_server"
        batch = max(history["batch_size"] // replicas, 1) if shared else history["batch_size"]
        batches = task.dataset(examples, "train", batch_size=batch, training=False, seed=0)
        total = rows = 0.0
        for x, *_ in batches.take(SAMPLE_BATCHES):
            total += sum(counted(x).values())
            rows += int(tf.nest.flatten(x)[0].shape[0])
        figures["forward_as_trained"] = total / rows
    return figures


SAMPLE_BATCHES = 16  # one sorting window of the masked LM's


def _dims(tensor) -> list[int]:
    return [size if size is not None else 1 for size in tensor.shape.as_list()]


def _matmul(op) -> float:
    a = _dims(op.inputs[0])
    transposed = op.get_attr("transpose_a") if op.type == "MatMul" else op.get_attr("adj_x")
    inner = a[-2] if transposed else a[-1]
    return 2.0 * math.prod(_dims(op.outputs[0])) * inner


def _einsum(op) -> float:
    operands = op.get_attr("equation").decode().split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for operand, tensor in zip(operands, op.inputs, strict=True):
        shape, letters = _dims(tensor), operand.replace("...", "")
        if "..." in operand:  # the letters name the last dimensions; the ellipsis' own count as one index, "."
            sizes["."] = math.prod(shape[: len(shape) - len(letters)])
            shape = shape[len(shape) - len(letters) :]
        sizes.update(zip(letters, shape, strict=True))
    return 2.0 * math.prod(sizes.values())


def _conv(op) -> float:
    kernel = _dims(op.inputs[1])  # [height, width, in, out] (depthwise: [height, width, in, multiplier])
    per_output = math.prod(kernel[:2]) * (1 if op.type == "DepthwiseConv2dNative" else kernel[2])
    return 2.0 * math.prod(_dims(op.outputs[0])) * per_output


COUNTS = {"MatMul": _matmul, "BatchMatMulV2": _matmul, "BatchMatMulV3": _matmul, "Einsum": _einsum,
          "Conv2D": _conv, "DepthwiseConv2dNative": _conv}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__.splitlines()[2].strip(), file=sys.stderr)
        return 2
    figures = forward_flops(Path(args[0]))
    trained = {"training_as_trained": 3 * figures["forward_as_trained"]} if "forward_as_trained" in figures else {}
    print(json.dumps({**figures, "training": 3 * figures["forward"], **trained}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
