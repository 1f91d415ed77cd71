"""Java semantics the tests' references need, written here from Java's own definitions and
never taken from arrowidx (whose versions are what the tests check):

* :func:`java_float_key`: integers ordered as ``Double.compare`` / ``Float.compare`` order
  the floats (``-0.0 < 0.0``, every NaN equal and above ``+inf``); checked against a
  literal port of ``Double.compare`` in ``test_java_reference.py``;
* :func:`hashmap_order`: the iteration order of a ``java.util.HashMap<Integer, ...>`` after
  ``compute`` calls, from a port of OpenJDK 17's ``HashMap.compute``, ``resize`` and
  ``treeifyBin``; checked against orders Java printed (and live Java when a JDK is here).
"""

from __future__ import annotations

import functools
import math
import struct

import numpy as np

_CANONICAL_NAN = {32: 0x7FC00000, 64: 0x7FF8000000000000}


def java_float_key(values) -> np.ndarray:
    """Per float, an int64 that sorts as Java's ``Double.compare`` (``Float.compare`` for
    float32) sorts the values: NaN (any payload) is one value above ``+inf``, ``-0.0`` is
    below ``0.0``. Keys of float32 and float64 arrays are comparable only within one width.

    From the definition: ``doubleToLongBits`` (NaN canonical) read as a sign and a
    magnitude; non-negative values order by magnitude, negative ones reversed below them.
    """
    v = np.asarray(values)
    if v.dtype not in (np.float32, np.float64):
        v = v.astype(np.float64)
    width = 32 if v.dtype == np.float32 else 64
    unsigned = v.view(np.uint32 if width == 32 else np.uint64).astype(np.uint64)
    magnitude = (unsigned & np.uint64((1 << (width - 1)) - 1)).astype(np.int64)
    key = np.where(np.signbit(v), -1 - magnitude, magnitude)
    return np.where(np.isnan(v), np.int64(_CANONICAL_NAN[width]), key).astype(np.int64)


def java_double_compare(a: float, b: float) -> int:
    """``java.lang.Double.compare``, line for line (the definition the keys must follow)."""
    if a < b:
        return -1
    if a > b:
        return 1
    a_bits = _double_to_long_bits(a)
    b_bits = _double_to_long_bits(b)
    return 0 if a_bits == b_bits else (-1 if a_bits < b_bits else 1)


def _double_to_long_bits(x: float) -> int:
    if math.isnan(x):
        return _CANONICAL_NAN[64]
    return struct.unpack(">q", struct.pack(">d", x))[0]


java_double_sort_key = functools.cmp_to_key(java_double_compare)


# ------------------------------------------------------------------------------------------
# java.util.HashMap (OpenJDK 17): iteration order after compute() calls
# ------------------------------------------------------------------------------------------


class _Node:
    __slots__ = ("hash", "key", "next")

    def __init__(self, h: int, key: int, nxt: _Node | None):
        self.hash, self.key, self.next = h, key, nxt


class JavaHashMap:
    """The bins of ``HashMap<Integer, V>`` as ``compute(key, ...)`` (never returning null)
    leaves them. Tree bins (8+ keys in one bin of a table of 64+) are refused: the tests
    that use this never reach one."""

    DEFAULT_CAPACITY = 16
    LOAD_FACTOR = 0.75
    TREEIFY_THRESHOLD = 8
    MIN_TREEIFY_CAPACITY = 64

    def __init__(self) -> None:
        self.table: list[_Node | None] | None = None
        self.threshold = 0
        self.size = 0

    @staticmethod
    def hash(key: int) -> int:
        h = key & 0xFFFFFFFF  # Integer.hashCode, as an unsigned 32-bit pattern
        return h ^ (h >> 16)

    def resize(self) -> None:
        old = self.table
        old_cap = 0 if old is None else len(old)
        if old_cap > 0:
            new_cap, new_thr = old_cap * 2, self.threshold * 2
        else:
            new_cap, new_thr = self.DEFAULT_CAPACITY, int(self.DEFAULT_CAPACITY * self.LOAD_FACTOR)
        self.threshold = new_thr
        table: list[_Node | None] = [None] * new_cap
        for j in range(old_cap):
            e = old[j]
            if e is None:
                continue
            if e.next is None:
                table[e.hash & (new_cap - 1)] = e
                continue
            # split, preserving order: "lo" stays at j, "hi" moves to j + old_cap
            lo_head = lo_tail = hi_head = hi_tail = None
            while e is not None:
                nxt = e.next
                if e.hash & old_cap == 0:
                    if lo_tail is None:
                        lo_head = e
                    else:
                        lo_tail.next = e
                    lo_tail = e
                else:
                    if hi_tail is None:
                        hi_head = e
                    else:
                        hi_tail.next = e
                    hi_tail = e
                e = nxt
            if lo_tail is not None:
                lo_tail.next = None
                table[j] = lo_head
            if hi_tail is not None:
                hi_tail.next = None
                table[j + old_cap] = hi_head
        self.table = table

    def compute(self, key: int) -> None:
        """``map.compute(key, (k, v) -> v == null ? 1 : v + 1)``: only the bins matter."""
        h = self.hash(key)
        if self.size > self.threshold or self.table is None or len(self.table) == 0:
            self.resize()
        n = len(self.table)
        i = (n - 1) & h
        first = self.table[i]
        bin_count = 0
        e = first
        while e is not None:
            if e.hash == h and e.key == key:
                return  # present: the value changes, the bins do not
            bin_count += 1
            e = e.next
        self.table[i] = _Node(h, key, first)  # compute() puts a new node at the head of its bin
        if bin_count >= self.TREEIFY_THRESHOLD - 1:
            if len(self.table) < self.MIN_TREEIFY_CAPACITY:
                self.resize()  # treeifyBin on a small table resizes instead
            else:
                raise NotImplementedError("a tree bin (8+ keys in one bin of a 64+ table): not modelled")
        self.size += 1

    def keys(self) -> list[int]:
        out = []
        for e in self.table or []:
            while e is not None:
                out.append(e.key)
                e = e.next
        return out


def hashmap_order(buckets_in_compute_order: list[tuple[int, int]]) -> list[int]:
    """Iteration order of the map after ``compute(bucket, ...)`` once per hash, for
    ``[(bucket, number of hashes)]`` in file order (Paimon's ``PartitionIndex.loadIndex``)."""
    m = JavaHashMap()
    for bucket, count in buckets_in_compute_order:
        # a call for a key already there changes only the value; its resize check sees the
        # size the previous call left, so after the second call more calls change nothing
        for _ in range(min(count, 2)):
            m.compute(bucket)
    return m.keys()
