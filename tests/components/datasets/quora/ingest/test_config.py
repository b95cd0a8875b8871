"""The text ingests in the standard pipeline: shipped configs, their parameters and the config errors."""

import pytest

from kflow.pipeline.app.standard_pipeline import build_pipeline
from kflow.pipeline.dsl.config import ConfigError, load_config


def _ingest(config_file, *overrides):
    pipeline = build_pipeline(load_config(config_file, overrides))
    return next(component for component in pipeline.components if component.id == "ingest")


def test_shipped_configs_wire_each_dataset_to_its_ingest():
    quora = _ingest("pipeline/configs/quora.yaml")
    assert type(quora).__name__ == "QuoraIngest"
    assert quora.parameters["split"] == {"train": 8, "eval": 1, "test": 1}
    assert quora.parameters["max_chars"] == 1000
    wikitext = _ingest("pipeline/configs/wikitext2.yaml", "data.filters.deduplicate=true")
    assert type(wikitext).__name__ == "WikiText2Ingest"
    assert wikitext.parameters["min_chars"] == 101 and wikitext.parameters["deduplicate"] is True


@pytest.mark.parametrize(
    ("config_file", "override", "field"),
    [
        ("pipeline/configs/quora.yaml", "data.split={train: 9, eval: 1}", "data.split.test"),
        ("pipeline/configs/wikitext2.yaml", "data.split={train: 8, eval: 1, test: 1}", "data.split"),
        ("pipeline/configs/mnist.yaml", "data.split={train: 8, eval: 1, test: 1}", "data.split"),
        ("pipeline/configs/mnist.yaml", "data.filters.min_chars=5", "data.filters.min_chars"),
        ("pipeline/configs/quora.yaml", "data.filters.deduplicate=true", "data.filters.deduplicate"),
    ],
)
def test_a_split_or_filter_a_dataset_cannot_use_is_a_config_error(config_file, override, field):
    with pytest.raises(ConfigError) as failure:
        _ingest(config_file, override)
    assert f"{field}:" in str(failure.value)


def test_kflow_run_exits_2_naming_the_field(run_kflow):
    done = run_kflow(
        "run", "pipeline/configs/quora.yaml", "--until", "ingest", "--set", "data.split={train: 9, eval: 1}"
    )
    assert done.returncode == 2
    assert "data.split.test: quora's source has no labelled test split" in done.stderr
