"""The interface of a task's streaming metrics, and slicing helpers shared by the tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np


class TaskMetrics:
    """Accumulates one task's metrics batch by batch; `result()` gives the JSON-ready numbers.

    Subclasses set `SCALARS` (the top-level numbers a threshold may name, with the direction
    in which they improve) and `SLICES` (the `by` values of the slices they support).
    """

    SCALARS: ClassVar[dict[str, str]] = {}  # name -> "higher" | "lower" (which way is better)
    HEADLINE: ClassVar[str] = "loss"  # The one number `kflow runs` shows and slice plots draw.
    SLICES: ClassVar[tuple[str, ...]] = ()
    SLICES_BY_FEATURE: ClassVar[bool] = False  # True: also `{by: <feature name>}` for any feature of the data
    # Per-class numbers a threshold may name as `<name>.<class>` (per_class_recall.Yes: a rare class's recall).
    PER_CLASS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def known_threshold(cls, name: str) -> bool:
        """Whether a threshold may name `name`: a scalar, or one class's per-class number (`per_class_recall.Yes`)."""
        top, dot, key = name.partition(".")
        return name in cls.SCALARS or bool(dot and key and top in cls.PER_CLASS)

    # True when the task needs a pass over the eval split first (e.g. to choose a threshold).
    needs_eval_pass: ClassVar[bool] = False

    def __init__(self, **options: Any):
        self.options = options

    def new(self) -> TaskMetrics:
        """An empty accumulator with the same options (one per slice)."""
        fresh = type(self)(**self.options)
        fresh.calibrate_from(self)
        return fresh

    def calibrate_from(self, other: TaskMetrics) -> None:
        """Copies what an eval pass chose (e.g. a threshold) from `other`; nothing by default."""

    def update(self, x: Any, y: np.ndarray, outputs: np.ndarray, sample_weight: np.ndarray | None) -> None:
        raise NotImplementedError

    def result(self) -> dict[str, Any]:
        raise NotImplementedError

    def slice_keys(self, by: str, x: Any, y: np.ndarray, boundaries: list[float]) -> np.ndarray:
        """One slice key (a string) per example of the batch."""
        raise NotImplementedError

    def plots(self, folder: Path) -> list[dict[str, str]]:
        """Writes the task's PNG plots into `folder`; returns [{file, title, caption}]."""
        return []

    def kfp_metrics(self) -> dict[str, Any]:
        """Extra data for KFP's ClassificationMetrics (confusion matrix, ROC curve); none by default."""
        return {}


def bucket_keys(values: np.ndarray, boundaries: list[float]) -> np.ndarray:
    """Names the bucket of each value: '<b0', '[b0,b1)', …, '>=bn' (boundaries ascending)."""
    if not boundaries or list(boundaries) != sorted(boundaries):
        raise ValueError(f"slice boundaries must be a non-empty ascending list, got {boundaries!r}")
    names = [f"<{boundaries[0]:g}"]
    names += [f"[{low:g},{high:g})" for low, high in zip(boundaries, boundaries[1:], strict=False)]
    names += [f">={boundaries[-1]:g}"]
    return np.array(names, dtype=object)[np.searchsorted(boundaries, np.asarray(values), side="right")]


def subset(x: Any, mask: np.ndarray) -> Any:
    """The rows of a batch's features (an array or a dict of arrays) where `mask` holds."""
    if isinstance(x, dict):
        return {key: value[mask] for key, value in x.items()}
    return x[mask]
