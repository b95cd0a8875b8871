"""The serving check's client (serving_check.py runs this file's text with `python -c`): TensorFlow and NumPy, the
SavedModel, its serving signature; nothing of kflow. It loads TensorFlow, reads a line on stdin naming the SavedModel
and loads it, then waits for one more naming the inputs and where to write the outputs, writes them and their report
(`<outputs>.json`), and waits for the next model (an empty stdin at any of these: nothing more to do)."""

import gc
import json
import os
import sys

IDLE_FLAG = "--idle"  # serving_check.IDLE_FLAG: load TensorFlow at the lowest priority until told a model
np = tf = None  # NumPy and TensorFlow, imported by main()


def declared(value, spec):  # the task's column [n, 1] for a signature of one value a row [n], and back, as Keras does
    rank = spec.shape.rank
    if rank is not None and value.ndim == rank + 1 and value.shape[-1] == 1:
        return value[..., 0]
    if rank is not None and value.ndim + 1 == rank and spec.shape[-1] == 1:
        return value[..., None]
    return value


def answer(model_dir):
    signature = tf.saved_model.load(model_dir).signatures["serving_default"]
    specs = signature.structured_input_signature[1]
    request = sys.stdin.readline().split()
    if not request:
        os._exit(0)
    given, written = request
    data = np.load(given, allow_pickle=False)
    if set(data.files) == {"x"}:
        if len(specs) != 1:
            raise SystemExit(f"the serving signature takes {sorted(specs)}, the model one input")
        inputs = {next(iter(specs)): data["x"]}
    else:
        inputs = {name[2:]: data[name] for name in data.files}
        if set(inputs) != set(specs):
            raise SystemExit(f"the serving signature takes {sorted(specs)}, the examples have {sorted(inputs)}")
    tensors = {
        name: tf.constant(declared(value, specs[name]), dtype=specs[name].dtype) for name, value in inputs.items()
    }
    outputs = signature(**tensors)
    # A classifier's signature answers with `scores` and the class names (`classes`); other models with one output.
    output = outputs["scores"] if "scores" in outputs else next(iter(outputs.values()))
    if output.dtype in (tf.bfloat16, tf.float16):  # a mixed-precision model's; NumPy cannot read bfloat16 from .npy
        output = tf.cast(output, tf.float32)
    np.save(written, output.numpy())
    # The answer's end, which the check waits for: its report, whole once renamed into place.
    with open(written + ".part", "w") as report:
        json.dump({"signature": "serving_default", "inputs": {n: str(s) for n, s in specs.items()}}, report)
    os.replace(written + ".part", written + ".json")


def main() -> None:
    global np, tf
    idle = sys.argv[1:] == [IDLE_FLAG]
    if idle:
        os.setpriority(os.PRIO_PROCESS, 0, 19)
    sys.modules["jax"] = None  # TensorFlow imports JAX when it can (tf.lite's converters): 0.6 s, of no use here
    import numpy as np
    import tensorflow as tf

    while True:  # a model, its inputs, the answer; then the next model of the same process, until stdin ends
        model_dir = sys.stdin.readline().strip()
        if not model_dir:
            os._exit(0)  # not TensorFlow's teardown (1 s here)
        if idle:  # Needed now: the usual priority again where the process may raise its own (as root), else low.
            idle = False
            try:
                os.setpriority(os.PRIO_PROCESS, 0, 0)
            except PermissionError:
                pass
        answer(model_dir)
        gc.collect()  # the model's graphs and weights, before the wait for the next one


if __name__ == "__main__":  # as serving_check runs it (`python -c`); nothing when imported
    main()
