"""A column with no value in the training split is left out of the model: a constant, or a category of nothing."""

from kflow.components.datasets.tabular.plan import DATA_OPTIONS, NO_VALUE, StringSummary, numeric_spec, string_spec


def test_a_column_with_no_training_value_is_left_out():
    """An empty column (a spreadsheet's unnamed, formatted one; R's all-NA `first_date_us` in bakeoff's `bakers`)
    is no feature: a constant, or a category of nothing."""
    assert numeric_spec("first_date_us", 0, 0.0, 0.0) == {
        "name": "first_date_us", "kind": "left_out", "left_out": NO_VALUE
    }  # fmt: skip
    assert string_spec("unnamed_16", StringSummary(), DATA_OPTIONS)["kind"] == "left_out"
