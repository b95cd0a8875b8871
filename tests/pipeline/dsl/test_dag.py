import pytest

from kflow.pipeline.dsl.artifacts import Model
from kflow.pipeline.dsl.component import Channel
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.beam_dag_runner import waves
from tests.pipeline.toy.components import Add, Double, Produce


def diamond():
    left = Produce("left")
    right = Produce("right")
    total = Add("total", left=left.outputs["numbers"], right=right.outputs["numbers"])
    return left, right, total


def test_topological_order_follows_the_wiring_not_the_listing():
    left, right, total = diamond()
    order = [node.id for node in Pipeline("p", [total, right, left]).topological_order()]
    assert order.index("total") == 2


def test_waves_group_independent_nodes():
    left, right, total = diamond()
    double = Double("double", numbers=left.outputs["numbers"])
    grouped = waves(Pipeline("p", [total, double, right, left]))
    assert [[node.id for node in wave] for wave in grouped] == [["right", "left"], ["total", "double"]]


def test_until_keeps_ancestors_only():
    left, right, total = diamond()
    double = Double("double", numbers=left.outputs["numbers"])
    pipeline = Pipeline("p", [left, right, total, double])
    assert [n.id for n in pipeline.until("double").components] == ["left", "double"]
    assert [n.id for n in pipeline.until("total").components] == ["left", "right", "total"]


def test_an_input_from_outside_the_pipeline_is_rejected():
    left, right, total = diamond()
    with pytest.raises(ValueError, match="'right' is not in the pipeline"):
        Pipeline("p", [left, total])


def test_duplicate_ids_are_rejected():
    with pytest.raises(ValueError, match="duplicate component ids"):
        Pipeline("p", [Produce("a"), Produce("a")])


def test_a_cycle_is_rejected():
    first = Double("first", numbers=Channel("second", "doubled", Double.spec.outputs["doubled"]))
    second = Double("second", numbers=first.outputs["doubled"])
    with pytest.raises(ValueError, match="cycle"):
        Pipeline("p", [first, second])


def test_inputs_are_type_checked():
    with pytest.raises(TypeError, match="wants Examples, got Model"):
        Double("d", numbers=Channel("train", "model", Model))


def test_missing_inputs_and_unknown_parameters_are_rejected():
    with pytest.raises(ValueError, match="input 'numbers' .* is not wired"):
        Double("d")
    with pytest.raises(ValueError, match="unknown parameters"):
        Produce("p", parameters={"valeu": 3})
    with pytest.raises(TypeError, match="parameter 'value' must be int"):
        Produce("p", parameters={"value": "3"})
