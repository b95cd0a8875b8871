"""Training tasks by name (the pipeline's `data.dataset`)."""

from kflow.components.trainer.tasks.base import Task

TASKS: dict[str, str] = {
    # name -> "module:class", imported on demand so one task's dependencies don't load for another.
    "mnist": "kflow.components.trainer.tasks.mnist:MnistTask",
    "wikitext2": "kflow.components.trainer.tasks.wikitext2:WikiText2Task",
    "quora": "kflow.components.trainer.tasks.quora:QuoraTask",
}

__all__ = ["TASKS", "Task"]
