from kflow.pipeline.dsl.artifacts import Artifact, Examples, ModelBlessing
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter

EXECUTORS = "tests.pipeline.toy.executors"


class Produce(Component):
    """Writes `value` into {numbers}/value.txt."""

    spec = ComponentSpec(
        outputs={"numbers": Examples},
        parameters={
            "value": Parameter(int, default=1),
            "sleep": Parameter(float, default=0.0),
            "label": Parameter(str, default="", affects_output=False),
        },
        executor=f"{EXECUTORS}:produce",
    )


class Add(Component):
    """Reads one or two numbers artifacts and writes their sum plus `add`."""

    spec = ComponentSpec(
        inputs={"left": Examples, "right": Examples},
        outputs={"total": Artifact},
        parameters={"add": Parameter(int, default=0)},
        executor=f"{EXECUTORS}:add",
    )


class ClusterAdd(Add):
    """An Add that runs as a cluster: a chief, 3 workers and a parameter server."""

    def cluster_replicas(self) -> dict[str, int]:
        return {"chief": 1, "worker": 3, "ps": 1}


class Double(Component):
    spec = ComponentSpec(
        inputs={"numbers": Examples},
        outputs={"doubled": Examples},
        parameters={"fail": Parameter(bool, default=False), "sleep": Parameter(float, default=0.0)},
        executor=f"{EXECUTORS}:double",
    )


class CountAttempts(Component):
    """Fails until it has been executed `value` times; keeps count in its working dir."""

    spec = ComponentSpec(
        outputs={"numbers": Examples},
        parameters={"value": Parameter(int, default=2)},
        executor=f"{EXECUTORS}:count_attempts",
    )


class Judge(Component):
    """Blesses `numbers` when its value is at least `at_least` (a stand-in for an Evaluator's verdict)."""

    spec = ComponentSpec(
        inputs={"numbers": Examples},
        outputs={"blessing": ModelBlessing},
        parameters={"at_least": Parameter(int, default=0)},
        executor=f"{EXECUTORS}:judge",
    )


class WarmDouble(Double):
    """A Double with a warm-up: it notes, in `events` (a module list), when the run enters and leaves it."""

    spec = ComponentSpec(
        inputs=Double.spec.inputs,
        outputs=Double.spec.outputs,
        parameters=Double.spec.parameters,
        executor=f"{EXECUTORS}:double",
        warm_up=f"{EXECUTORS}:warm_up",
    )
