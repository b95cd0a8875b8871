"""A wide table's numbers: every number column filled and normalised by one pair of layers over the columns side by
side, so the model's layers do not grow with the columns, and each column still gets its own mean and variance."""

from __future__ import annotations

import numpy as np

from kflow.components.models.tabular_mlp import NUMBERS, encode_features


def test_the_number_columns_share_one_pair_of_layers_and_keep_their_own_statistics():
    import keras

    rng = np.random.default_rng(0)
    means, variances = rng.normal(size=300), rng.uniform(0.5, 4.0, size=300)
    specs = [
        {"name": f"gene.{i}", "kind": "numeric", "mean": m, "variance": v}
        for i, (m, v) in enumerate(zip(means, variances, strict=True))
    ]
    specs.append({"name": "numbers", "kind": "categorical", "vocabulary": ["a", "b"]})  # a column named like the block
    inputs, outputs = encode_features(specs, "a test")
    model = keras.Model(inputs, outputs)
    assert sorted(outputs) == ["numbers", NUMBERS + "_"]  # the category keeps its name
    kinds = [type(layer).__name__ for layer in model.layers if not isinstance(layer, keras.layers.InputLayer)]
    assert sorted(kinds) == ["Concatenate", "FillMissing", "Normalization", "StringLookup"]
    values = rng.normal(size=(4, 300)).astype("float32")
    values[1, 7] = np.nan  # missing: the column's mean, normalised to 0
    given = {f"gene.{i}": values[:, i : i + 1] for i in range(300)}
    out = model({**given, "numbers": np.array([["a"], ["b"], ["c"], ["a"]])})
    got = np.asarray(out[NUMBERS + "_"])
    expected = (np.nan_to_num(values, nan=0.0) - means) / np.sqrt(variances)
    expected[1, 7] = 0.0
    np.testing.assert_allclose(got, expected, atol=1e-4)
