"""A user's `preprocessing_fn(inputs, analyzers)` run on symbolic Keras inputs: the trace that fails a mistake in one
line naming the module's line, before any data is read in bulk.

The Transform traces it on a sample of the training split (user_preprocessing.py); `kflow validate` traces it on the
columns a sample of the source has, each analyzer answering with a placeholder (no data: `sample` None), so a name
that is no column, a wrong return value, a layer its saved model could not load (layer_check.py) or an exception in
the function is said before the ingest runs.
"""

from __future__ import annotations

import re
import traceback
import warnings
from typing import Any

import keras
import numpy as np

from kflow.components.datasets.module_imports import folder_on_path
from kflow.components.transform.layer_check import calls_of, unsavable_layer
from kflow.components.transform.module_check import FUNCTION, load_preprocessing_module
from kflow.pipeline.dsl.config_validation import did_you_mean

KERAS_STYLING = re.compile(r"\x1b\[[01]m")  # the bold Keras wraps its messages in
# What fails whatever the data, by a phrase of its message, and what to do instead.
WAYS_OUT = {
    "KerasTensor cannot be used as input to a TensorFlow function": "`inputs` are Keras tensors: use keras.ops or "
    "Keras layers on them (TextVectorization lowercases and splits text itself: vocabulary=analyzers.tokens(x))",
    "must set the layer's vocabulary": "a layer is adapted here by the analyzers, not adapt(): give it "
    "vocabulary=analyzers.tokens(x) (TextVectorization) or analyzers.vocabulary(x) (StringLookup)",
    # numpy's functions of a Keras tensor (np.log1p(inputs["x"])): Keras' "A KerasTensor is symbolic: …"
    "You cannot convert it to a NumPy array": "`inputs` are Keras tensors, not arrays: compute with keras.ops "
    "(keras.ops.log1p, keras.ops.where), which mirror numpy's functions",
}


class PreprocessingError(ValueError):
    """The user's preprocessing_fn failed: one line naming its file and line."""


class Misuse(TypeError):
    """What kflow refuses of a preprocessing_fn whatever the data: a wrong return value, an analyzer given what it
    does not take, a layer its saved model could not load; `line`, the module's line at fault when no frame of the
    module's names it (the call that made the layer)."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


class Analyzers:
    """What `preprocessing_fn` calls: each call records an analyzer and answers with its value, from `values`
    (the full pass's, by call order) or else computed on the traced sample."""

    def __init__(self, sample: dict[str, Any] | None, inputs: dict[str, Any], values: list[Any] | None = None):
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

    def tokens(self, x: Any, top_k: int | None = None, frequency_threshold: int = 1, ngrams: int = 1) -> list[str]:
        """The most frequent words of a text tensor as `TextVectorization` makes them by default (ASCII lowercase,
        punctuation stripped, split on whitespace; with `ngrams` n, its 1- to n-grams too), for its `vocabulary=`:
        TFT's `compute_and_apply_vocabulary` of split text. Never empty (a placeholder when nothing qualifies)."""
        return self._ask("tokens", x, top_k=top_k, frequency_threshold=frequency_threshold, ngrams=int(ngrams))

    def quantiles(self, x: Any, num_buckets: int) -> list[float]:
        """Bucket boundaries splitting the values into num_buckets of about equal count (Beam's approximate
        quantiles: each boundary's rank within 0.1 % of the rows of the exact one's)."""
        if int(num_buckets) < 2:
            raise ValueError(f"quantiles: num_buckets must be at least 2, got {num_buckets}")
        return self._ask("quantiles", x, num_buckets=int(num_buckets))

    def _ask(self, kind: str, x: Any, **options: Any) -> Any:
        if not isinstance(x, keras.KerasTensor):
            raise Misuse(f"analyzers.{kind} takes a tensor computed from `inputs`, got {type(x).__name__}")
        index = len(self.calls)
        self.calls.append((kind, x, options))
        if self.values is not None:
            if index >= len(self.values) or self.values[index][0] != kind:
                raise ValueError(f"analyzers.{kind}: the full pass's call {index + 1} differs from the trace's")
            return self.values[index][1]
        if self.sample is None:  # traced without data (kflow validate): x's type checked, a value of a spread column
            answer(kind, np.array([], dtype=object if x.dtype == "string" else np.float64), options)
            inner = np.linspace(0, 1, options.get("num_buckets", 2) + 1)[1:-1].tolist()
            return {"mean": 0.0, "variance": 1.0, "min": 0.0, "max": 1.0, "quantiles": inner}.get(kind, ["[none]"])
        values = keras.Model(self.inputs, x)(self.sample)
        return answer(kind, np.asarray(values).ravel(), options)


def answer(kind: str, values: np.ndarray, options: dict[str, Any]) -> Any:
    """An analyzer's value on values held in memory (the traced sample's)."""
    if values.dtype.kind in "SUO":
        values = np.array([v for v in values if v], dtype=object)
        if kind not in ("vocabulary", "tokens"):
            raise Misuse(f"analyzers.{kind} takes numbers, got strings")
    elif kind in ("vocabulary", "tokens"):
        raise Misuse(f"analyzers.{kind} takes strings, got numbers")
    else:
        values = values[np.isfinite(values.astype(np.float64))].astype(np.float64)
    if kind == "tokens":  # the words of each text, counted as the Beam pass counts them (counts._tokens)
        from kflow.components.transform.counts import _tokens

        texts = [v if isinstance(v, bytes) else str(v).encode() for v in values]
        values = np.array(_tokens({"text": texts}, "text", options["ngrams"]), dtype=object)
    if kind in ("vocabulary", "tokens"):
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


def call_preprocessing_fn(
    function: Any, task: Any, sample: dict | None, origin: str, values: list | None = None
) -> Analyzers:
    """Runs preprocessing_fn on fresh inputs; its outputs checked: a dict of tensors, numeric, a row per row."""
    inputs = {name: keras.Input(shape=(1,), dtype=_dtype(kind), name=_safe(name)) for name, kind in task.types.items()}
    analyzers = Analyzers(sample, inputs, values)
    try:
        outputs = function(Columns(inputs, not_features=_not_features(task)), analyzers)
        if not isinstance(outputs, dict):
            raise Misuse(f"{FUNCTION} must return a dict of tensors (the model's inputs), got {type(outputs).__name__}")
        if not outputs:
            raise Misuse(f"{FUNCTION} returned an empty dict: the model would have no inputs")
        for name, tensor in outputs.items():
            if not isinstance(tensor, keras.KerasTensor):
                raise Misuse(f"{FUNCTION}'s output {name!r} is a {type(tensor).__name__}, not a tensor from inputs")
            if tensor.dtype == "string":
                raise Misuse(f"{FUNCTION}'s output {name!r} is strings: map them to numbers (StringLookup)")
        refused = unsavable_layer(inputs, outputs, function.__globals__.get("__kflow_source__", ""))
        if refused is not None:  # before the Beam pass, which would load it (AnalysisColumns), and the model's save
            raise Misuse(*refused)
        if sample is not None:  # the traced model runs on the sample
            _refuse_non_finite(keras.Model(inputs, outputs)(sample))
    except Exception as error:
        kind = (
            "KeyError"
            if isinstance(error, KeyError)
            else "TypeError"
            if isinstance(error, Misuse)
            else type(error).__name__
        )
        raise PreprocessingError(
            f"transform.module: {_where(error, origin, function)}: {kind}: {_first_line(error)}"
        ) from error
    analyzers.outputs = outputs
    return analyzers


def _not_features(task: Any) -> dict[str, str]:
    """{column: what it is} of the data's columns that are no feature: the label, the key, the row names."""
    found = dict(getattr(task, "not_features", None) or {})
    if getattr(task, "label", None):
        found.setdefault(task.label, "the label (data.label)")
    return found


class Columns(dict):
    """preprocessing_fn's `inputs`: a name that is no column says the likely one and the columns; one that is the
    label (TFX's preprocessing_fn gets it too) says that it is."""

    def __init__(self, inputs: dict[str, Any], not_features: dict[str, str] | None = None):
        super().__init__(inputs)
        self.not_features = not_features or {}

    def __missing__(self, name: Any) -> Any:
        if name in self.not_features:
            raise NoColumn(f"{name!r} is {self.not_features[name]}, not a feature: preprocessing_fn gets the "
                           f"features (columns: {', '.join(self)}); the Trainer reads the label as it is")  # fmt: skip
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
    # The function's code names the file it was first compiled under (a module loads once per process: validate's
    # check at the start of `kflow run` may have loaded it before the Transform).
    if isinstance(error, Misuse) and error.line is not None:
        return f"{origin}:{error.line}"
    filename = function.__code__.co_filename if function is not None else origin
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename in (filename, origin)]
    if frames:
        return f"{origin}:{frames[-1].lineno}"
    called = re.match(r"Exception encountered when calling (\w+)\.call", KERAS_STYLING.sub("", str(error)))
    if called and function is not None:  # a layer failed in Keras' call, not in the module: the line that made it
        lines = calls_of(function.__globals__.get("__kflow_source__", ""), called.group(1))
        if lines:
            return f"{origin}:{lines[0]}"
    return f"{origin}:{function.__code__.co_firstlineno}" if function is not None else origin


def _first_line(error: BaseException) -> str:
    """The error's first line; of an error Keras wraps ("Exception encountered when calling X.call()."), its
    reason's, without Keras' bold, and a way out where kflow knows one."""
    lines = [line.strip() for line in KERAS_STYLING.sub("", str(error)).strip().splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("Exception encountered when calling"):
        lines = [f"{lines[0].removeprefix('Exception encountered when calling ').rstrip('.')}: {lines[1]}"]
    said = lines[0] if lines else ""
    for cause, way_out in WAYS_OUT.items():
        if cause in said:  # up to the end of the sentence that says it, and the way out
            end = said.find(". ", said.index(cause))
            return f"{said if end < 0 else said[: end + 1]} ({way_out})"
    return said


def load_module(source: str, origin: str, imports: dict[str, str] | None = None) -> Any:
    try:
        return load_preprocessing_module(source, origin, imports)
    except ValueError:
        raise
    except Exception as error:
        raise PreprocessingError(
            f"transform.module: {_where(error, origin)}: {type(error).__name__}: {_first_line(error)}"
        ) from error


def _dtype(kind: str) -> str:
    return "string" if kind == "string" else "float32"


def _safe(name: str) -> str:
    return "".join(char if char.isascii() and (char.isalnum() or char == "_") else "_" for char in name) or "feature"


# What Keras warns at each build of a model whose inputs are keyed by the columns' names while each keras.Input has
# its `_safe` name (`Web.Description` → `Web_Description`): kflow's choice, not the user's (a user trial's `kflow
# validate` printed it once a column, before saying the config was valid).
KEYS_ARE_NOT_NAMES = "When providing `inputs` as a dict, all keys in the dict must match the names of the corresponding"


# Set once, for the process (as tabular_mlp.py does): catch_warnings is not thread-safe, and the local runner runs
# a wave's nodes in threads.
warnings.filterwarnings("ignore", message=re.escape(KEYS_ARE_NOT_NAMES), category=UserWarning)


def preprocessing_problem(module: str, types: dict[str, str], not_features: dict[str, str] | None = None) -> str | None:
    """Why `module`'s preprocessing_fn fails on columns of these `types` ({name: int, float, string, bool}) whatever
    their values, traced without data; None otherwise (what the data shows, a NaN, the Transform finds).
    `not_features`: the data's other columns, {column: what it is} (the label, the key)."""
    from pathlib import Path
    from types import SimpleNamespace

    origin = Path(module).name  # as the Transform names it: the same line from validate and run
    try:
        with folder_on_path(module):  # its helpers, beside it (module_imports.py)
            function = getattr(load_module(Path(module).read_text(), origin), FUNCTION)
        task = SimpleNamespace(types=types, not_features=not_features)
        traced = call_preprocessing_fn(function, task, None, origin)
        row = {name: np.array([["a"]] if kind == "string" else [[0.0]], dtype=object if kind == "string" else "float32")
               for name, kind in types.items()}  # fmt: skip
        try:  # a layer that holds no state (no vocabulary: adapt() expected) fails on any row
            keras.Model(traced.inputs, traced.outputs)(row)
        except Exception as error:
            if any(cause in str(error) for cause in WAYS_OUT):
                raise PreprocessingError(
                    f"transform.module: {_where(error, origin, function)}: {type(error).__name__}: {_first_line(error)}"
                ) from error
    except (PreprocessingError, ValueError) as error:
        # Only what fails whatever the data: a column it lacks, a misuse, a name the code never defined, a module
        # it cannot import, a TensorFlow function of a Keras tensor, a layer of no state. Anything else may come of
        # the placeholder values (a division by max - min, a vocabulary's index); the Transform traces the sample.
        cause = error.__cause__
        data_free = isinstance(cause, NoColumn | Misuse | NameError | ImportError) or any(
            phrase in str(cause) for phrase in WAYS_OUT
        )
        return str(error) if data_free else None
    return None
