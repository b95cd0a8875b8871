"""A user's functional model on a table's columns as they are named: scikit-learn's wine, whose column
`od280/od315_of_diluted_wines` Keras refuses as a layer name, and a model that takes only some of its columns."""

from __future__ import annotations

import logging
import re

import pytest

from kflow.components.datasets.user_module import UserModuleError
from kflow.components.trainer.executor import run as train
from kflow.pipeline.dsl.artifacts import Model, ModelRun
from tests.components.trainer.test_user_model_kinds import trained_and_evaluated
from tests.components.trainer.user_models import csv_examples
from tests.conftest import REPO

HEADER = "import keras\nfrom keras import layers\n\n\n"
# The module docs/your-data.md shows for a table, as a user copies it, with `name=feature["name"]` as it was before.
DOCS_MODULE = HEADER + re.search(
    r"```python\n(def build_model\(schema, options\):\n    inputs, encoded = \{\}, \[\].*?)```",
    (REPO / "docs" / "your-data.md").read_text(),
    re.S,
).group(1)
NAMED_BY_COLUMN = DOCS_MODULE.replace('name=feature["input_name"]', "name=name")
TWO_COLUMNS = (
    HEADER
    + """def build_model(schema, options):
    inputs = {name: keras.Input(shape=(1,), name=name) for name in ("alcohol", "magnesium")}
    x = layers.Normalization()(layers.concatenate(list(inputs.values())))
    return keras.Model(inputs, layers.Dense(len(options["head"]["classes"]), activation="softmax")(x))
"""
)


def wine_examples(folder):
    """scikit-learn's wine (178 wines, 13 measurements, 3 cultivars) as a CSV, through the CSV ingest."""
    from sklearn.datasets import load_wine

    frame = load_wine(as_frame=True).frame
    assert "od280/od315_of_diluted_wines" in frame.columns
    frame.to_csv(folder / "wine.csv", index=False)
    return csv_examples(folder, folder / "wine.csv", "target")


@pytest.fixture(scope="module")
def wine(tmp_path_factory):
    return wine_examples(tmp_path_factory.mktemp("wine"))


@pytest.mark.slow  # ~12 s; make test trains wine by column: test_a_model_of_some_columns_says_once_which_...
def test_the_docs_table_model_trains_on_wines_column_keras_refuses_as_a_layer_name(wine, tmp_path):
    assert 'name=feature["input_name"]' in DOCS_MODULE
    metrics = trained_and_evaluated(tmp_path, *wine, "csv", DOCS_MODULE, epochs=3, batch_size=16)
    assert metrics["example_count"] > 0


def test_an_input_named_by_such_a_column_is_one_line_saying_what_to_name_it(wine, tmp_path):
    with pytest.raises(UserModuleError) as refused:
        train(dataset="csv", examples=wine[0], schema=wine[1], model=Model(tmp_path / "model"), epochs=1,
              model_run=ModelRun(tmp_path / "run"), module="my_model.py", module_source=NAMED_BY_COLUMN)  # fmt: skip
    said = str(refused.value)
    assert said.startswith("trainer.module: my_model.py:") and "\n" not in said, said
    assert "cannot contain character `/`" in said and 'name the keras.Input feature["input_name"]' in said, said


@pytest.mark.slow  # ~10 s; make test refuses an input named by such a column (above), the same check
def test_inputs_keyed_by_their_input_name_are_one_line_saying_to_key_them_by_the_column(wine, tmp_path):
    """A user trial keyed the inputs dict as Keras users do, by the Input's name (feature["input_name"]): the line
    said the data had no feature 'od280_od315_of_diluted_wines' but not the fix, the column's own name."""
    keyed = DOCS_MODULE.replace("inputs[name]", 'inputs[feature["input_name"]]')
    assert keyed != DOCS_MODULE
    with pytest.raises(UserModuleError) as refused:
        train(dataset="csv", examples=wine[0], schema=wine[1], model=Model(tmp_path / "model"), epochs=1,
              model_run=ModelRun(tmp_path / "run"), module="my_model.py", module_source=keyed)  # fmt: skip
    said = str(refused.value)
    assert "\n" not in said and "the model takes the input 'od280_od315_of_diluted_wines', which the data" in said
    assert said.endswith(": key the inputs dict by the column, 'od280/od315_of_diluted_wines' (feature[\"name\"]); "
                         'feature["input_name"] is the keras.Input\'s name= only'), said  # fmt: skip


def test_a_model_of_some_columns_says_once_which_it_leaves_out(wine, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="kflow.components"):
        trained_and_evaluated(tmp_path, *wine, "csv", TWO_COLUMNS, epochs=1, batch_size=16)
    said = [record.getMessage() for record in caplog.records if "left out:" in record.getMessage()]
    assert len(said) == 1, said
    assert said[0].startswith("the model takes 2 of the table's 13 column(s) by name, alcohol, magnesium; left out:")
    assert "od280/od315_of_diluted_wines (numeric)" in said[0] and "malic_acid (numeric)" in said[0], said
