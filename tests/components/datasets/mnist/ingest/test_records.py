"""Record-level logic: the split plan, validation of regular and ragged chunks."""

import numpy as np
import pytest

from kflow.components.datasets.mnist.ingest.records import RecordLayout, SplitPlan, check_chunk, record_key

LAYOUT = RecordLayout(image_shape=(28, 28), image_dtype="uint8", label_min=0, label_max=9)


def test_split_plan_follows_the_bucket_ratio_and_ignores_the_dict_order():
    plan = SplitPlan.from_parameters({"train": 9, "eval": 1})
    assert plan == SplitPlan.from_parameters({"eval": 1, "train": 9})
    assert plan.splits == ("eval", "train", "test")
    keys = [record_key("train", index) for index in range(20000)]
    assignments = [plan.assign("train", key) for key in keys]
    eval_share = assignments.count("eval") / len(keys)
    assert 0.09 < eval_share < 0.11
    assert {plan.assign("test", record_key("test", index)) for index in range(100)} == {"test"}


@pytest.mark.parametrize("split", [None, [("train", 1)], {"train": True}, {"train": -1}, {"read": 1}, {"": 1}])
def test_split_plan_rejects_bad_splits(split):
    with pytest.raises(ValueError):
        SplitPlan.from_parameters(split)


def test_check_chunk_accepts_valid_records_at_once():
    images = np.zeros((5, 28, 28), np.uint8)
    labels = np.array([0, 9, 10, -1, 3])
    problems = check_chunk(images, labels, LAYOUT)
    assert [problem and problem.reason for problem in problems] == [
        None,
        None,
        "label_out_of_range",
        "label_out_of_range",
        None,
    ]
    assert problems[2].field == "label" and problems[2].details["label"] == 10


def test_check_chunk_goes_record_by_record_through_ragged_data():
    images = np.empty(6, dtype=object)
    images[:] = [
        np.zeros((28, 28), np.uint8),
        np.zeros((28, 27), np.uint8),
        np.zeros((28, 28), np.float32),
        [[1, 2], [3]],
        np.zeros((28, 28), np.uint8),
        np.zeros((28, 28), np.uint8),
    ]
    labels = np.empty(6, dtype=object)
    labels[:] = [3, 1, 1, 1, 3.5, None]
    reasons = [problem and problem.reason for problem in check_chunk(images, labels, LAYOUT)]
    assert reasons == [
        None,
        "wrong_image_shape",
        "wrong_image_dtype",
        "wrong_image_shape",
        "label_not_integer",
        "label_not_integer",
    ]


def test_float_labels_are_not_integers():
    problems = check_chunk(np.zeros((2, 28, 28), np.uint8), np.array([1.0, 2.0]), LAYOUT)
    assert {problem.reason for problem in problems} == {"label_not_integer"}
