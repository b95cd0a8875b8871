"""What an Evaluator's metrics cannot say, or say against the model, beside the verdict: said in the log, never a
reason to bless or refuse (that is the thresholds' and the baseline's)."""

from __future__ import annotations

from typing import Any

FEW_EXAMPLES = 30  # a split this small moves a metric by a few per cent a record


def caveats(metrics: dict[str, Any], mean_error: float | None = None) -> list[str]:
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
                    f"r2.lower_bound to refuse such a model){_offset(metrics, mean_error)}")  # fmt: skip
    counts, accuracy = metrics.get("per_class_count") or {}, metrics.get("accuracy")
    if counts and isinstance(accuracy, float) and count:
        majority, most = max(counts.items(), key=lambda item: item[1])
        answered = _answered(metrics)
        if len(counts) > 1 and len(answered) == 1:  # a user trial's: blessed at exactly the majority's share
            said.append(f"the model answers {answered[0]!r} for every example of the split (accuracy {accuracy:.3g}, "
                        f"macro recall {metrics.get('macro_recall') or 0:.3g}): it has learnt no class apart (set "
                        "evaluator.thresholds.macro_recall.lower_bound to refuse such a model)")  # fmt: skip
        elif accuracy < most / count - 1e-9:
            said.append(f"accuracy {accuracy:.3g} is below always answering {majority!r} ({most / count:.3g}) (set "
                        "evaluator.thresholds.accuracy.lower_bound to refuse such a model)")  # fmt: skip
    return said


def _answered(metrics: dict[str, Any]) -> list[str]:
    """The classes the model answered for some example (the confusion matrix's columns that hold any)."""
    matrix = metrics.get("confusion_matrix") or {}
    rows, categories = matrix.get("matrix") or [], matrix.get("categories") or []
    return [name for name, column in zip(categories, zip(*rows, strict=False), strict=False) if sum(column)]


def _offset(metrics: dict[str, Any], mean_error: float | None) -> str:
    """Why, where most of a regression's squared error is one offset (`mean_error`, predictions less labels): an output
    that starts near 0 far from the label's scale (a user's `Dense(1)` on prices near 340) is still on its way there."""
    loss = metrics.get("loss")
    if mean_error is None or not isinstance(loss, float) or not loss > 0 or mean_error**2 < loss / 2:
        return ""
    side = "below" if mean_error < 0 else "above"
    return (f"; {mean_error**2 / loss:.0%} of its squared error is one offset, its predictions {abs(mean_error):.4g} "
            f"{side} the labels on average: end the model at the label's scale, as kflow's table model does "
            "(keras.layers.Rescaling(options['head']['std'], offset=options['head']['mean']) after its Dense(1)), "
            "or train it longer")  # fmt: skip
