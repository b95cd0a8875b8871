"""`FoldFn`: a Beam CombineFn whose accumulators merge pairwise (`merge`), folded left to right."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import apache_beam as beam


class FoldFn(beam.CombineFn):
    """Subclasses give `create_accumulator`, `add_input`, `extract_output` and `merge(a, b)` (may update `a`)."""

    def merge(self, accumulator: Any, other: Any) -> Any:
        raise NotImplementedError

    def merge_accumulators(self, accumulators: Iterable[Any]) -> Any:
        accumulators = iter(accumulators)
        merged = next(accumulators)
        for other in accumulators:
            merged = self.merge(merged, other)
        return merged
