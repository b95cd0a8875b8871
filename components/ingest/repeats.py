"""The rows that repeat an earlier row's key, found in a streaming pass with 16 bytes a row.

A set of the keys themselves would hold every key as a Python object (about 80 bytes each,
more for long keys); here each row leaves a 64-bit hash of its key and its line number in two
flat arrays, sorted once at the end. Two different keys share a hash with a probability of
about n²/2⁶⁵ (10⁻⁷ for 1.3 M rows): then the later row is wrongly refused as a repeat.
"""

from __future__ import annotations

import bisect
import hashlib
from array import array
from collections.abc import Iterable, Iterator

import numpy as np


class RepeatFinder:
    def __init__(self) -> None:
        self._hashes = array("Q")
        self._lines = array("q")

    def add(self, key: bytes, line: int) -> None:
        self._hashes.append(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big"))
        self._lines.append(line)

    def repeats(self) -> set[int]:
        """The lines whose key an earlier line (a smaller line number) has."""
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
