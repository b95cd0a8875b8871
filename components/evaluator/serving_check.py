"""Is the served model the evaluated one? (TFX's InfraValidator, for what a Pusher ships.)

The Evaluator scores `model.keras`; the Pusher ships `Format-Serving/`, the SavedModel a server loads. So the
Evaluator also feeds the first `EXAMPLES` examples of the split it evaluates, as a client would (the raw inputs the
model takes: pixels, text, the CSV's columns), to the SavedModel's `serving_default` signature in a fresh
process that imports TensorFlow and NumPy only (no kflow code, no model.keras), and compares its outputs with
model.keras's on the same examples (the evaluation's own, `ServingSample`). The client starts when the Evaluator
does (`ServingClient`): its TensorFlow import and SavedModel load, most of the check's time, overlap the
evaluation, and its predictions the rest of it. Once it has answered, it is kept for this process's next check, of
another model (as a model server holds several; the models of a pipeline's Evaluators, or of the runs a notebook
makes): its TensorFlow import, 5 s of CPU, is paid once a process (30 times in one `make test`), and it is stopped when
the process ends. The result is `evaluation/serving_check.json` and one more check
of the blessing (`serving_predictions`, the largest absolute difference, at most `TOLERANCE` times the outputs'
scale; for a model computing in bfloat16 or float16, at most four times its own distance from float32 when that is more:
low_precision.py): a model whose export lost its preprocessing, its weights or its signature is not blessed, so no
Pusher that waits for the blessing ships it.
"""

from __future__ import annotations

import atexit
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

from kflow.components.evaluator.serving_client import IDLE_FLAG  # a warm client's: TensorFlow loaded at low priority
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
# The client (serving_client.py), run as its text: its folder, kflow's, is not on its path.
CLIENT = (Path(__file__).parent / "serving_client.py").read_text(encoding="utf-8")


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
        self.models = 0  # told so far: the files of each answer are numbered by it
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
        for done in self.answer_files() if self.models else ():  # the last answer's, read already
            done.unlink(missing_ok=True)
        self.models += 1
        try:
            self.popen.stdin.write(f"{model_dir}\n")
            self.popen.stdin.flush()
        except (BrokenPipeError, ValueError):
            return False
        return True

    def answer_files(self) -> tuple[Path, Path, Path]:
        """(inputs, outputs, report) of the answer about the model told last."""
        stem = self.scratch / str(self.models)
        return stem.with_suffix(".npz"), stem.with_suffix(".npy"), stem.with_suffix(".npy.json")

    def running(self) -> bool:
        return self.popen.poll() is None

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait()
        with contextlib.suppress(OSError):
            self.popen.stdin.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


_WARM: list[ClientProcess] = []
_SPARE: list[ClientProcess] = []  # a client that answered, for the next check (at most one)
_WARM_LOCK = threading.Lock()


def _keep_spare(*clients: ClientProcess) -> None:
    """`clients` (one, or none) the spare; the one before stopped."""
    with _WARM_LOCK:
        earlier = _SPARE[:]
        _SPARE[:] = clients
    for spare in earlier:
        spare.stop()


@atexit.register
def stop_spares() -> None:
    """Stops the spare client (at the process's end; a client whose parent died ends itself, its stdin closed)."""
    _keep_spare()


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
    """A warm client still waiting, else the spare of an earlier check, started with this process's variables,
    else a new one; told `model_dir`.

    Variables set since the warm one started are not held against it: the libraries this process loaded meanwhile
    set their own (TensorFlow's `TF2_BEHAVIOR`, ...), as the client's own TensorFlow does."""
    while True:
        with _WARM_LOCK:
            client = _WARM.pop() if _WARM else _SPARE.pop() if _SPARE else None
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
        self.inputs_given = self.answered = False

    @property
    def process(self) -> subprocess.Popen | None:
        return self.client.popen if self.client else None

    @property
    def scratch(self) -> Path | None:
        return self.client.scratch if self.client else None

    def __enter__(self) -> ServingClient:
        return self

    def __exit__(self, *_: object) -> None:
        if self.client is None:
            return
        if self.answered and self.client.running():
            _keep_spare(self.client)
        else:
            self.client.stop()

    def send(self, inputs: Any) -> None:
        """Gives the client its inputs (an array, or {name: array}); None: the split had no examples."""
        if self.process is None or inputs is None:
            return
        arrays = {f"x/{name}": value for name, value in inputs.items()} if isinstance(inputs, dict) else {"x": inputs}
        given, written, _ = self.client.answer_files()
        # Text comes as object arrays of bytes; as fixed-width bytes it is saved without pickling.
        np.savez(given, **{name: _plain(value) for name, value in arrays.items()})
        try:
            self.process.stdin.write(f"{given} {written}\n")
            self.process.stdin.flush()
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
        _, written, report = self.client.answer_files()
        deadline = self.started + self.timeout
        # The answer's report, or the client's end: a client that fails exits, saying why on its stderr.
        while self.inputs_given and not report.exists() and self.client.running():
            if time.perf_counter() > deadline:
                return {
                    **result,
                    "passed": False,
                    "reason": f"the serving model gave no answer in {self.timeout:.0f} s",
                }
            time.sleep(0.02)
        if not self.inputs_given or not report.exists():
            with contextlib.suppress(subprocess.TimeoutExpired):  # ended: its stderr whole; else no wait unbounded
                self.process.wait(timeout=5)
            lines = (self.scratch / "stderr").read_text().strip().splitlines() or ["(no output)"]
            # TensorFlow ends an op's error with its graph node (`\t [[{{node ...}}]]`): the line before says what.
            lines = [line for line in lines if not line.lstrip().startswith("[[")] or lines
            return {**result, "passed": False, "reason": f"the serving model failed: {lines[-1][:300]}"}
        self.answered = True
        served = np.load(written).astype(np.float64)
        result.update(json.loads(report.read_text()))
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
