"""Per-task streaming metrics: one module a task, fed batch by batch by the evaluator's loop.

Each task module defines a `TaskMetrics` subclass of `components.evaluator.metrics.base.TaskMetrics`;
`METRICS` maps the task name (the pipeline's `data.dataset`) to it, as "module:class".
"""

METRICS: dict[str, str] = {
    "mnist": "components.evaluator.metrics.mnist:MnistMetrics",
    "quora": "components.evaluator.metrics.quora:QuoraMetrics",
    "wikitext2": "components.evaluator.metrics.wikitext2:WikiText2Metrics",
}
