"""The cyclic collector stays off while a paused generator runs, and comes back as it was, whatever happens."""

import gc

import pytest

from kflow.components.util.collection_pause import collection_paused


def tuples(count: int):
    kept = []
    for number in range(count):
        kept.append((number, str(number)))  # Tracked objects, each a step towards the next collection.
        if number % 1000 == 0:
            yield gc.isenabled()


def collections_during(generator) -> tuple[int, list[bool]]:
    started = []

    def count(phase, _info):
        if phase == "start":
            started.append(1)

    gc.callbacks.append(count)
    try:
        states = list(generator)
    finally:
        gc.callbacks.remove(count)
    return len(started), states


def test_no_collection_while_paused_and_the_collector_back_on_after():
    assert gc.isenabled()
    collections, states = collections_during(tuples(100_000))
    assert collections > 0 and all(states)  # Unpaused: 100,000 new tuples start collections.
    collections, states = collections_during(collection_paused(tuples)(100_000))
    assert collections == 0 and not any(states)
    assert gc.isenabled()


def test_the_collector_comes_back_after_an_error_and_stays_off_if_it_was_off():
    @collection_paused
    def failing():
        yield 1
        raise ValueError("bad record")

    with pytest.raises(ValueError):
        list(failing())
    assert gc.isenabled()
    gc.disable()
    try:
        assert not any(collection_paused(tuples)(3000))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_nested_generators_leave_it_on_after_the_outer_one():
    @collection_paused
    def outer():
        yield from collection_paused(tuples)(2000)
        yield gc.isenabled()  # The inner one finished: still paused for the outer one.

    assert not any(outer()) and gc.isenabled()
