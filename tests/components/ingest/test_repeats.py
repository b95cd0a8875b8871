"""Repeated keys found from 64-bit hashes of the keys: equal keys hash equal however they are added, different ones
(short, long, sharing prefixes, differing in a padding byte) do not collide."""

import random

import numpy as np

from kflow.components.ingest.repeats import SHORT_KEY, RepeatFinder, key_hashes


def random_keys(rng: random.Random, count: int) -> list[bytes]:
    keys = []
    for _ in range(count):
        length = rng.choice([0, 1, 7, 8, 9, 20, SHORT_KEY - 1, SHORT_KEY, SHORT_KEY + 1, rng.randint(0, 100)])
        keys.append(bytes(rng.getrandbits(8) for _ in range(length)))
    return keys


def hashes_of(keys: list[bytes]) -> np.ndarray:
    stops = np.cumsum([len(key) for key in keys], dtype=np.int64)
    return key_hashes(b"".join(keys), stops - [len(key) for key in keys], stops)


def test_a_key_hashes_the_same_wherever_it_sits_and_distinct_keys_do_not_collide():
    rng = random.Random(0)
    keys = random_keys(rng, 20_000) + [b"\0" * length for length in range(SHORT_KEY + 2)]  # Told apart by length.
    keys = list(dict.fromkeys(keys + [b"abc", b"abc\0", b"\0abc"]))
    hashes = hashes_of(keys)
    assert len(set(hashes.tolist())) == len(keys)
    shuffled = rng.sample(range(len(keys)), len(keys))
    assert hashes_of([keys[index] for index in shuffled]).tolist() == hashes[shuffled].tolist()
    assert [hashes_of([key])[0] for key in keys[:200]] == hashes[:200].tolist()


def test_repeats_are_the_later_lines_of_a_key_however_the_keys_are_added():
    rng = random.Random(1)
    pool = random_keys(rng, 3_000)
    keys = [rng.choice(pool) for _ in range(10_000)]
    first_line: dict[bytes, int] = {}
    expected = set()
    for line, key in enumerate(keys):
        if key in first_line:
            expected.add(line)
        first_line.setdefault(key, line)
    one_by_one, as_slices = RepeatFinder(), RepeatFinder()
    for line, key in enumerate(keys):
        one_by_one.add(key, line)
    data = b"".join(keys)
    stops = np.cumsum([len(key) for key in keys])
    starts = stops - [len(key) for key in keys]
    for low in range(0, len(keys), 777):  # In blocks, and one key added alone between them.
        high = min(low + 777, len(keys))
        as_slices.add_slices(data, starts[low : high - 1], stops[low : high - 1], np.arange(low, high - 1))
        as_slices.add(keys[high - 1], high - 1)
    assert expected and one_by_one.repeats() == expected == as_slices.repeats()
