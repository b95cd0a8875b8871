"""Source resolution: explicit path → $KFLOW_DATA_DIR → framework caches → None (the caller downloads or fails)."""

import pytest

from kflow.components.ingest.source_resolution import find_source, missing_source_error


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.delenv("TFDS_DATA_DIR", raising=False)
    monkeypatch.delenv("KFLOW_DATA_DIR", raising=False)
    return tmp_path


def test_explicit_path_wins_and_must_exist(isolated):
    folder = isolated / "mine"
    folder.mkdir()
    assert find_source("x", str(folder), ("x",)) == folder
    with pytest.raises(FileNotFoundError, match="does not exist"):
        find_source("x", str(isolated / "nowhere"), ("x",))


def test_data_dir_then_keras_cache_then_tfds(isolated, monkeypatch):
    assert find_source("wikitext2", None, ("wikitext-2",)) is None
    tfds = isolated / "home" / "tensorflow_datasets" / "wikitext-2"
    tfds.mkdir(parents=True)
    assert find_source("wikitext2", None, ("wikitext-2",)) == tfds
    keras = isolated / "home" / ".keras" / "datasets" / "wikitext-2-raw"
    keras.mkdir(parents=True)
    assert find_source("wikitext2", None, ("wikitext-2", "wikitext-2-raw")) == keras
    data_dir = isolated / "data"
    (data_dir / "wikitext-2").mkdir(parents=True)
    monkeypatch.setenv("KFLOW_DATA_DIR", str(data_dir))
    assert find_source("wikitext2", None, ("wikitext-2", "wikitext-2-raw")) == data_dir / "wikitext-2"


def test_missing_source_error_says_where_to_put_the_files(isolated, monkeypatch):
    monkeypatch.setenv("KFLOW_DATA_DIR", str(isolated / "data"))
    message = str(missing_source_error("quora", ("quora-insincere",), "train.csv", "use kaggle"))
    assert "\n" not in message
    assert f"put train.csv in {isolated / 'data'}/quora-insincere" in message
    assert str(isolated / "home" / ".keras" / "datasets" / "quora-insincere") in message
    assert "use kaggle" in message
