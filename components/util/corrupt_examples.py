"""One line for Examples that cannot be read: what the reader's error says of the data, under the artifact's name.

`@reads_examples` on an executor's `run`: the statistics, the Transform, the Tuner, the Trainer, the Evaluator, the
bulk inferrer, the predictor.

Every component that reads an `Examples` artifact names it when its files turn out damaged (a flipped block, a
file cut short after the ingest's hashes were recorded): "the Examples under URI are corrupt: REASON". The readers
say it each their own way, and none names the data: TensorFlow's (the Trainer's tf.data) raise `DataLossError`
naming the op ("corrupted record at 583586 [Op:IteratorGetNext]"); Beam's `ReadFromTFRecord` (the Transform's
analyzers, the statistics) raises zlib's `error` for a damaged gzip stream and a `ValueError` "Not a valid
TFRecord. …" for a bad frame; Beam's worker processes raise either again as a RuntimeError that carries its text.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
import zlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

Executor = TypeVar("Executor", bound=Callable[..., Any])

_BEAM_FRAME = re.compile(r"Not a valid TFRecord\. ([^:\n]+)")
_ZLIB = re.compile(r"zlib\.error: ([^\n]+)")
_RECORD_READ = re.compile(r"record|inflate|gzip|zlib", re.IGNORECASE)


def data_loss(error: BaseException) -> str | None:
    """What `error` (or an error it was raised from) says of damaged data, else None."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        reason = _reason(error)
        if reason is not None:
            return reason
        error = error.__cause__ or error.__context__
    return None


@contextlib.contextmanager
def reading(examples: Any) -> Iterator[None]:
    """Raises a read of `examples` that fails on damaged data again as one line naming the artifact."""
    try:
        yield
    except Exception as error:
        reason = data_loss(error)
        if reason is None:
            raise
        raise ValueError(f"the Examples under {examples.uri} are corrupt: {reason}") from error


def reads_examples(run: Executor) -> Executor:
    """An executor's `run(*, examples, ...)`, its damaged reads said as `reading` says them."""

    @functools.wraps(run)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with reading(kwargs["examples"]):
            return run(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _reason(error: BaseException) -> str | None:
    tf = sys.modules.get("tensorflow")  # not loaded: the error is not TensorFlow's
    # A DataLossError of a record reader (not of a damaged model's variables, which the Evaluator also loads).
    if tf is not None and isinstance(error, tf.errors.DataLossError) and _RECORD_READ.search(error.message):
        # Eager: "{{function_node …}} corrupted record at 12 [Op:IteratorGetNext]"; in a tf.function (fit's steps):
        # "Graph execution error: … its Python stack … corrupted record at 583586\n\t [[{{node IteratorGetNext}}]]".
        text = re.sub(r"\[\[.*?\]\]|\{\{.*?\}\}", "", error.message.split(" [Op:")[0], flags=re.S)
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1] if lines else error.message
    if isinstance(error, zlib.error):
        return f"damaged gzip data ({error})"
    text = str(error)
    frame = _BEAM_FRAME.search(text)
    if frame:
        return f"not a valid TFRecord ({frame.group(1).strip().lower()})"
    damaged = _ZLIB.search(text)  # raised again by a Beam worker process
    if damaged:
        return f"damaged gzip data ({damaged.group(1).strip()})"
    return None
