"""Whether a metric is better lower or higher, from its name, for what watches one without being told (the tuner's
objective, early stopping): losses, errors and their kinds (mae, mse, rmse, perplexity, ...) fall; the rest rise.
The tuner maximised a regression's val_rmse before this, and so took its worst trial."""

from __future__ import annotations

import re

_LOWER = re.compile(
    r"(^|_)(loss|losses|error|errors|mae|mse|rmse|msle|mape|rmsle|perplexity|crossentropy|hinge|logcosh|kld"
    r"|kl_divergence|poisson|false_positives|false_negatives)($|_)"
)


def lower_is_better(metric: str) -> bool:
    """`val_loss`, `val_rmse`, `mean_absolute_error`, `perplexity`: True; `val_accuracy`, `val_auc`, `r2`: False."""
    return bool(_LOWER.search(metric.removeprefix("val_")))
