"""WikiText-2 masked LM: masked-token accuracy, loss and perplexity over the masked positions.

The task's evaluation dataset masks with stateless random ops seeded by the evaluator's
`seed`, so two evaluations of one model see the same masks and agree exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kflow.components.datasets.formulas import log_softmax, perplexity
from kflow.components.datasets.metrics import TaskMetrics, bucket_keys
from kflow.components.util import plots


class WikiText2Metrics(TaskMetrics):
    """Batches are (x, mask_ids [b, m], mask_weights [b, m]); outputs are logits [b, m, vocabulary]."""

    HEADLINE = "masked_accuracy"
    SCALARS = {
        "example_count": "higher",
        "masked_token_count": "higher",
        "masked_accuracy": "higher",
        "loss": "lower",
        "perplexity": "lower",
    }
    SLICES = ("length",)

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.examples = 0
        self.tokens = 0.0
        self.correct = 0.0
        self.nll_sum = 0.0
        self.baseline_token_id = options.get("baseline_token_id")
        self.baseline_correct = 0.0

    def update(self, x, y, outputs, sample_weight=None) -> None:
        labels = np.asarray(y, np.int64)
        weights = np.ones(labels.shape) if sample_weight is None else np.asarray(sample_weight, np.float64)
        log_probabilities = log_softmax(np.asarray(outputs, np.float64))
        nll = -np.take_along_axis(log_probabilities, labels[..., None], axis=-1)[..., 0]
        self.examples += labels.shape[0]
        self.tokens += float(weights.sum())
        self.nll_sum += float(np.sum(nll * weights))
        self.correct += float(np.sum((log_probabilities.argmax(axis=-1) == labels) * weights))
        if self.baseline_token_id is not None:
            self.baseline_correct += float(np.sum((labels == self.baseline_token_id) * weights))

    def result(self) -> dict[str, Any]:
        if self.tokens == 0:
            raise ValueError("the split holds no masked tokens")
        result = {
            "example_count": self.examples,
            "masked_token_count": int(self.tokens),
            "masked_accuracy": self.correct / self.tokens,
            "loss": self.nll_sum / self.tokens,
            "perplexity": perplexity(self.nll_sum, self.tokens),
        }
        if self.baseline_token_id is not None:
            # Accuracy of always predicting the most frequent training token, on the same masks.
            result["most_frequent_token_accuracy"] = self.baseline_correct / self.tokens
        return result

    def plots(self, folder: Path) -> list[dict[str, str]]:
        if self.baseline_token_id is None or not self.tokens:
            return []
        values = {"model": self.correct / self.tokens, "most frequent token": self.baseline_correct / self.tokens}
        return [plots.against_baseline(values, "masked_accuracy", folder, "masked_accuracy.png")]

    def slice_keys(self, by, x, y, boundaries):
        if by != "length":
            raise ValueError(f"wikitext2 slices by {', '.join(self.SLICES)}, not {by!r}")
        # The sequence length is the number of real (unpadded) tokens of the line.
        return bucket_keys(np.asarray(x["padding_mask"]).sum(axis=-1), boundaries)
