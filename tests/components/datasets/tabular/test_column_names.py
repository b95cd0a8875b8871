"""Column names as files have them (spaces, `/`, dots, parentheses, non-ASCII letters, a digit first, names differing
only in case):
the model's inputs keep them; its Input layers and the serving signature take safe names, mapped one to one."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from kflow.components.models.tabular_mlp import build_tabular_mlp
from kflow.components.util.predictions import serving_names

NAMES = ["glucose (mg/dl)", "body weight", "Größe", "A", "a", "x.radius_mean", "2nd-dose", "yield", "import"]


def test_any_column_name_builds_exports_and_serves_under_a_safe_name(tmp_path):
    features = [{"name": name, "kind": "numeric", "mean": 0.0, "variance": 1.0} for name in NAMES[:2]]
    features += [{"name": "Größe", "kind": "categorical", "vocabulary": ["klein", "groß"]}]
    features += [{"name": name, "kind": "numeric", "mean": 0.0, "variance": 1.0} for name in NAMES[3:]]
    model = build_tabular_mlp(features, {"kind": "classification", "classes": ["no", "yes"]}, hidden_units=(4,))
    assert list(model.input) == NAMES  # The features' names as written, for Keras users and the Evaluator.
    names = serving_names(model)
    assert names == {
        "glucose (mg/dl)": "glucose__mg_dl_",
        "body weight": "body_weight",
        "Größe": "Gr__e",
        "A": "A",
        "a": "a_2",  # Unique whatever the case: TensorFlow's signature names are not case-sensitive.
        "x.radius_mean": "x_radius_mean",  # R's names: a SavedModel's signature renames the dot
        "2nd-dose": "f_2nd_dose",  # a signature's argument starts with a letter
        "yield": "yield_",  # and is no Python keyword (R's lattice barley, modeldata's chem_proc_yield)
        "import": "import_",
    }
    rows = {name: np.array([[1.5], [-0.5]], np.float32) for name in NAMES if name != "Größe"}
    rows["Größe"] = np.array([["groß"], ["klein"]])
    expected = model.predict_on_batch(rows)
    model.export(str(tmp_path / "serving"), format="tf_saved_model", verbose=False)
    signature = tf.saved_model.load(str(tmp_path / "serving")).signatures["serving_default"]
    assert set(signature.structured_input_signature[1]) == set(names.values())
    (served,) = signature(**{names[name]: tf.constant(value) for name, value in rows.items()}).values()
    np.testing.assert_allclose(served.numpy(), expected, atol=1e-6)
