"""Is the served model the evaluated one? (TFX's InfraValidator, for what a Pusher ships.)

The Evaluator scores `model.keras`; the Pusher ships `Format-Serving/`, the SavedModel a server loads. So the
Evaluator also feeds the first `EXAMPLES` examples of the split it evaluates, as a client would (the raw inputs the
model takes: pixels, text, the CSV's columns), to the SavedModel's `serving_default` signature in a fresh
process that imports TensorFlow and NumPy only (no kflow code, no model.keras), and compares its outputs with
model.keras's on the same examples (the evaluation's own, `ServingSample`). The client starts when the Evaluator
does (`ServingClient`): its TensorFlow import and SavedModel load, most of the check's time, overlap the
evaluation, and its predictions the rest of it. The result is `evaluation/serving_check.json` and one more check
of the blessing (`serving_predictions`, the largest absolute difference, at most `TOLERANCE` times the outputs'
scale; for a model computing in bfloat16 or float16, at most four times its own distance from float32 when that is more:
low_precision.py): a model whose export lost its preprocessing, its weights or its signature is not blessed, so no
Pusher that waits for the blessing ships it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from kflow.components.util.predictions import serving_names
from kflow.pipeline.dsl.artifacts import Model

log = logging.getLogger("kflow.evaluator")

EXAMPLES = 256
# One model's float32 outputs from two runtimes (Keras' predict, the SavedModel's graph) differ by rounding, which
# grows with the outputs: measured 0 apart for MNIST, Quora and a CSV regression, 1.2e-7 for a WikiText-2 MLM
# after one epoch, 8.2e-5 for one trained seven (logits up to 15); a model that lost its weights: 0.52 (softmax).
# So the bound is TOLERANCE times the outputs' largest magnitude (at least 1).
TOLERANCE = 1e-4
REPORT = "serving_check.json"

# A server needs no Keras, and TensorFlow imports it eagerly (3 of its 9 s here) unless told to look for the legacy
# tf_keras, which a missing package makes a no-op (tensorflow/__init__.py: "Do an eager load for Keras' code").
CLIENT_ENVIRONMENT = {"TF_USE_LEGACY_KERAS": "1"}
# Given to a client started early (warm_up): it loads TensorFlow at the lowest priority, in the time the run's
# other processes leave.
IDLE_FLAG = "--idle"
# The client: TensorFlow and NumPy, the SavedModel, its serving signature; nothing of kflow. It loads TensorFlow,
# reads a line on stdin naming the SavedModel and loads it, then waits for one more naming the inputs and where to
# write the outputs (an empty stdin at either: nothing to do).
CLIENT = """
import json, os, sys
idle = sys.argv[1:] == ["--idle"]  # IDLE_FLAG
if idle:
    os.setpriority(os.PRIO_PROCESS, 0, 19)
sys.modules["jax"] = None  # TensorFlow imports JAX when it can (tf.lite's converters): 0.6 s, of no use here
import numpy as np
import tensorflow as tf

model_dir = sys.stdin.readline().strip()
if not model_dir:
    raise SystemExit(0)
if idle:  # Needed now: the usual priority again where the process may raise its own (as root), else it stays low.
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 0)
    except PermissionError:
        pass
signature = tf.saved_model.load(model_dir).signatures["serving_default"]
specs = signature.structured_input_signature[1]
request = sys.stdin.readline().split()
if not request:
    raise SystemExit(0)
given, answer = request
data = np.load(given, allow_pickle=False)
if set(data.files) == {"x"}:
    if len(specs) != 1:
        raise SystemExit(f"the serving signature takes {sorted(specs)}, the model one input")
    inputs = {next(iter(specs)): data["x"]}
else:
    inputs = {name[2:]: data[name] for name in data.files}
    if set(inputs) != set(specs):
        raise SystemExit(f"the serving signature takes {sorted(specs)}, the examples have {sorted(inputs)}")


def declared(value, spec):  # the task's column [n, 1] for a signature of one value a row [n], and back, as Keras does
    rank = spec.shape.rank
    if rank is not None and value.ndim == rank + 1 and value.shape[-1] == 1:
        return value[..., 0]
    if rank is not None and value.ndim + 1 == rank and spec.shape[-1] == 1:
        return value[..., None]
    return value


tensors = {name: tf.constant(declared(value, specs[name]), dtype=specs[name].dtype) for name, value in inputs.items()}
outputs = signature(**tensors)
# A classifier's signature answers with `scores` and the class names (`classes`); other models with one output.
output = outputs["scores"] if "scores" in outputs else next(iter(outputs.values()))
if output.dtype in (tf.bfloat16, tf.float16):  # a mixed-precision model's; NumPy cannot read bfloat16 back from .npy
    output = tf.cast(output, tf.float32)
np.save(answer, output.numpy())
print(json.dumps({"signature": "serving_default", "inputs": {n: str(s) for n, s in specs.items()}}), flush=True)
os._exit(0)  # The check waits for this process's end: not for TensorFlow's teardown (1 s here)
"""


class ServingSample:
    """The first EXAMPLES inputs of the evaluated split and model.keras's outputs for them, taken from the
    evaluation's own batches (the model is neither loaded nor run again for the check), and handed to the client as
    soon as they are in, so that its predictions overlap the rest of the evaluation."""

    def __init__(self, client: ServingClient) -> None:
        self.client = client
        self.inputs: list[Any] = []
        self.outputs: list[np.ndarray] = []
        self.names: dict[str, str] = {}
        self.count, self.sent = 0, False
        self.keras_model: Any = None

    def add(self, keras_model: Any, x: Any, outputs: np.ndarray) -> None:
        """One evaluated batch: its inputs (an array, or {name: array}) and model.keras's outputs."""
        if self.sent:
            return
        self.keras_model = keras_model
        if not self.inputs and isinstance(x, dict):
            self.names = serving_names(keras_model)
        if self.inputs and _shapes(x, outputs) != _shapes(self.inputs[0], self.outputs[0]):
            self.send()  # A batch of its own length (padded to its longest line, say): the sample ends here.
            return
        self.inputs.append(x)
        self.outputs.append(outputs)
        self.count += len(outputs)
        if self.count >= EXAMPLES:
            self.send()

    def send(self) -> None:
        """Gives the client the inputs kept so far (a split smaller than EXAMPLES: all of it), once."""
        if self.sent:
            return
        self.sent = True
        if not self.inputs:
            self.client.send(None)
        elif isinstance(self.inputs[0], dict):
            self.client.send(
                {
                    self.names.get(name, name): np.concatenate([x[name] for x in self.inputs])[:EXAMPLES]
                    for name in self.inputs[0]
                }
            )
        else:
            self.client.send(np.concatenate(self.inputs)[:EXAMPLES])

    def expected(self) -> np.ndarray | None:
        """model.keras's outputs for what the client was given; None when the split had no examples."""
        self.send()
        return np.concatenate(self.outputs)[:EXAMPLES] if self.outputs else None

    def low_precision(self) -> dict[str, Any] | None:
        """For a model that computes in bfloat16 or float16: that dtype, and how far its outputs on the sample are
        from its float32 twin's (low_precision.py); None for a float32 model."""
        from kflow.components.evaluator import low_precision

        expected = self.expected()
        served = expected is not None and getattr(self.client, "process", None) is not None  # else nothing to bound
        dtype = low_precision.low_compute_dtype(self.keras_model) if served else None
        if dtype is None:
            return None
        try:
            difference = low_precision.float32_difference(self.keras_model, self.inputs, expected)
        except Exception as error:  # a model Keras cannot rebuild from its config: the check stays float32's
            log.warning("evaluate: no float32 twin of the %s model (%s): float32's serving bound", dtype, error)
            return None
        if not np.isfinite(difference):
            log.warning("evaluate: the %s model's float32 twin is %s apart: float32's serving bound", dtype, difference)
            return None
        return {
            "compute_dtype": dtype,
            "float32_difference": difference,
            "margin": low_precision.MARGIN,
            "most": low_precision.MOST,
        }


def _shapes(x: Any, outputs: np.ndarray) -> tuple:
    """A batch's shapes but for its size: the batches of one sample are concatenated."""
    arrays = [x[name] for name in sorted(x)] if isinstance(x, dict) else [x]
    return tuple(np.shape(array)[1:] for array in [*arrays, outputs])


class ClientProcess:
    """A client process (CLIENT) loading TensorFlow, its output into a scratch folder; `idle`: at the lowest
    priority until it is told its model."""

    def __init__(self, idle: bool = False) -> None:
        self.environment = {**os.environ, **CLIENT_ENVIRONMENT}
        self.scratch = Path(tempfile.mkdtemp(prefix="kflow-serving-check-"))
        with (self.scratch / "stdout").open("w") as stdout, (self.scratch / "stderr").open("w") as stderr:
            self.popen = subprocess.Popen(
                [sys.executable, "-c", CLIENT, *([IDLE_FLAG] if idle else [])],
                env=self.environment,
                stdin=subprocess.PIPE,
                stdout=stdout,
                stderr=stderr,
                text=True,
            )

    def load(self, model_dir: Path) -> bool:
        """Tells the client its SavedModel; False when it ended already."""
        try:
            self.popen.stdin.write(f"{model_dir}\n")
            self.popen.stdin.flush()
        except (BrokenPipeError, ValueError):
            return False
        return True

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait()
        with contextlib.suppress(OSError):
            self.popen.stdin.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


_WARM: list[ClientProcess] = []
_WARM_LOCK = threading.Lock()


@contextlib.contextmanager
def warm_up(parameters: dict) -> Iterator[None]:
    """The Evaluator's warm-up (ComponentSpec.warm_up): a client started now, idle, for the Evaluator's check to
    take (`ServingClient`); stopped when the run ends if nothing took it."""
    client = ClientProcess(idle=True)
    with _WARM_LOCK:
        _WARM.append(client)
    try:
        yield
    finally:
        with _WARM_LOCK:
            untaken = any(waiting is client for waiting in _WARM)
            _WARM[:] = [waiting for waiting in _WARM if waiting is not client]
        if untaken:
            client.stop()


def _client_for(model_dir: Path) -> ClientProcess:
    """A warm client still waiting, started with this process's variables, else a new one; told `model_dir`.

    Variables set since the warm one started are not held against it: the libraries this process loaded meanwhile
    set their own (TensorFlow's `TF2_BEHAVIOR`, ...), as the client's own TensorFlow does."""
    while True:
        with _WARM_LOCK:
            client = _WARM.pop() if _WARM else None
        if client is None:
            break
        now = {**os.environ, **CLIENT_ENVIRONMENT}
        changed = sorted(name for name, value in client.environment.items() if now.get(name) != value)
        if not changed and client.load(model_dir):
            return client
        why = f"{changed[0]} changed" if changed else f"it exited ({client.popen.returncode})"
        log.info("evaluate: the serving check's warm client is not used (%s): starting a new one", why)
        client.stop()
    client = ClientProcess()
    client.load(model_dir)  # A client that ended at once says why in result().
    return client


class ServingClient:
    """The serving check's client process, started (or taken warm) before its inputs are known (`with
    ServingClient(model) as client: … client.send(inputs) … client.result(expected)`); stopped on the way out,
    whatever happened."""

    def __init__(self, model: Model, timeout: float = 600) -> None:
        self.model, self.timeout = model, timeout
        self.started = time.perf_counter()
        self.client: ClientProcess | None = None
        if (model.serving_uri / "saved_model.pb").is_file():
            self.client = _client_for(model.serving_uri)
        self.inputs_given = False

    @property
    def process(self) -> subprocess.Popen | None:
        return self.client.popen if self.client else None

    @property
    def scratch(self) -> Path | None:
        return self.client.scratch if self.client else None

    def __enter__(self) -> ServingClient:
        return self

    def __exit__(self, *_: object) -> None:
        if self.client is not None:
            self.client.stop()

    def send(self, inputs: Any) -> None:
        """Gives the client its inputs (an array, or {name: array}); None: the split had no examples."""
        if self.process is None or inputs is None:
            return
        arrays = {f"x/{name}": value for name, value in inputs.items()} if isinstance(inputs, dict) else {"x": inputs}
        # Text comes as object arrays of bytes; as fixed-width bytes it is saved without pickling.
        np.savez(self.scratch / "inputs.npz", **{name: _plain(value) for name, value in arrays.items()})
        try:
            self.process.stdin.write(f"{self.scratch / 'inputs.npz'} {self.scratch / 'outputs.npy'}\n")
            self.process.stdin.close()
        except BrokenPipeError:  # The client ended already (it could not load the model): result() says why.
            pass
        self.inputs_given = True

    def result(self, expected: np.ndarray | None, low_precision: dict[str, Any] | None = None) -> dict[str, Any]:
        """The check's outcome (also the report's line), once the client answered. `low_precision`
        (`ServingSample.low_precision`): the model computes in a low precision, whose distance from float32 widens
        the bound."""
        result: dict[str, Any] = {"tolerance": TOLERANCE, "serving_model": str(self.model.serving_uri)}
        if expected is None:
            return {**result, "passed": False, "reason": "the split has no examples to check the serving model with"}
        if self.process is None:
            missing = f"the model has no serving SavedModel ({self.model.serving_uri.name}/)"
            return {**result, "passed": False, "reason": missing}
        try:
            returncode = self.process.wait(timeout=max(self.timeout - (time.perf_counter() - self.started), 1))
        except subprocess.TimeoutExpired:
            return {**result, "passed": False, "reason": f"the serving model gave no answer in {self.timeout:.0f} s"}
        if returncode != 0 or not self.inputs_given:
            lines = (self.scratch / "stderr").read_text().strip().splitlines() or ["(no output)"]
            # TensorFlow ends an op's error with its graph node (`\t [[{{node ...}}]]`): the line before says what.
            lines = [line for line in lines if not line.lstrip().startswith("[[")] or lines
            return {**result, "passed": False, "reason": f"the serving model failed: {lines[-1][:300]}"}
        served = np.load(self.scratch / "outputs.npy").astype(np.float64)
        result.update(json.loads((self.scratch / "stdout").read_text().strip().splitlines()[-1]))
        result["seconds"] = round(time.perf_counter() - self.started, 2)
        result["examples"] = int(len(expected))
        if served.shape != expected.shape:
            return {
                **result,
                "passed": False,
                "reason": f"outputs of shape {served.shape}, model.keras's {expected.shape}",
            }
        difference = float(np.max(np.abs(served - expected))) if served.size else 0.0
        scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
        bound = TOLERANCE * scale
        if low_precision:
            result["low_precision"] = low_precision
            widened = low_precision["margin"] * low_precision["float32_difference"]
            bound = max(bound, min(widened, low_precision["most"] * scale))
        return {
            **result,
            "tolerance": bound,
            "output_scale": scale,
            "max_abs_difference": difference,
            "passed": bool(difference <= bound),
        }


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
