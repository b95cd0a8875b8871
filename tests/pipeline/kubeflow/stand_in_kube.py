"""The STAND-IN Kubernetes API server and controllers live in kflow.pipeline.rehearsal.stand_in_kube (kflow rehearse
plays cluster jobs with them); the tests import them from here."""

from kflow.pipeline.rehearsal.stand_in_kube import LOST_REPLY, JobRun, LocalPod, StandInKubernetes, local_pods

__all__ = ["LOST_REPLY", "JobRun", "LocalPod", "StandInKubernetes", "local_pods"]
