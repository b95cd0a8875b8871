"""lean_imports: Keras and TensorFlow load without scikit-learn, matplotlib (and JAX, under another backend), which
stay importable afterwards; Keras still trains. Each case in a fresh interpreter: this one has loaded Keras."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, sys
if sys.argv[1] == "lean":
    from kflow.pipeline.dsl import lean_imports
    lean_imports.install()
    lean_imports.install()
import keras, tensorflow
loaded = {name: name in sys.modules for name in ("sklearn", "matplotlib", "jax")}
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
history = model.fit(tensorflow.ones((8, 3)), tensorflow.zeros((8, 1)), epochs=2, verbose=0)
import jax, matplotlib.pyplot, sklearn.metrics  # importable afterwards
finders = sum(type(finder).__name__ == "_SkipWhileLoading" for finder in sys.meta_path)
print(json.dumps({"loaded": loaded, "epochs": len(history.history["loss"]), "finders": finders}))
"""


def probe(mode: str, backend: str) -> dict:
    environment = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, mode], env=environment, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("backend", ["tensorflow", pytest.param("jax", marks=pytest.mark.slow)])
def test_keras_loads_without_the_optional_libraries_and_still_trains(backend):
    lean = probe("lean", backend)
    assert lean["loaded"] == {"sklearn": False, "matplotlib": False, "jax": backend == "jax"}
    assert lean["epochs"] == 2 and lean["finders"] == 1


@pytest.mark.slow
def test_keras_and_tensorflow_load_them_by_themselves():
    """What there is to skip: without install(), loading Keras and TensorFlow here loads all three."""
    plain = probe("plain", "tensorflow")
    assert plain["loaded"] == {"sklearn": True, "matplotlib": True, "jax": True}
    assert plain["epochs"] == 2 and plain["finders"] == 0


def test_a_tensorflow_training_and_a_tables_transform_load_no_jax_and_no_keras_hub():
    """What kflow's own modules add on top: the Trainer's fit (its JAX scan imports JAX where it runs) and the
    Transform (each dataset's task imported only when it is the run's) load neither under TensorFlow (1 s a run);
    a table's task loads no other dataset's (WikiText-2's would bring keras-hub, 0.7 s of each run)."""
    probe = (
        "import sys; from kflow.pipeline.dsl import lean_imports; lean_imports.install(); "
        "import kflow.components.trainer.fit, kflow.components.transform.executor; "
        "from kflow.components.datasets import get_dataset; get_dataset('csv').task_class(); "
        "print(sorted(name for name in ('jax', 'keras_hub') if name in sys.modules)); "
        "print(sorted(n for n in sys.modules if n.startswith('kflow.components.datasets.') and n.endswith('.task') "
        "and n.count('.') == 4))"
    )
    environment = {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([sys.executable, "-c", probe], env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-2:] == ["[]", "['kflow.components.datasets.tabular.task']"]
