"""A trainer.batch_size the strategy's replicas cannot share equally is refused by `kflow validate`, naming the field
and the sizes that work. Found by a user trial: validate passed it; under multi_worker_mirrored and
keras_data_parallel every worker refused it at its start and the cluster was restarted twice on it, six tracebacks
and a last line without the cause; under mirrored of two devices, TensorFlow's raw `AddN` shape error."""

from __future__ import annotations

import pytest

from kflow.pipeline.cli.main import main
from tests.conftest import REPO

IRIS_CONFIG = REPO / "pipeline" / "configs" / "iris.yaml"
MNIST_CONFIG = REPO / "pipeline" / "configs" / "demo.yaml"


def validate(capsys, config, *settings):
    code = main(["validate", str(config), *(arg for setting in settings for arg in ("--set", setting))])
    return code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize(
    ("config", "settings", "said"),
    [(IRIS_CONFIG, ["trainer.strategy=multi_worker_mirrored", "trainer.workers=2", "trainer.batch_size=15"],
      "trainer.batch_size: 15 is not a multiple of the 2 replicas of strategy multi_worker_mirrored (2 worker(s) × 1 "
      "device(s)), which share each batch equally; take 14 or 16"),
     (IRIS_CONFIG, ["trainer.strategy=mirrored", "trainer.devices=2", "trainer.batch_size=15"],
      "trainer.batch_size: 15 is not a multiple of the 2 replicas of strategy mirrored (1 worker(s) × 2 device(s))"),
     (MNIST_CONFIG, ["trainer.strategy=keras_data_parallel", "trainer.workers=2", "trainer.devices=2",
                     "trainer.batch_size=30"],
      "trainer.batch_size: 30 is not a multiple of the 4 replicas of strategy keras_data_parallel (2 worker(s) × 2 "
      "device(s)), which share each batch equally; take 28 or 32"),
     (IRIS_CONFIG, ["trainer.strategy=multi_worker_mirrored", "trainer.workers=2", "trainer.batch_size=16",
                    "tuner={search_space: {trainer.batch_size: {choice: [16, 25]}}}"],
      "tuner.search_space.trainer.batch_size.choice: 25 is not a multiple of the 2 replicas")],
    ids=["multi_worker_mirrored", "mirrored_devices", "keras_data_parallel", "searched"],
)  # fmt: skip
def test_a_batch_the_replicas_cannot_share_exits_2_naming_the_field(capsys, config, settings, said):
    code, lines = validate(capsys, config, *settings)
    assert code == 2 and len(lines) == 1 and said in lines[0], lines


def test_a_batch_the_replicas_share_and_a_strategy_of_its_own_batches_pass(capsys):
    for settings in (["trainer.strategy=multi_worker_mirrored", "trainer.workers=2", "trainer.batch_size=16"],
                     ["trainer.strategy=parameter_server", "trainer.workers=2", "trainer.batch_size=15"],
                     ["trainer.strategy=default", "trainer.batch_size=15"]):  # fmt: skip
        code, lines = validate(capsys, IRIS_CONFIG, *settings)
        assert code == 0, (settings, lines)
