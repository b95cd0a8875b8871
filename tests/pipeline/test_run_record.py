"""run.json records: ids that sort by start time."""

from kflow.pipeline.runners.run_record import new_run_id


def test_run_ids_sort_in_start_order_within_one_second():
    """The cache and the latest-blessed resolver read runs newest first, by id: ids must keep start order."""
    ids = [new_run_id() for _ in range(200)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
