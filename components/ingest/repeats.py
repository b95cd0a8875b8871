"""The rows that repeat an earlier row's key, found in a streaming pass with 16 bytes a row.

A set of the keys themselves would hold every key as a Python object (about 80 bytes each,
more for long keys); here each row leaves a 64-bit hash of its key and its line number in two
flat arrays, sorted once at the end. Two different keys share a hash with a probability of
about n²/2⁶⁵ (10⁻⁷ for 1.3 M rows): then the later row is wrongly refused as a repeat.

Keys are hashed in batches (`key_hashes`): a key of up to SHORT_KEY bytes in NumPy, the words of its bytes mixed
one after the other (SplitMix64's finaliser) from its length, with no Python per key; a longer one by BLAKE2b.
Which function hashes a key depends only on the key, so equal keys always get equal hashes.
"""

from __future__ import annotations

import bisect
import hashlib
from array import array
from collections.abc import Iterable, Iterator

import numpy as np

SHORT_KEY = 32
_BATCH = 4096  # Keys added one at a time are hashed this many at once.
_GOLDEN, _MIX_1, _MIX_2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def key_hashes(data: bytes, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """64-bit hashes (uint64) of the keys `data[start:stop]`, the same in every process and on every machine."""
    starts, stops = np.asarray(starts, np.int64), np.asarray(stops, np.int64)
    lengths = stops - starts
    hashes = np.empty(len(starts), np.uint64)
    short = lengths <= SHORT_KEY
    if short.any():
        padded = np.concatenate([np.frombuffer(data, np.uint8), np.zeros(SHORT_KEY, np.uint8)])
        columns = np.arange(SHORT_KEY)
        key_bytes = padded[starts[short, None] + columns]
        key_bytes[columns >= lengths[short, None]] = 0
        mixed = lengths[short].astype(np.uint64) * _GOLDEN
        for word in np.ascontiguousarray(key_bytes).view("<u8").T:
            mixed = _mix(mixed ^ word)
        hashes[short] = mixed
    for row in np.flatnonzero(~short).tolist():
        digest = hashlib.blake2b(data[starts[row] : stops[row]], digest_size=8).digest()
        hashes[row] = int.from_bytes(digest, "big")
    return hashes


def _mix(value: np.ndarray) -> np.ndarray:
    value = (value ^ (value >> np.uint64(30))) * _MIX_1
    value = (value ^ (value >> np.uint64(27))) * _MIX_2
    return value ^ (value >> np.uint64(31))


class RepeatFinder:
    def __init__(self) -> None:
        self._hashes = array("Q")
        self._lines = array("q")
        self._keys: list[bytes] = []  # Added one at a time, not hashed yet.
        self._key_lines: list[int] = []

    def add(self, key: bytes, line: int) -> None:
        self._keys.append(key)
        self._key_lines.append(line)
        if len(self._keys) >= _BATCH:
            self._hash_added()

    def add_slices(self, data: bytes, starts: np.ndarray, stops: np.ndarray, lines: np.ndarray) -> None:
        """The keys `data[start:stop]` of the rows at `lines`."""
        self._hash_added()
        self._hashes.frombytes(key_hashes(data, starts, stops).tobytes())
        self._lines.frombytes(np.asarray(lines, np.int64).tobytes())

    def _hash_added(self) -> None:
        if not self._keys:
            return
        stops = np.cumsum([len(key) for key in self._keys], dtype=np.int64)
        starts = np.concatenate(([0], stops[:-1]))
        self._hashes.frombytes(key_hashes(b"".join(self._keys), starts, stops).tobytes())
        self._lines.extend(self._key_lines)
        self._keys, self._key_lines = [], []

    def repeats(self) -> set[int]:
        """The lines whose key an earlier line (a smaller line number) has."""
        self._hash_added()
        if not self._lines:
            return set()
        hashes = np.frombuffer(self._hashes, dtype=np.uint64)
        lines = np.frombuffer(self._lines, dtype=np.int64)
        order = np.lexsort((lines, hashes))  # By hash, then line: the first of equal hashes keeps its key.
        sorted_hashes = hashes[order]
        repeat = np.concatenate([[False], sorted_hashes[1:] == sorted_hashes[:-1]])
        return set(lines[order][repeat].tolist())

    def repeats_within(self, ranges: Iterable[tuple[int, float]]) -> Iterator[list[int]]:
        """The repeated lines of each half-open range [low, high) of lines (a chunk's), in order."""
        repeated = sorted(self.repeats())
        for low, high in ranges:
            yield repeated[bisect.bisect_left(repeated, low) : bisect.bisect_left(repeated, high)]
