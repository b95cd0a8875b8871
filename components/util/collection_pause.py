"""Python's cyclic garbage collector paused while a generator of record-at-a-time work runs.

An ingest's workers make and drop millions of tuples, strings and bytes that reference counting frees (they form
no cycles); still, every 700 allocations start a collection that walks the young objects, and the oldest
generation's collections walk everything the process has loaded: beside TensorFlow and Beam (~530,000 objects)
the collector took 2.1 s of a 25 s full-size Quora ingest (bench/README.md). While paused, the cycles the work
makes wait for the first collection after it.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_T = TypeVar("_T")


def collection_paused(generator: Callable[_P, Iterator[_T]]) -> Callable[_P, Iterator[_T]]:
    """`generator` run with no cyclic collection, which resumes once it has finished and its locals are freed
    (the objects still held then would be walked by the first collection). Nested or on several threads, the
    collector is on again after the last generator that found it on."""

    @functools.wraps(generator)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> Iterator[_T]:
        enabled = gc.isenabled()
        gc.disable()
        try:
            yield from generator(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return paused
