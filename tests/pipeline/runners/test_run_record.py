"""run.json records: ids that sort by start time."""

from kflow.pipeline.runners.run_record import new_run_id


def test_run_ids_sort_in_start_order_within_one_second():
    """The cache and the latest-blessed resolver read runs newest first, by id: ids must keep start order."""
    ids = [new_run_id() for _ in range(200)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_the_newest_run_is_the_last_started_even_with_the_clock_set_back_an_hour(tmp_path):
    """Run ids hold the start time (UTC); the order of runs is the folder's sequence, which no clock moves."""
    import datetime as dt

    from kflow.pipeline.dsl.dag import Pipeline
    from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner
    from kflow.pipeline.runners.run_record import earlier_runs
    from tests.pipeline.toy.components import Produce

    pipeline = Pipeline("toy", [Produce("produce", parameters={"value": 1})])
    first = BeamDagRunner().run(pipeline, tmp_path).run
    an_hour_ago = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).strftime("%Y%m%d-%H%M%S-%f-") + "back"
    second = BeamDagRunner().run(pipeline, tmp_path, run_id=an_hour_ago).run
    assert second.run_id < first.run_id  # by name, the second run looks older
    runs = list(earlier_runs(tmp_path / "toy"))
    assert [run.run_id for run in runs] == [second.run_id, first.run_id]
    assert (runs[0].sequence, runs[1].sequence) == (2, 1)
