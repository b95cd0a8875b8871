"""The STAND-IN Kubernetes API server and controllers live in kflow.pipeline.rehearsal.stand_in_kube (kflow rehearse
plays cluster jobs with them), their pods as local processes in kflow.pipeline.rehearsal.local_pod; the tests import
them from here."""

from kflow.pipeline.rehearsal.local_pod import LocalPod, local_pods
from kflow.pipeline.rehearsal.stand_in_kube import LOST_REPLY, JobRun, StandInKubernetes

__all__ = ["LOST_REPLY", "JobRun", "LocalPod", "StandInKubernetes", "local_pods"]
