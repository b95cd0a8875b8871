"""The KFP player (kflow's stand-in for KFP's driver and launcher) lives in kflow.pipeline.rehearsal.kfp_player, where
`kflow rehearse` uses it too; the tests import it from here."""

from kflow.pipeline.rehearsal.kfp_player import ContainerTasks, ProcessTasks, play, task_command, task_order

__all__ = ["ContainerTasks", "ProcessTasks", "play", "task_command", "task_order"]
