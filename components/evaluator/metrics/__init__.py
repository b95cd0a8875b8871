"""Per-task streaming metrics: one module a task, fed batch by batch by the evaluator's loop.

Each task module defines a `TaskMetrics` subclass of `kflow.components.evaluator.metrics.base.TaskMetrics`;
`METRICS` maps the task name (the pipeline's `data.dataset`) to it, as "module:class".
"""

METRICS: dict[str, str] = {
    "mnist": "kflow.components.evaluator.metrics.mnist:MnistMetrics",
    "quora": "kflow.components.evaluator.metrics.quora:QuoraMetrics",
    "wikitext2": "kflow.components.evaluator.metrics.wikitext2:WikiText2Metrics",
}
