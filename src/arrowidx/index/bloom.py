"""BloomFilter index (``bloom-filter``): Paimon's ``BloomFilter64`` with ``FastHash``.

Bytes: ``numHashFunctions`` (int32 BE) then the bit set, least-significant bit first in
each byte. ``numBits = nb + (8 - nb % 8)`` with ``nb = (int)(-items * ln(fpp) / ln(2)^2)``,
``numHashFunctions = max(1, round(numBits / items * ln 2))``. A value's 64-bit hash is
Thomas Wang's long hash of its key (numbers, dates, times, timestamps, float bit patterns)
or XXH64 of its UTF-8 bytes (strings); bit ``i`` of ``k`` is
``(h1 + i*h2)`` (int32 wrap, negative flipped with ``~``) modulo ``numBits``.
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from .._bytes import ByteReader
from .._hash import thomas_wang_inplace, thomas_wang_long_hash, xxh64_binary
from ..errors import OptionError, UnsupportedTypeError
from ..predicate import UNKNOWN, Answer
from ..result import REMAIN, SKIP
from ..types import Keys, PaimonType, canonical_float_keys
from .base import IndexReader, IndexType, IndexWriter

DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1


def bloom_parameters(items: int, fpp: float) -> tuple[int, int]:
    """``(numBits, numHashFunctions)`` exactly as ``BloomFilter64(items, fpp)`` computes them."""
    nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    num_bits = nb + (8 - (nb % 8))
    k = max(1, int(math.floor(num_bits / items * math.log(2) + 0.5)))
    return num_bits, k


def _hash_input(keys: Keys, ptype: PaimonType) -> tuple[np.ndarray, bool]:
    """The non-null keys as int64 words still to be hashed with Thomas Wang's hash (numbers,
    dates, times, timestamps, float bit patterns) and False, or their XXH64 hashes and True
    (strings)."""
    values = keys.values
    if keys.nulls is not None:
        if isinstance(values, pa.Array):
            values = values.filter(pa.array(~keys.nulls))
        else:
            values = values[~keys.nulls]
    if ptype.is_string:
        return xxh64_binary(_strings_to_hash(values)), True
    if ptype.is_float:
        values = canonical_float_keys(values)  # Java hashes floatToIntBits: one NaN
        values = values.view(np.int32 if values.dtype == np.float32 else np.int64)
    return values, False


_SAMPLE = 4096


def _strings_to_hash(values: pa.Array) -> pa.Array:
    """The strings whose hashes set bits: each distinct one once (equal strings set equal
    bits) when an evenly spread sample of them repeats, else all of them (finding the distinct
    strings of a column of mostly distinct ones costs more than hashing the repeats)."""
    n = len(values)
    if n > 2 * _SAMPLE:
        sample = values.take(pa.array(np.linspace(0, n - 1, _SAMPLE).astype(np.int64)))
        if len(pc.unique(sample)) > _SAMPLE // 2:
            return values
    return pc.unique(values)


def key_hashes(keys: Keys, ptype: PaimonType) -> np.ndarray:
    """The 64-bit ``FastHash`` of every non-null key (int64), nulls removed."""
    values, hashed = _hash_input(keys, ptype)
    return values if hashed else thomas_wang_long_hash(values.astype(np.int64))


def _bit_positions(hashes: np.ndarray, num_bits: int, k: int) -> list[np.ndarray]:
    """For each hash function i (1..k), the bit each hash sets (int32 arithmetic as Java)."""
    scratch = _Scratch(len(hashes))
    return [p.copy() for p in scratch.positions(hashes.astype(np.int64), num_bits, k)]


_ONE = np.uint8(1)
_CHUNK = 1 << 15  # keys per step: the step's scratch arrays stay in the CPU cache


class _Scratch:
    """Preallocated arrays for hashing one chunk of keys and deriving its bit positions.

    ``BloomFilter64`` sets bit ``combined % numBits`` for ``combined = h1 + i*h2`` (int32
    wrap-around, negative values flipped with ``~``), i = 1..k. Here ``combined`` is carried
    from one i to the next by adding ``h2``, ``~`` of a negative is ``c ^ (c >> 31)``, and
    the modulo of a non-negative int32 by ``numBits`` is a multiply and a shift (Granlund and
    Montgomery's exact division by a constant, see :func:`_reciprocal`).
    """

    def __init__(self, n: int):
        self.key = np.empty(n, np.int64)
        self.tmp = np.empty(n, np.int64)
        self.combined = np.empty(n, np.int32)
        self.high = np.empty(n, np.int32)
        self.flip = np.empty(n, np.int32)
        self.wide = np.empty(n, np.uint64)
        self.quot = np.empty(n, np.uint64)
        self.mask = np.empty(n, np.uint8)
        self.byte = np.empty(n, np.int64)

    def positions(self, hashes: np.ndarray, num_bits: int, k: int):
        """Yield, for i = 1..k, the bit position of each of ``hashes`` (int64, as an int64 view)."""
        n = len(hashes)
        c, high, flip, wide, quot = self.combined[:n], self.high[:n], self.flip[:n], self.wide[:n], self.quot[:n]
        np.copyto(c, hashes, casting="unsafe")  # low 32 bits (h1)
        np.right_shift(hashes, 32, out=self.tmp[:n])
        np.copyto(high, self.tmp[:n], casting="unsafe")  # high 32 bits (h2)
        magic, shift = _reciprocal(num_bits)
        d = np.uint64(num_bits)
        with np.errstate(over="ignore"):
            for _ in range(k):
                c += high
                np.right_shift(c, 31, out=flip)
                np.bitwise_xor(c, flip, out=flip)  # ~c where c < 0
                np.copyto(wide, flip, casting="unsafe")
                np.multiply(wide, magic, out=quot)
                np.right_shift(quot, shift, out=quot)
                quot *= d
                np.subtract(wide, quot, out=wide)  # flip % num_bits
                yield wide.view(np.int64)

    def set_bits(self, bits: np.ndarray, positions: np.ndarray) -> None:
        """Set bit ``p`` of the packed bytes ``bits`` (LSB first) for each of ``positions``.

        ``bits[byte] |= mask`` with a byte repeated keeps only one of its masks, so the masks
        a byte lost are set again until none is missing (a chunk's positions rarely share a
        byte: the loop ends after a round or two).
        """
        n = len(positions)
        byte = self.byte[:n]
        np.right_shift(positions, 3, out=byte)
        mask = self.mask[:n]
        np.copyto(mask, positions, casting="unsafe")  # the low 8 bits
        np.bitwise_and(mask, 7, out=mask)
        np.left_shift(_ONE, mask, out=mask)
        bits[byte] |= mask
        while True:
            missing = np.flatnonzero((bits[byte] & mask) == 0)
            if not len(missing):
                return
            byte, mask = byte[missing], mask[missing]
            bits[byte] |= mask

    def hash_chunk(self, words: np.ndarray) -> np.ndarray:
        """Thomas Wang's hash of int64 ``words`` (a chunk of at most the scratch size)."""
        n = len(words)
        key = self.key[:n]
        np.copyto(key, words, casting="unsafe")
        return thomas_wang_inplace(key, self.tmp[:n])


def _reciprocal(d: int) -> tuple[np.uint64, np.uint64]:
    """``(m, s)`` with ``x * m >> s == x // d`` for every ``0 <= x < 2**31`` (``1 <= d < 2**31``).

    Granlund and Montgomery (1994), theorem 4.2 with N = 31: ``l = ceil(log2 d)``,
    ``m = ceil(2**(31 + l) / d) < 2**32``, so ``x * m < 2**63`` fits a uint64.
    """
    shift = 31 + (d - 1).bit_length()
    return np.uint64(-(-(1 << shift) // d)), np.uint64(shift)


_SCALAR_KEYS = 16
_MASK64 = (1 << 64) - 1


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def _int64(x: int) -> int:
    x &= _MASK64
    return x - (1 << 64) if x >> 63 else x


def _scalar_hash(value, ptype: PaimonType) -> int:
    """The same hash as :func:`key_hashes`, for one key, in plain Python integers."""
    if ptype.is_string:
        return _int64(xxhash.xxh64_intdigest(value))
    if ptype.is_float:
        fmt = "<f" if ptype.root == "FLOAT" else "<d"
        if value != value:  # Java's floatToIntBits / doubleToLongBits: one canonical NaN
            bits = 0x7FC00000 if ptype.root == "FLOAT" else 0x7FF8000000000000
        else:
            bits = int.from_bytes(struct.pack(fmt, value), "little")
        value = _int32(bits) if ptype.root == "FLOAT" else _int64(bits)
    return _thomas_wang(int(value))


_remembered_hash = functools.lru_cache(maxsize=1024)(_scalar_hash)


def _key_hash(value, ptype: PaimonType) -> int:
    """:func:`_scalar_hash`, remembered for integer, string and binary keys: a needle asks
    every file of a scan for the same key. Floats are not remembered (``-0.0 == 0.0`` as
    keys, yet their hashes differ), nor booleans (``True == 1``)."""
    kind = type(value)
    if kind is int or kind is str or kind is bytes:
        return _remembered_hash(value, ptype)
    return _scalar_hash(value, ptype)


def _thomas_wang(key: int) -> int:
    """``FastHash.getLongHash`` (Java long arithmetic) for one key."""
    key = _int64(~key + (key << 21))
    key = _int64(key ^ (key >> 24))
    key = _int64(key + (key << 3) + (key << 8))
    key = _int64(key ^ (key >> 14))
    key = _int64(key + (key << 2) + (key << 4))
    key = _int64(key ^ (key >> 28))
    return _int64(key + (key << 31))


class BloomFilterWriter(IndexWriter):
    """The bit set, packed (``numBits / 8`` bytes, as stored): one pass, batch by batch."""

    def __init__(self, ptype: PaimonType, items: int, fpp: float):
        self.ptype = ptype
        self.num_bits, self.k = bloom_parameters(items, fpp)
        self.bits = np.zeros(self.num_bits // 8, dtype=np.uint8)

    def add(self, keys: Keys) -> None:
        """Set the k bits of every non-null key, a cache-sized chunk of keys at a time, in
        the calling thread: the packed bit set (an eighth of a byte per bit) keeps its random
        writes in the CPU cache longer than a byte per bit did on two threads, and a build
        already runs a file per core (bench/bench_build_memory.py)."""
        words, hashed = _hash_input(keys, self.ptype)
        scratch = _Scratch(min(_CHUNK, len(words)))
        for start in range(0, len(words), _CHUNK):  # per 32,768 keys, never per key
            chunk = words[start : start + _CHUNK]
            hashes = chunk if hashed else scratch.hash_chunk(chunk)
            for positions in scratch.positions(hashes, self.num_bits, self.k):
                scratch.set_bits(self.bits, positions)

    def finish(self) -> bytes:
        return b"".join([self.k.to_bytes(4, "big", signed=True), self.bits])  # one copy


class BloomFilterReader(IndexReader):
    cost = 0

    def __init__(self, data: ByteReader, ptype: PaimonType):
        self.ptype = ptype
        self.k = data.i32("bloom filter hash function count")
        if not 1 <= self.k <= 1024:
            raise data.fail(f"bloom filter hash function count {self.k} is not in [1, 1024]", data.pos - 4)
        if data.remaining == 0:
            raise data.fail("bloom filter has no bits")
        self.bits = data.array("u1", data.remaining, "bloom filter bits")
        self.num_bits = len(self.bits) * 8

    def might_contain(self, key_values: list) -> np.ndarray:
        """For each key, whether the filter may hold it."""
        if len(key_values) <= _SCALAR_KEYS:  # a few literals: plain integer arithmetic
            return np.array([self._probe(_scalar_hash(v, self.ptype)) for v in key_values], dtype=bool)
        if self.ptype.is_string:
            hashes = xxh64_binary(pa.array(key_values, type=pa.large_binary()))
        else:
            hashes = key_hashes(Keys(np.array(key_values, dtype=self.ptype.key_dtype), None), self.ptype)
        hit = np.ones(len(key_values), dtype=bool)
        for positions in _bit_positions(hashes, self.num_bits, self.k):
            hit &= (self.bits[positions >> 3] >> (positions & 7).astype(np.uint8)) & 1 == 1
        return hit

    def _probe(self, hash64: int) -> bool:
        """``BloomFilter64.testHash`` for one hash (int32 wrap-around as in Java)."""
        h1 = _int32(hash64)
        h2 = _int32(hash64 >> 32)
        bits, num_bits = self.bits, self.num_bits
        for i in range(1, self.k + 1):
            combined = _int32(h1 + i * h2)
            if combined < 0:
                combined = ~combined
            pos = combined % num_bits
            if not (bits[pos >> 3] >> (pos & 7)) & 1:
                return False
        return True

    def answer(self, op: str, keys: tuple) -> Answer:
        if op not in ("eq", "in") or None in keys:
            return UNKNOWN
        if not keys:
            return Answer(SKIP, REMAIN)
        if len(keys) <= _SCALAR_KEYS:  # a needle (asked of every file of a scan): probes, no arrays
            hit = any(self._probe(_key_hash(k, self.ptype)) for k in keys)
        else:
            hit = self.might_contain(list(keys)).any()
        return Answer(REMAIN if hit else SKIP, REMAIN)

    def describe(self) -> dict:
        return {"hash functions": self.k, "bits": self.num_bits}


class BloomFilterIndex(IndexType):
    name = "bloom-filter"
    options = frozenset({"items", "fpp"})

    @classmethod
    def check_type(cls, ptype: PaimonType) -> None:
        if ptype.root in ("BOOLEAN", "DECIMAL"):
            raise UnsupportedTypeError(f"bloom-filter does not support {ptype.sql} (as in Paimon)")

    @classmethod
    def _parse(cls, column: str, options: Mapping[str, str]) -> tuple[int, float]:
        try:
            items = int(options.get("items", DEFAULT_ITEMS))
        except ValueError:
            raise OptionError(f"file-index.bloom-filter.{column}.items: {options['items']!r} is not a whole number;"
                              " give the expected distinct values per file, e.g. 100000") from None  # fmt: skip
        try:
            fpp = float(options.get("fpp", DEFAULT_FPP))
        except ValueError:
            raise OptionError(f"file-index.bloom-filter.{column}.fpp: {options['fpp']!r} is not a number;"
                              " give a false positive probability, e.g. 0.01") from None  # fmt: skip
        if items <= 0 or items > 2**31 - 1:
            raise OptionError(f"file-index.bloom-filter.{column}.items must be in [1, 2^31-1], got {items}")
        if not 0.0 < fpp < 1.0:
            raise OptionError(f"file-index.bloom-filter.{column}.fpp must be in (0, 1), got {fpp}")
        num_bits, _ = bloom_parameters(items, fpp)
        if num_bits > 2**31 - 1:
            raise OptionError(f"bloom-filter for {column!r}: items={items}, fpp={fpp} needs {num_bits} bits, over Java's int limit")
        return items, fpp

    @classmethod
    def check_options(cls, column: str, options: Mapping[str, str]) -> None:
        cls._parse(column, options)

    @classmethod
    def writer(cls, ptype: PaimonType, options: Mapping[str, str]) -> IndexWriter:
        cls.check_type(ptype)
        items, fpp = cls._parse("?", options)
        return BloomFilterWriter(ptype, items, fpp)

    @classmethod
    def reader(cls, data: ByteReader, ptype: PaimonType, arrow_type: pa.DataType) -> IndexReader:
        return BloomFilterReader(data, ptype)
