"""Is the served model the evaluated one? (TFX's InfraValidator, for what a Pusher ships.)

The Evaluator scores `model.keras`; the Pusher ships `Format-Serving/`, the SavedModel a server loads. So the
Evaluator also feeds up to `EXAMPLES` examples of the split it evaluates, as a client would (the raw inputs the
model takes: pixels, text, the CSV's columns), to the SavedModel's `serving_default` signature in a fresh
process that imports TensorFlow and NumPy only (no kflow code, no model.keras), and compares its outputs with
model.keras's on the same examples. The result is `evaluation/serving_check.json` and one more check of the
blessing (`serving_predictions`, the largest absolute difference, at most `TOLERANCE`): a model whose export
lost its preprocessing, its weights or its signature is not blessed, so no Pusher that waits for the blessing
ships it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from kflow.pipeline.dsl.artifacts import Model

EXAMPLES = 256
# One model's float32 outputs from two runtimes (Keras' predict, the SavedModel's graph): measured 0 apart for
# MNIST, Quora and a CSV regression, 1.2e-7 for the WikiText-2 MLM; a model that lost its weights: 0.52.
TOLERANCE = 1e-4
REPORT = "serving_check.json"

# The client: TensorFlow and NumPy, the SavedModel, its serving signature; nothing of kflow.
CLIENT = """
import json, sys
import numpy as np
import tensorflow as tf

saved, given, answer = sys.argv[1:4]
signature = tf.saved_model.load(saved).signatures["serving_default"]
specs = signature.structured_input_signature[1]
data = np.load(given, allow_pickle=False)
if set(data.files) == {"x"}:
    if len(specs) != 1:
        raise SystemExit(f"the serving signature takes {sorted(specs)}, the model one input")
    inputs = {next(iter(specs)): data["x"]}
else:
    inputs = {name[2:]: data[name] for name in data.files}
    if set(inputs) != set(specs):
        raise SystemExit(f"the serving signature takes {sorted(specs)}, the examples have {sorted(inputs)}")
tensors = {name: tf.constant(value, dtype=specs[name].dtype) for name, value in inputs.items()}
outputs = signature(**tensors)
(output,) = outputs.values()
np.save(answer, output.numpy())
print(json.dumps({"signature": "serving_default", "inputs": {n: str(s) for n, s in specs.items()}}))
"""


def examples_and_outputs(task_object: Any, keras_model: Any, examples: Any, split: str, seed: int) -> tuple[Any, Any]:
    """Up to EXAMPLES inputs of `split` (an array, or {name: array}) and model.keras's outputs for them."""
    inputs, outputs, count = [], [], 0
    batches = task_object.dataset(examples, split, batch_size=64, training=False, seed=seed)
    for batch in batches.as_numpy_iterator():
        x = batch[0]
        inputs.append(x)
        outputs.append(np.asarray(keras_model.predict_on_batch(x), dtype=np.float64))
        count += len(outputs[-1])
        if count >= EXAMPLES:
            break
    if not inputs:
        return None, None
    if isinstance(inputs[0], dict):
        names = serving_names(keras_model)
        joined = {names.get(name, name): np.concatenate([x[name] for x in inputs])[:EXAMPLES] for name in inputs[0]}
    else:
        joined = np.concatenate(inputs)[:EXAMPLES]
    return joined, np.concatenate(outputs)[:EXAMPLES]


def serving_names(keras_model: Any) -> dict[str, str]:
    """{feature name: the serving signature's name for it}: TensorFlow takes only some characters in a
    signature's input names, so a model keeps its features' names as its input keys and names its Input
    layers with safe ones (`glucose (mg/dl)` → `glucose__mg_dl_`), which the SavedModel's signature takes."""
    structure = keras_model.input
    if not isinstance(structure, dict):
        return {}
    return {key: tensor.name for key, tensor in structure.items()}


def check_serving(model: Model, inputs: Any, expected: np.ndarray | None, timeout: float = 600) -> dict[str, Any]:
    """Runs the serving signature on `inputs` in a fresh process; the check's outcome (also the report's line)."""
    result: dict[str, Any] = {"tolerance": TOLERANCE, "serving_model": str(model.serving_uri)}
    if inputs is None:
        return {**result, "passed": False, "reason": "the split has no examples to check the serving model with"}
    if not (model.serving_uri / "saved_model.pb").is_file():
        return {**result, "passed": False, "reason": f"the model has no serving SavedModel ({model.serving_uri.name}/)"}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kflow-serving-check-") as scratch:
        given, answer = Path(scratch) / "inputs.npz", Path(scratch) / "outputs.npy"
        arrays = {f"x/{name}": value for name, value in inputs.items()} if isinstance(inputs, dict) else {"x": inputs}
        # Text comes as object arrays of bytes; as fixed-width bytes it is saved without pickling.
        np.savez(given, **{name: _plain(value) for name, value in arrays.items()})
        done = subprocess.run(
            [sys.executable, "-c", CLIENT, str(model.serving_uri), str(given), str(answer)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines() or ["(no output)"]
            return {**result, "passed": False, "reason": f"the serving model failed: {lines[-1][:300]}"}
        served = np.load(answer).astype(np.float64)
        result.update(json.loads(done.stdout.strip().splitlines()[-1]))
    result["seconds"] = round(time.perf_counter() - started, 2)
    result["examples"] = int(len(expected))
    if served.shape != expected.shape:
        return {**result, "passed": False, "reason": f"outputs of shape {served.shape}, model.keras's {expected.shape}"}
    difference = float(np.max(np.abs(served - expected))) if served.size else 0.0
    return {**result, "max_abs_difference": difference, "passed": bool(difference <= TOLERANCE)}


def _plain(value: np.ndarray) -> np.ndarray:
    return value.astype(np.bytes_) if value.dtype == object else value


def as_check(outcome: dict[str, Any]) -> dict[str, Any]:
    """The outcome as one check of the blessing."""
    check = {
        "metric": "serving_predictions",
        "value": outcome.get("max_abs_difference"),
        "bound": "upper_bound",
        "threshold": outcome["tolerance"],
        "passed": outcome["passed"],
    }
    if "reason" in outcome:
        check["reason"] = outcome["reason"]
    return check
