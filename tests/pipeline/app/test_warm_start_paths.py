"""trainer.warm_start of a Model folder's path (another pipeline's model, a copied one), as TFX's and Estimators' warm
start take a checkpoint's path: resolved to that folder, a relative path from the config's folder; one that holds
no model is one line naming the field. Before, only a run id of the same pipeline was taken ('no run
'/…/train/model' under runs/loans-cur'), a user trial."""

from __future__ import annotations

import pytest

from kflow.pipeline.app.warm_start import warm_start_resolver
from kflow.pipeline.cli.main import main
from kflow.pipeline.dsl.config import ConfigError, load_config
from tests.conftest import REPO

IRIS = REPO / "pipeline" / "configs" / "iris.yaml"


def test_a_model_folders_path_is_the_model_to_start_from(tmp_path, capsys):
    model = tmp_path / "other" / "runs" / "x" / "20261202-000000-000000-aaaa" / "train" / "model"
    model.mkdir(parents=True)
    (model / "model.keras").write_bytes(b"a model")  # what the resolver looks for; the Trainer checks the rest
    config_file = tmp_path / "iris.yaml"
    text = IRIS.read_text().replace("path: data/iris.csv", f"path: {IRIS.parent / 'data/iris.csv'}")
    warm = "  warm_start: other/runs/x/20261202-000000-000000-aaaa/train/model\n"
    config_file.write_text(text.replace("  batch_size: 16\n", "  batch_size: 16\n" + warm, 1))
    config = load_config(config_file)  # relative to the config's folder, as its other input paths
    assert config.trainer.warm_start == str(model)
    resolved = warm_start_resolver(tmp_path / "runs" / "iris", config)({})
    assert resolved == {"warm_start_model_uri": str(model.resolve()), "warm_start_reason": None}
    assert main(["validate", str(config_file)]) == 0

    (model / "model.keras").unlink()
    with pytest.raises(ConfigError) as refused:
        warm_start_resolver(tmp_path / "runs" / "iris", load_config(config_file))
    assert f"trainer.warm_start: {model} holds no trained model (model.keras): give a Model folder" in str(
        refused.value
    )
    capsys.readouterr()
    assert main(["validate", str(config_file)]) == 2
    assert "trainer.warm_start:" in capsys.readouterr().err
