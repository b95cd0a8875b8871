"""trainer.warm_start onto a model of a grown table: the first hidden layer's rows follow their columns' meanings.

Retrained on more rows of the same table, a tabular model gains a category's value, an integer code and a column
that was constant before (components/models/tabular_columns.py). Started from the earlier model, the new one must
score every row as the earlier one did before it trains a step: a new value as the earlier model read it (its
unknown slot, its column's other code), a new column not at all. Real Keras models, built by tabular_mlp."""

from __future__ import annotations

import re

import numpy as np
import pytest

from kflow.components.models.tabular_columns import first_dense_columns
from kflow.components.models.tabular_mlp import build_tabular_mlp
from kflow.components.trainer.warm_start import Incompatible, carried_weights, start_from

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")


def tabular(colors, codes, extra=False, classes=("no", "yes"), hidden=(8, 4)):
    features = [
        {"name": "color", "kind": "categorical", "vocabulary": list(colors)},
        {"name": "size", "kind": "numeric", "mean": 2.0, "variance": 1.5, "codes": list(codes), "missing": True},
    ]
    if extra:  # a column constant in the earlier rows (left out then), varying in the grown table
        features.append({"name": "weight", "kind": "numeric", "mean": 10.0, "variance": 4.0})
    keras.utils.set_random_seed(len(colors) + len(codes) + extra)
    head = {"kind": "classification", "classes": list(classes)}
    return build_tabular_mlp(features, head, hidden_units=list(hidden), dropout=0.0)


def rows(extra=False):
    data = {
        "color": [["red"], ["green"], ["blue"], ["purple"], ["red"]],
        "size": np.array([[1.0], [2.0], [3.0], [np.nan], [7.5]], "float32"),
    }
    if extra:
        data["weight"] = np.array([[9.0], [12.0], [3.0], [10.0], [0.5]], "float32")
    return data


def scores(model, data):
    return np.asarray(model({name: tf.constant(values) for name, values in data.items()}, training=False))


def warm(earlier, model, earlier_classes=("no", "yes"), classes=("no", "yes")):
    listed = [list(names) if names else None for names in (earlier_classes, classes)]
    carried, changes = carried_weights(earlier, model, *listed)
    start_from(model, carried)
    return changes


def test_a_grown_tables_model_scores_every_row_as_the_earlier_one_before_training():
    earlier = tabular(["green", "red"], [1, 2])
    model = tabular(["blue", "green", "red"], [1, 2, 3], extra=True)  # blue and size 3 new; weight a new column
    before = scores(earlier, rows())
    assert not np.allclose(scores(model, rows(extra=True)), before, atol=1e-3)  # another random start
    changes = warm(earlier, model)
    np.testing.assert_allclose(scores(model, rows(extra=True)), before, atol=1e-5)
    assert changes == [
        "hidden_0's input columns mapped by meaning: 8 kept, 3 new (color='blue', weight, size=3), 0 gone"
    ]


def test_values_reordered_by_their_new_counts_keep_their_rows():
    """A category's vocabulary is ordered by count: more rows can swap two values, which a copy by position (the
    check before, blind to lookups inside a Transform's model) would have swapped the weights of."""
    earlier, model = tabular(["green", "red"], [1, 2]), tabular(["red", "green"], [1, 2])
    before = scores(earlier, rows())
    assert warm(earlier, model) == ["hidden_0's input columns mapped by meaning: 8 kept (2 moved), 0 new, 0 gone"]
    np.testing.assert_allclose(scores(model, rows()), before, atol=1e-5)


def test_a_value_gone_from_the_grown_table_drops_its_row_and_the_rest_keep_theirs():
    earlier = tabular(["green", "red", "teal"], [1, 2])
    model = tabular(["green", "red"], [1, 2])
    earlier_kernel = earlier.get_layer("hidden_0").get_weights()[0]
    changes = warm(earlier, model)
    kernel = model.get_layer("hidden_0").get_weights()[0]
    (_, before), (_, now) = first_dense_columns(earlier), first_dense_columns(model)
    for row, meaning in enumerate(now):
        np.testing.assert_array_equal(kernel[row], earlier_kernel[before.index(meaning)])
    assert changes == ["hidden_0's input columns mapped by meaning: 8 kept, 0 new, 1 gone (color='teal')"]
    np.testing.assert_array_equal(
        model.get_layer("hidden_1").get_weights()[0], earlier.get_layer("hidden_1").get_weights()[0]
    )


def test_the_classes_follow_their_names_and_a_new_class_starts_as_the_least_likely():
    earlier = tabular(["green", "red"], [1, 2], classes=("no", "yes"))
    model = tabular(["green", "red"], [1, 2], classes=("maybe", "no", "yes"))
    kernel, bias = earlier.get_layer("probabilities").get_weights()
    bias = bias + np.array([0.5, -0.25], "float32")  # distinct biases, so that the least likely is one of them
    earlier.get_layer("probabilities").set_weights([kernel, bias])
    changes = warm(earlier, model, ("no", "yes"), ("maybe", "no", "yes"))
    new_kernel, new_bias = model.get_layer("probabilities").get_weights()
    np.testing.assert_array_equal(new_kernel[:, 1:], kernel)
    np.testing.assert_array_equal(new_kernel[:, 0], 0.0)
    np.testing.assert_array_equal(new_bias, [bias.min(), *bias])
    assert changes == ["the classes mapped by name: new ['maybe'], gone none"]


def test_the_same_model_carries_every_weight_unchanged_and_says_nothing_mapped():
    earlier, model = tabular(["green", "red"], [1, 2]), tabular(["green", "red"], [1, 2])
    assert warm(earlier, model) == []
    for old, new in zip(earlier.weights, model.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(old), np.asarray(new))


def test_layers_of_other_sizes_are_refused_naming_the_layer():
    with pytest.raises(Incompatible, match=r"layer 'hidden_1' has weights of shapes \[\(8, 6\), \(6,\)\]"):
        warm(tabular(["green", "red"], [1, 2]), tabular(["green", "red"], [1, 2], hidden=(8, 6)))
    with pytest.raises(Incompatible, match="layer 'hidden_2' is new"):
        warm(tabular(["green", "red"], [1, 2]), tabular(["green", "red"], [1, 2], hidden=(8, 4, 2)))


def plain(vocabulary, units=4, softmax=False, wide=False):
    """One category one-hot, read by a hidden Dense (and with `wide`, by a second Dense beside it, whose rows would
    keep their places: such a model is compared layer by layer, as before)."""
    text = keras.Input(shape=(1,), dtype="string", name="word")
    one_hot = keras.layers.StringLookup(vocabulary=list(vocabulary), output_mode="one_hot", name="lookup")(text)
    scores = keras.layers.Dense(units, name="out")(keras.layers.Dense(3, name="hidden")(one_hot))
    if wide:
        scores = keras.layers.Add(name="wide_and_deep")([scores, keras.layers.Dense(units, name="wide")(one_hot)])
    return keras.Model(text, keras.layers.Softmax(name="probabilities")(scores) if softmax else scores)


def test_a_lone_category_maps_its_values_and_a_model_reading_it_twice_needs_the_same_vocabulary():
    earlier = plain(["a", "b"])
    assert warm(earlier, plain(["a", "b"]), None, None) == []
    assert warm(earlier, plain(["a", "b", "c"]), None, None) == [
        "hidden's input columns mapped by meaning: 3 kept, 1 new (word='c'), 0 gone"
    ]
    with pytest.raises(Incompatible, match=r"layer 'lookup' has another vocabulary: 1 new \('c'\); weights read"):
        warm(plain(["a", "b"], wide=True), plain(["a", "b", "c"], wide=True), None, None)


def test_a_models_classes_follow_their_names():
    earlier, model = plain(["a", "b"]), plain(["a", "b"])
    assert warm(earlier, model, list("xyzw"), list("wxyz")) == ["the classes mapped by name: new none, gone none"]
    kernel = earlier.get_layer("out").get_weights()[0]
    np.testing.assert_array_equal(model.get_layer("out").get_weights()[0], kernel[:, [3, 0, 1, 2]])
    grown = plain(["a", "b"], units=5)  # an image folder's new class folder: one more unit
    assert warm(earlier, grown, list("xyzw"), list("vwxyz")) == ["the classes mapped by name: new ['v'], gone none"]
    np.testing.assert_array_equal(grown.get_layer("out").get_weights()[0][:, 1:], kernel[:, [3, 0, 1, 2]])
    with pytest.raises(Incompatible, match=r"the classes differ \(\['w', 'x', 'y', 'z'\]"):
        warm(plain(["a", "b"], softmax=True), plain(["a", "b"], softmax=True), list("xyzw"), list("wxyz"))


def test_a_model_without_hidden_layers_maps_both_its_columns_and_its_classes():
    """hidden_units: [] makes the output the first Dense: its rows follow the columns and its columns the classes."""
    earlier = tabular(["green", "red"], [1, 2], classes=("p", "q"), hidden=())
    model = tabular(["blue", "green", "red"], [1, 2], classes=("q", "p"), hidden=())
    before = scores(earlier, rows())
    assert len(warm(earlier, model, ("p", "q"), ("q", "p"))) == 2
    np.testing.assert_allclose(scores(model, rows()), before[:, ::-1], atol=1e-5)


def test_a_text_models_embedding_rows_follow_their_tokens_as_more_text_renews_the_vocabulary():
    """The text classifier's TextVectorization keeps the most frequent words: more text reorders them, adds some and
    drops others. Each embedding row follows its token (Estimators' VocabInfo); a new word starts as the unknown
    token's row, which scored it before."""
    from kflow.components.models.text_classifier import build_text_classifier

    def text_model(words, seed):
        keras.utils.set_random_seed(seed)
        return build_text_classifier(words, ngrams=1, embedding_dim=8, hidden_dim=4, dropout=0.0)

    earlier, model = text_model(["the", "cat", "sat", "dog"], 1), text_model(["cat", "the", "mat", "sat"], 2)
    sentences = tf.constant(["the cat sat", "the mat", "cat cat zebra"])  # no word the new vocabulary dropped
    before = np.asarray(earlier(sentences, training=False))
    assert not np.allclose(np.asarray(model(sentences, training=False)), before, atol=1e-3)
    assert warm(earlier, model, None, None) == [
        "embedding's rows mapped by token: 5 kept (2 moved), 1 new ('mat'), 1 gone ('dog')"
    ]
    np.testing.assert_allclose(np.asarray(model(sentences, training=False)), before, atol=1e-6)


def test_a_lookup_inside_a_nested_preprocessing_model_is_compared_too():
    """A Transform's own preprocessing model, embedded whole, whose output is no encoding tabular_columns reads: its
    lookups are layers of the nested model only. More rows reordering one of them swapped its weights silently."""

    def nested(vocabulary):
        raw = keras.Input(shape=(1,), dtype="string", name="color")
        inner = keras.layers.StringLookup(vocabulary=list(vocabulary), output_mode="one_hot", name="lookup")(raw)
        preprocessing = keras.Model(raw, keras.layers.Rescaling(2.0, name="scaled")(inner), name="preprocessing")
        outer = keras.Input(shape=(1,), dtype="string", name="color")
        return keras.Model(outer, keras.layers.Dense(2, name="out")(preprocessing(outer)))

    assert warm(nested(["red", "green"]), nested(["red", "green"]), None, None) == []
    with pytest.raises(Incompatible, match=r"layer 'preprocessing/lookup' has another vocabulary"):
        warm(nested(["red", "green"]), nested(["green", "red"]), None, None)


def counted_vocabulary_model(purposes: list[str], top_k: int = 4) -> keras.Model:
    """A user's model on a Transform of its own: preprocessing_fn's `StringLookup(vocabulary=analyzers.vocabulary(x,
    top_k=top_k))` of the `purposes` (kflow's analyzer, counted on them), its preprocessing model embedded whole."""
    from types import SimpleNamespace

    from kflow.components.transform.preprocessing_trace import call_preprocessing_fn

    def preprocessing_fn(inputs, analyzers):
        purpose = inputs["purpose"]
        vocabulary = analyzers.vocabulary(purpose, top_k=top_k)
        return {"purpose": keras.layers.StringLookup(vocabulary=vocabulary, output_mode="one_hot")(purpose)}

    sample = {"purpose": np.array([[purpose] for purpose in purposes], dtype=object)}
    traced = call_preprocessing_fn(preprocessing_fn, SimpleNamespace(types={"purpose": "string"}), sample, "fn.py")
    preprocessing = keras.Model(traced.inputs, traced.outputs, name="preprocessing")
    inputs = {"purpose": keras.Input(shape=(1,), dtype="string", name="purpose")}
    hidden = keras.layers.Dense(3, name="hidden")(preprocessing(inputs)["purpose"])
    return keras.Model(inputs, keras.layers.Dense(2, name="out")(hidden))


def test_a_counted_vocabulary_that_changed_says_what_differs_and_the_way_out_in_one_line():
    """A user trial: the table grew, analyzers.vocabulary's most frequent order changed, and the refusal was two
    truncated lists (`another vocabulary: ['[UNK]', 'card', …], the earlier model's [...]`) and no way out."""
    earlier = ["debt"] * 5 + ["card"] * 4 + ["home"] * 3 + ["car"] * 2 + ["wedding"]
    way_out = (
        "; weights read its values by place: give the lookup a fixed vocabulary=[...] to keep it "
        "(analyzers.vocabulary's and adapt()'s follow the data's counts), or set trainer.warm_start: none to train "
        "from scratch"
    )
    reordered = [*earlier, *["card"] * 3]  # card passes debt
    with pytest.raises(Incompatible) as refused:
        warm(counted_vocabulary_model(earlier), counted_vocabulary_model(reordered), None, None)
    assert re.fullmatch(r"layer 'preprocessing/string_lookup(_\d+)?' has another vocabulary: (.*)", str(refused.value))
    said = str(refused.value).split(": ", 1)[1]
    assert said == f"the same 5 values, 2 in another order ('card', 'debt'){way_out}"
    grown = [*earlier, *["card"] * 3, *["home"] * 3, *["moving"] * 5]  # moving enters the top 4, car leaves it
    with pytest.raises(Incompatible) as refused:
        warm(counted_vocabulary_model(earlier), counted_vocabulary_model(grown), None, None)
    said = str(refused.value).split(": ", 1)[1]
    assert (
        said == f"1 new ('moving'), 1 gone ('car'), 3 of the 4 kept in another order ('card', 'home', 'debt'){way_out}"
    )
    assert "\n" not in said
    many = [*earlier, *[f"purpose_number_{index:02d}_of_a_long_name" for index in range(8)]]  # a few said of 8
    with pytest.raises(Incompatible) as refused:
        warm(counted_vocabulary_model(earlier, 20), counted_vocabulary_model(many, 20), None, None)
    said = str(refused.value).split(": ", 1)[1]
    assert (
        said
        == f"8 new ('purpose_number_00_of_a_…', 'purpose_number_01_of_a_…', 'purpose_number_02_of_a_…', …){way_out}"
    )


def test_an_adapted_normalization_keeps_the_new_datas_mean_and_variance():
    """A user's Normalization kflow adapted (components/datasets/model_adapt.py) holds them as weights: copied from
    the earlier model, the saved model held the earlier data's while training computed with the new data's."""

    def adapted(values):
        inputs = keras.Input(shape=(2,))
        normalizer = keras.layers.Normalization()
        normalizer.adapt(np.asarray(values, "float32"))
        return keras.Model(inputs, keras.layers.Dense(1)(normalizer(inputs))), normalizer

    earlier, _ = adapted([[0.0, 10.0], [2.0, 30.0]])
    model, normalizer = adapted([[4.0, 100.0], [8.0, 300.0]])
    assert warm(earlier, model, None, None) == []
    np.testing.assert_allclose(np.asarray(normalizer.adapt_mean), [6.0, 200.0])
    np.testing.assert_allclose(np.ravel(normalizer.mean), [6.0, 200.0])  # what the model computes with
    np.testing.assert_allclose(model.layers[-1].get_weights()[0], earlier.layers[-1].get_weights()[0])


def structured(columns: dict[str, list]) -> keras.Model:
    """A user's model as keras.io's "Structured data classification from scratch" writes it, its layers adapted
    on `columns` (kflow adapts them as it builds the model: components/datasets/model_adapt.py), Keras' own names
    (numbered anew in each process: a column added renumbers the others')."""
    keras.backend.clear_session()  # each build in its own process
    keras.utils.set_random_seed(len(columns))
    inputs, encoded = {}, []
    for name, values in columns.items():
        if isinstance(values[0], str):
            inputs[name] = keras.Input(shape=(1,), name=name, dtype="string")
            layer = keras.layers.StringLookup(output_mode="one_hot")
            layer.adapt(np.asarray(values))
            encoded.append(layer(inputs[name]))
        else:
            inputs[name] = keras.Input(shape=(1,), name=name)
            layer = keras.layers.Normalization()
            layer.adapt(np.asarray(values, "float32")[:, None])
            encoded.append(layer(keras.ops.nan_to_num(inputs[name])))
    hidden = keras.layers.Dense(4, activation="relu")(keras.layers.concatenate(encoded))
    return keras.Model(inputs, keras.layers.Dense(2, activation="softmax")(hidden))


def test_a_users_structured_data_model_maps_its_columns_by_meaning_as_its_table_grows(tmp_path):
    """Retrained on more rows, the user's lookup gains a value (its one-hot a column) and a column constant before
    (left out then) comes in: the model's own Input, Normalization and one-hot. Before, the warm start was refused
    (`layer 'string_lookup' has new values in its vocabulary`; `the inputs differ`)."""
    sector, wage = ["sales", "clerical", "sales", "sales"], [3.0, 7.5, 12.0, 5.0]
    earlier = structured({"sector": sector, "wage": wage})
    earlier.save(tmp_path / "earlier.keras")
    earlier = keras.saving.load_model(tmp_path / "earlier.keras")  # from its file, as kflow reads it
    model = structured({"age": [30.0, 40.0, 50.0, 61.0, 20.0], "sector": [*sector, "manager"], "wage": [*wage, 9.0]})
    known = {"sector": [["sales"], ["clerical"], ["service"]], "wage": np.array([[4.0], [9.0], [np.nan]], "float32")}
    before = scores(earlier, known)  # `service` unseen by both: their unknown-value slot
    assert warm(earlier, model, None, None) == [
        "dense's input columns mapped by meaning: 4 kept, 2 new (age, sector='manager'), 0 gone"
    ]
    # The earlier wage's normalisation is not the new one's (the new data's mean): scored on the new wage's.
    np.testing.assert_allclose(model.layers[-1].get_weights()[0], earlier.layers[-1].get_weights()[0])
    grown = {**known, "age": np.array([[33.0], [70.0], [41.0]], "float32")}
    new_wage = [layer for layer in model.layers if type(layer).__name__ == "Normalization"][1]
    old_wage = [layer for layer in earlier.layers if type(layer).__name__ == "Normalization"][0]
    new_wage.adapt_mean.assign(np.asarray(old_wage.adapt_mean))  # the earlier data's, to compare the functions
    new_wage.adapt_variance.assign(np.asarray(old_wage.adapt_variance))
    new_wage.finalize_state()
    np.testing.assert_allclose(scores(model, grown), before, atol=1e-5)
    manager = {"sector": [["manager"]], "wage": np.array([[4.0]], "float32")}
    with_age = {**manager, "age": np.array([[50.0]], "float32")}
    # A new value scores as the earlier model read it: unknown.
    np.testing.assert_allclose(scores(model, with_age), scores(earlier, manager), atol=1e-5)


def two_numbers(names: tuple[str, ...], wide: list[str] | None = None) -> keras.Model:
    """Each number column filled by `ops.where(ops.isnan(x), 0, x)` and normalised; with `wide`, a lookup of a
    string column beside the hidden layer, read by the output alone (a wide path: its rows keep their places)."""
    keras.backend.clear_session()
    keras.utils.set_random_seed(len(names))
    inputs = {name: keras.Input(shape=(1,), name=name) for name in names}
    encoded = [keras.layers.Normalization(mean=1.0, variance=4.0)(keras.ops.where(keras.ops.isnan(x), 0.0, x))
               for x in inputs.values()]  # fmt: skip
    x = keras.layers.Dense(3)(keras.layers.concatenate(encoded))
    if wide is not None:
        inputs["kind"] = keras.Input(shape=(1,), name="kind", dtype="string")
        kind = keras.layers.StringLookup(vocabulary=wide, output_mode="one_hot")(inputs["kind"])
        x = keras.layers.concatenate([x, kind])
    return keras.Model(inputs, keras.layers.Dense(2)(x))


def test_a_number_filled_by_where_is_mapped_by_its_column_and_a_wide_lookups_new_order_refused():
    """Review: `ops.where` reads two tensors of one column, and Keras numbers the Normalization layers anew when a
    column comes first: a row followed the layer's number (a's row went to c). A lookup the mapping does not read
    (the wide path's) was not compared: a reorder swapped its rows in the output layer silently."""
    earlier, model = two_numbers(("a", "b")), two_numbers(("c", "a", "b"))
    output = earlier.layers[-1].get_weights()
    hidden_before = [layer for layer in earlier.layers if type(layer).__name__ == "Dense"][0].get_weights()[0]
    assert warm(earlier, model, None, None) == ["dense's input columns mapped by meaning: 2 kept, 1 new (c), 0 gone"]
    hidden_now = [layer for layer in model.layers if type(layer).__name__ == "Dense"][0].get_weights()[0]
    np.testing.assert_array_equal(hidden_now, np.concatenate([np.zeros((1, 3), "float32"), hidden_before]))
    np.testing.assert_array_equal(model.layers[-1].get_weights()[0], output[0])
    with pytest.raises(Incompatible, match="layer 'string_lookup' has another vocabulary"):
        warm(two_numbers(("a", "b"), wide=["u", "v"]), two_numbers(("a", "b"), wide=["v", "u"]), None, None)


def basic_regression(names: tuple[str, ...], rows: np.ndarray) -> keras.Model:
    """tensorflow.org's "Basic regression" Sequential (its Normalization adapted on `rows`, as kflow adapts it) as
    kflow feeds it a table's number columns `names`: one matrix (model_graph.on_number_columns)."""
    from kflow.components.datasets.model_graph import on_number_columns

    keras.backend.clear_session()
    keras.utils.set_random_seed(len(names))
    normalizer = keras.layers.Normalization(axis=-1)
    normalizer.adapt(rows)
    sequential = keras.Sequential([normalizer, keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    return on_number_columns(sequential, [{"name": name, "kind": "numeric", "mean": 1.0} for name in names])


def test_a_sequential_fed_the_number_matrix_maps_its_rows_by_column_as_a_column_comes_in():
    """The table gains a number column (constant in the earlier rows): the matrix kflow feeds the user's Sequential
    widens, its first Dense reads one row more, placed by the task's order of the columns. Before, the warm start was
    refused (`the inputs differ`)."""
    rows = np.array([[4.0, 3504.0], [8.0, 3693.0], [6.0, 2372.0], [4.0, 1835.0]], "float32")
    earlier = basic_regression(("cylinders", "weight"), rows)
    model = basic_regression(("cylinders", "acceleration", "weight"), np.insert(rows, 1, [12.0, 11.5, 15, 20], 1))
    assert warm(earlier, model, None, None) == [
        "dense's input columns mapped by meaning: 2 kept, 1 new (acceleration), 0 gone"
    ]
    # With the earlier data's normalisation (the new data's is the model's own), every car scores as before.
    (normalizer,) = [layer for layer in model.layers[-1].layers if type(layer).__name__ == "Normalization"]
    (old,) = [layer for layer in earlier.layers[-1].layers if type(layer).__name__ == "Normalization"]
    normalizer.adapt_mean.assign(np.insert(np.asarray(old.adapt_mean), 1, 0.0, -1))
    normalizer.adapt_variance.assign(np.insert(np.asarray(old.adapt_variance), 1, 1.0, -1))
    normalizer.finalize_state()
    known = {"cylinders": rows[:, :1], "weight": rows[:, 1:]}
    np.testing.assert_allclose(scores(model, {**known, "acceleration": np.full((4, 1), 14.0, "float32")}),
                               scores(earlier, known), rtol=1e-5)  # fmt: skip


def test_a_model_of_another_tables_columns_is_refused():
    """A user trial: birthwt warm-started from a breast cancer model, `0 kept, 48 new, 30 gone`, its deeper layers
    carried as if they meant something there."""
    rows = np.array([[4.0, 3504.0], [8.0, 3693.0]], "float32")
    with pytest.raises(Incompatible, match="none of the input columns of 'dense' is the earlier model's"):
        warm(basic_regression(("cylinders", "weight"), rows), basic_regression(("age", "lwt"), rows), None, None)


def test_a_latest_blessed_warm_start_no_task_resolved_says_why_it_trains_from_scratch(caplog):
    """A compiled pipeline's Trainer: latest_blessed, and no model nor reason (no task resolves one: `kflow compile`
    says so). Its log said `train: from scratch (trainer.warm_start: latest_blessed): None`."""
    from types import SimpleNamespace

    from kflow.components.trainer.warm_start import warm_start

    config = SimpleNamespace(warm_start="latest_blessed", warm_start_model_uri=None, warm_start_reason=None)
    with caplog.at_level("INFO", logger="kflow.trainer"):
        assert warm_start(None, config, None) is None
    assert caplog.messages == [
        "train: from scratch (trainer.warm_start: latest_blessed): no earlier model was resolved for this run "
        "(kflow run resolves it; a compiled pipeline does not)"
    ]


@pytest.mark.parametrize("resolved", ["latest_blessed", "20261203-095401-148533-f4bc"])
def test_a_classifier_is_no_start_for_a_regression_of_the_same_label(tmp_path, caplog, resolved):
    """The gauntlet's retraining of vcd's Rochdale: its first 70 % of rows held 20 distinct counts of `Freq` (a
    classifier), all rows 25 (a regression); latest_blessed failed the run with `layer 'standardised' is new`.
    latest_blessed now trains from scratch and says why; a model named by its run is refused in one line."""
    from types import SimpleNamespace

    from kflow.components.trainer.warm_start import warm_start
    from kflow.pipeline.dsl.artifacts import Model

    earlier = Model(tmp_path / "model")
    earlier.assets_uri.mkdir(parents=True)
    (earlier.assets_uri / Model.CLASSES_FILE).write_text("".join(f"{n}\n" for n in (0, 1, 2, 3, 4, 6, 7, 10)))
    config = SimpleNamespace(warm_start=resolved, warm_start_model_uri=earlier.uri, warm_start_reason=None)
    why = (
        f"the model at {earlier.uri} is a classifier of 8 classes (0, 1, 2, …), this run's a model of a number (no "
        "classes) (data.problem_type, inferred from the label's values where unset: set it to keep one task as data "
        "grows)"
    )
    regression = SimpleNamespace(classes=None, model_name=None)
    if resolved != "latest_blessed":
        with pytest.raises(ValueError) as refused:
            warm_start(None, config, regression)
        assert str(refused.value) == f"trainer.warm_start: {why}"
        return
    with caplog.at_level("INFO", logger="kflow.trainer"):
        assert warm_start(None, config, regression) is None
    assert caplog.messages == [f"train: from scratch (trainer.warm_start: latest_blessed): {why}"]


@pytest.mark.parametrize("resolved", ["latest_blessed", "20261203-130903-323816-abca"])
def test_a_model_whose_layers_differ_trains_from_scratch_under_latest_blessed_and_is_refused_by_its_run(
    tmp_path, caplog, resolved
):
    """A gauntlet's retraining under a search of `hidden_units` (4 of 14 tables): the tuner chose [32] for the first
    model, [64, 32] for the retrained one, and latest_blessed failed the run on `layer 'hidden_1' is new`. Now the
    latest blessed model is passed over with that reason and the model trains from scratch; a run named is refused."""
    from types import SimpleNamespace

    from kflow.components.trainer.warm_start import warm_start
    from kflow.pipeline.dsl.artifacts import Model

    earlier = Model(tmp_path / "model")
    earlier.keras_file.parent.mkdir(parents=True)
    tabular(["red", "green"], [1, 2, 3], hidden=(8,)).save(earlier.keras_file)
    earlier.assets_uri.mkdir(parents=True, exist_ok=True)
    (earlier.assets_uri / Model.CLASSES_FILE).write_text("no\nyes\n")
    model = tabular(["red", "green"], [1, 2, 3], hidden=(8, 4))
    before = [np.array(weight) for weight in model.get_weights()]
    config = SimpleNamespace(warm_start=resolved, warm_start_model_uri=earlier.uri, warm_start_reason=None)
    task = SimpleNamespace(classes=["no", "yes"], model_name=None)
    why = f"the model at {earlier.uri} is not compatible: layer 'hidden_1' is new"
    if resolved != "latest_blessed":
        with pytest.raises(ValueError, match=re.escape(f"trainer.warm_start: {why}")):
            warm_start(model, config, task)
        return
    with caplog.at_level("INFO", logger="kflow.trainer"):
        assert warm_start(model, config, task) is None
    assert [message.split(" (the earlier")[0] for message in caplog.messages] == [
        f"train: from scratch (trainer.warm_start: latest_blessed): {why}"
    ]
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights(), strict=True))  # its own start


def test_a_free_text_columns_words_keep_their_rows_as_the_table_grows():
    """The gauntlet's retraining of Ecdat's Caschool (its `district` names, free text): `layer
    'preprocessing/words_district' has another vocabulary: 101 new …; give the lookup a fixed vocabulary` of kflow's
    own model. Keras 3's TextVectorization keeps its output mode private, and reading it failed: no table with a
    text column warm-started. Its words now map by token, as a category's values do."""

    def model(words):
        features = [
            {"name": "district", "kind": "text", "vocabulary": list(words)},
            {"name": "size", "kind": "numeric", "mean": 2.0, "variance": 1.5},
        ]
        keras.utils.set_random_seed(len(words))
        return build_tabular_mlp(features, {"kind": "classification", "classes": ["no", "yes"]}, [8, 4], 0.0)

    data = {"district": [["sunny valley"], ["oak view"], ["valley joint"]], "size": np.array([[1.0], [2.0], [3.0]])}
    earlier, grown = model(["valley", "joint", "view", "sunny"]), model(["beach", "view", "valley", "joint", "sunny"])
    before = scores(earlier, data)
    changes = warm(earlier, grown)
    np.testing.assert_allclose(scores(grown, data), before, atol=1e-5)
    assert changes == ["hidden_0's input columns mapped by meaning: 6 kept (3 moved), 1 new (district='beach'), 0 gone"]
