"""Training tasks by name (the pipeline's `data.dataset`)."""

from components.trainer.tasks.base import Task

TASKS: dict[str, str] = {
    # name -> "module:class", imported on demand so one task's dependencies don't load for another.
    "mnist": "components.trainer.tasks.mnist:MnistTask",
    "wikitext2": "components.trainer.tasks.wikitext2:WikiText2Task",
    "quora": "components.trainer.tasks.quora:QuoraTask",
}

__all__ = ["TASKS", "Task"]
