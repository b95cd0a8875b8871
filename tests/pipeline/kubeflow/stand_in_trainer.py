"""The STAND-IN Trainer v2 / JobSet controllers live in kflow.pipeline.rehearsal.stand_in_trainer (kflow rehearse
makes a TrainJob's pods with them); the tests import them from here."""

from kflow.pipeline.rehearsal.stand_in_trainer import (
    ANCESTOR,
    COMPLETION_INDEX,
    TRAINER_PORT,
    Pod,
    jobset_pods,
    jobset_spec,
)

__all__ = ["ANCESTOR", "COMPLETION_INDEX", "TRAINER_PORT", "Pod", "jobset_pods", "jobset_spec"]
