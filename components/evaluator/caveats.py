"""What an Evaluator's metrics cannot say, or say against the model, beside the verdict: said in the log, never a
reason to bless or refuse (that is the thresholds' and the baseline's)."""

from __future__ import annotations

from typing import Any

FEW_EXAMPLES = 30  # a split this small moves a metric by a few per cent a record


def caveats(metrics: dict[str, Any]) -> list[str]:
    """What the metrics cannot say, or say against the model, that no threshold was asked to judge: a split of a few
    examples, a regression worse than the split's own mean (r2 < 0), a classifier below always answering the split's
    most frequent class. Said in the log; the blessing is the thresholds' and the baseline's."""
    said = []
    count = metrics.get("example_count") or 0
    if 0 < count < FEW_EXAMPLES:
        said.append(f"the {metrics.get('split')} split holds {count} example(s): its metrics move by "
                    f"{100 / count:.0f} % a record")  # fmt: skip
    r2 = metrics.get("r2")
    if isinstance(r2, float) and r2 < 0:
        said.append(f"r2 {r2:.3g}: the model predicts worse than the split's mean would (set evaluator.thresholds."
                    "r2.lower_bound to refuse such a model)")  # fmt: skip
    counts, accuracy = metrics.get("per_class_count") or {}, metrics.get("accuracy")
    if counts and isinstance(accuracy, float) and count:
        majority, most = max(counts.items(), key=lambda item: item[1])
        if accuracy < most / count:
            said.append(f"accuracy {accuracy:.3g} is below always answering {majority!r} ({most / count:.3g}) (set "
                        "evaluator.thresholds.accuracy.lower_bound to refuse such a model)")  # fmt: skip
    return said
