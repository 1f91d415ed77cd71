"""Bit-sliced index bitmaps: one Roaring bitmap per bit of a non-negative integer per row.

A column of small non-negative integers (range-bitmap dictionary codes, or the absolute
values of a BSI) is stored as an *existence bitmap* (the rows that have a value) and ``k``
*slices*, slice ``i`` holding the rows whose value has bit ``i`` set. Comparisons walk the
slices from the most significant bit down (O'Neil & Quass, "Improved query performance with
variant indexes", 1997), so ``x < t``, ``x = c`` and top-k each cost at most one Roaring
operation per slice, whatever the number of rows or distinct values. ``IN`` walks its values
down together, sharing the slices where their high bits agree. On large range bitmaps with
few rows per value, ``=`` and ``IN`` keep the candidate rows as machine words instead of
Roaring containers (one vectorised AND per slice, read in place from the index bytes).

Building is vectorised: :func:`bitmap_from_mask` turns a boolean row mask into a bitmap by
packing the bits with numpy and handing CRoaring the containers directly (dense 65,536-row
blocks as bitsets, sparse ones as sorted 16-bit positions), never touching rows in Python.

The on-disk layout of the range-bitmap variant (``BitSliceIndexBitmap`` V1), big-endian::

    header length (int32)
    version (byte, 1) | slice count (byte) | existence bitmap length (int32)
    index length (int32, 8 * slice count) | (slice offset, slice length) int32 pairs
    existence bitmap | slice 0 | slice 1 | ...      (portable Roaring, run-optimised)
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from contextlib import contextmanager

import numpy as np
from pyroaring import BitMap

from ..._bytes import ByteReader
from ..._roaring import (
    _KIND_BITMAP,
    MalformedBitmap,
    PortableLayout,
    bitmap_of,
    decode_containers,
    leading_bitsets,
    packed_window,
    portable_layout,
    positions_of,
    to_portable,
)
from ...errors import CorruptIndexError

VERSION_1 = 1
_ROWS_PER_CONTAINER = 1 << 16
_BYTES_PER_CONTAINER = _ROWS_PER_CONTAINER // 8
_ARRAY_MAX = 4096  # a container with more values is a bitset in the portable format
_NO_RUN_COOKIE = 12346
# = and IN walk a range bitmap's slices as machine words from this many rows, with at most
# this many rows per code on average (see BitSliceIndexBitmap._words_pay)
DENSE_MIN_ROWS = 1 << 16
WORDS_ROWS_PER_CODE = 256
# the word walk keeps only the non-zero words once this many slices are applied (a uniform
# column then has ~1/256 of its rows left, in fewer than half the words)
COMPACT_AFTER = 8
# the word walk's answer is unpacked with numpy from its non-zero words while they are at
# most 1/8 of the words (~100 ns a word), else built by CRoaring (~13 ns for every word)
_UNPACK_SHARE = 8
EMPTY_PORTABLE = to_portable(BitMap())


# ---------------------------------------------------------------------------------------
# building
# ---------------------------------------------------------------------------------------


def bitmap_from_mask(mask: np.ndarray) -> BitMap:
    """The rows where ``mask`` (a numpy bool array) is True, as a ``BitMap``."""
    n = len(mask)
    if n == 0:
        return BitMap()
    packed = np.packbits(mask, bitorder="little")
    blocks = -(-len(packed) // _BYTES_PER_CONTAINER)
    pad = blocks * _BYTES_PER_CONTAINER - len(packed)
    if pad:
        packed = np.concatenate((packed, np.zeros(pad, dtype=np.uint8)))
    return bitmap_from_packed(packed, mask)


def bitmap_from_packed(packed: np.ndarray, mask: np.ndarray | None = None) -> BitMap:
    """The set bits of ``packed`` (uint8, LSB first, whole 65,536-row blocks), as a ``BitMap``.

    Dense blocks go to CRoaring as 8 KiB bitsets straight from the bytes; sparse blocks as
    their positions (found in ``mask``, the same bits unpacked, when the caller has it). The
    loop is per block (153 for 10M rows), not per row.
    """
    packed = packed.reshape(-1, _BYTES_PER_CONTAINER)
    cards = np.bitwise_count(packed.view(np.uint64)).sum(axis=1, dtype=np.int64)
    total = int(cards.sum())
    if total * 32 < packed.size * 8:  # mostly sparse: positions are cheaper than bitsets
        bits = mask if mask is not None else np.unpackbits(packed.reshape(-1), bitorder="little")
        return bitmap_of(np.flatnonzero(bits))
    keys = np.flatnonzero(cards)
    parts: list[bytes] = []
    for key in keys.tolist():  # per 65,536-row block
        if cards[key] > _ARRAY_MAX:
            parts.append(packed[key].tobytes())
        else:
            lo = key * _ROWS_PER_CONTAINER
            bits = (
                mask[lo : lo + _ROWS_PER_CONTAINER]
                if mask is not None
                else np.unpackbits(packed[key], bitorder="little")
            )
            parts.append(np.flatnonzero(bits).astype("<u2").tobytes())
    m = len(keys)
    header = np.empty((m, 2), dtype="<u2")
    header[:, 0] = keys
    header[:, 1] = cards[keys] - 1
    sizes = np.fromiter((len(p) for p in parts), dtype=np.int64, count=m)
    offsets = 8 + 8 * m + np.concatenate(([0], np.cumsum(sizes)[:-1]))
    buf = b"".join(
        [
            struct.pack("<II", _NO_RUN_COOKIE, m),
            header.tobytes(),
            offsets.astype("<u4").tobytes(),
            *parts,
        ]
    )
    return BitMap.deserialize(buf)


_EVEN_BITS = np.uint64(0x5555_5555_5555_5555)


def bitmap_from_words(words: np.ndarray) -> BitMap:
    """The set bits of ``words`` (uint64, whole 65,536-row blocks), as a ``BitMap``.

    Sparse blocks would have to become positions row by row in numpy; instead two dense
    bitmaps are handed to CRoaring, ``words | pad`` and ``pad`` (``pad``: the even bits
    ``words`` lacks, so each block of either holds over 4,096 rows and goes in as a bitset),
    and CRoaring's vectorised AND-NOT gives back ``words``, each block as an array or a
    bitset as its rows call for (~2 ms for 10M rows, against ~19 ms unpacking the bits).
    """
    pad = np.bitwise_and(np.invert(words), _EVEN_BITS)
    with_pad = np.bitwise_or(words, pad)
    return bitmap_from_packed(with_pad.view(np.uint8)) - bitmap_from_packed(pad.view(np.uint8))


def bit_masks(values: np.ndarray, count: int):
    """For ``i`` in ``range(count)``: the mask of rows whose (unsigned) ``values`` have bit ``i``."""
    unsigned = values.view(np.uint64 if values.dtype.itemsize == 8 else np.uint32)
    width = unsigned.dtype.itemsize * 8
    for i in range(count):  # per slice
        if i >= width:
            yield None
            continue
        yield (unsigned & unsigned.dtype.type(1 << i)) != 0


def serialize_bit_slices(codes: np.ndarray, present: np.ndarray, cardinality: int) -> bytes:
    """Java's ``BitSliceIndexBitmap`` bytes for per-row ``codes`` (uint32, 0 where absent).

    The slice count is the bit length of the largest code (at least 1); Java sizes it from
    ``cardinality - 1``, which makes an index without any value carry 64 empty slices.
    """
    count = max(int(cardinality - 1).bit_length(), 1) if cardinality > 0 else 64
    ebm = to_portable(bitmap_from_mask(present))
    slices = [
        EMPTY_PORTABLE if mask is None or cardinality <= 1 else to_portable(bitmap_from_mask(mask))
        for mask in bit_masks(codes, count)
    ]
    index = np.empty((count, 2), dtype=">i4")
    lengths = np.array([len(s) for s in slices], dtype=np.int64)
    index[:, 0] = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    index[:, 1] = lengths
    header = struct.pack(">BbII", VERSION_1, count, len(ebm), 8 * count) + index.tobytes()
    return b"".join([struct.pack(">i", len(header)), header, ebm, *slices])


# ---------------------------------------------------------------------------------------
# reading and querying
# ---------------------------------------------------------------------------------------


def load_bitmap(data: memoryview, source: str, start: int, length: int, what: str) -> BitMap:
    """Deserialise the portable bitmap at ``data[start:start + length]`` (no copy)."""
    try:
        return BitMap.deserialize(data[start : start + length])
    except (ValueError, IndexError) as e:
        raise CorruptIndexError(
            f"{what} is not a valid portable Roaring bitmap ({e})", source=source, offset=start
        ) from None


def lowest(rows: BitMap, n: int) -> BitMap:
    """The ``n`` smallest rows of ``rows``."""
    if n <= 0:
        return BitMap()
    if n >= len(rows):
        return BitMap(rows)
    out = BitMap(rows)
    out.remove_range(rows[n], 1 << 32)
    return out


def highest(rows: BitMap, n: int) -> BitMap:
    """The ``n`` largest rows of ``rows``."""
    if n <= 0:
        return BitMap()
    if n >= len(rows):
        return BitMap(rows)
    out = BitMap(rows)
    out.remove_range(0, rows[len(rows) - n])
    return out


class SliceSet:
    """Answers comparisons on the values of a bit-sliced index.

    Subclasses provide ``count`` (number of slices), ``max_value`` (no stored value is
    larger), :meth:`_load_ebm` and :meth:`_load_slice`. A query loads only the slices it
    needs, one at a time, and lets each go once used (so the allocator hands the same memory
    to the next one); inside ``with slices.kept():`` they are kept for the queries that follow.
    """

    count: int
    max_value: int
    rows: int = 0
    source: str | None = None
    data: bytes | memoryview = b""

    def __init__(self) -> None:
        self._ebm: BitMap | None = None
        self._slices: dict[int, BitMap] | None = None
        self._complements: dict[int, BitMap] | None = None
        self._words: dict[int, _SliceWords] | None = None  # slices as words, while kept
        self._buf: np.ndarray | None = None
        self._layouts: dict[int, PortableLayout] = {}  # slice -> its container layout

    def _load_ebm(self) -> BitMap:
        raise NotImplementedError

    def _load_slice(self, i: int) -> BitMap:
        raise NotImplementedError

    def _span(self, i: int) -> tuple[int, int] | None:
        """``(start, length)`` of slice ``i``'s portable bitmap in ``self.data``, if known."""
        return None

    def _buffer(self) -> np.ndarray:
        if self._buf is None:
            self._buf = np.frombuffer(self.data, dtype=np.uint8)
        return self._buf

    def _layout(self, i: int) -> PortableLayout:
        """Where slice ``i``'s containers lie in the bytes (parsed once per opened index: a
        scan asks it again per query)."""
        layout = self._layouts.get(i)
        if layout is None:
            start, length = self._span(i)
            try:
                layout = portable_layout(self._buffer(), start, start + length)
            except MalformedBitmap as e:
                raise CorruptIndexError(
                    f"slice {i} is not a valid portable Roaring bitmap ({e})", source=self.source, offset=e.offset
                ) from None
            self._layouts[i] = layout
        return layout

    def sparse_limit(self) -> int:
        """Below this many candidate rows, :meth:`slice_contains` beats loading a slice."""
        return 0

    def slice_contains(self, i: int, rows: np.ndarray) -> np.ndarray | None:
        """Whether each of ``rows`` (sorted positions) is in slice ``i``, or None when the
        slice cannot be probed without decoding it."""
        return None

    def ebm(self) -> BitMap:
        """The rows that have a value (do not mutate)."""
        if self._ebm is None:
            self._ebm = self._load_ebm()
        return self._ebm

    def slice(self, i: int) -> BitMap:
        if self._slices is None:
            return self._load_slice(i)
        found = self._slices.get(i)
        if found is None:
            found = self._slices[i] = self._load_slice(i)
        return found

    def _complement(self, i: int, s: BitMap) -> BitMap:
        """The rows with a value whose bit ``i`` is 0 (``s``: slice ``i``; kept like the slices)."""
        if self._complements is None:
            return self.ebm() - s
        found = self._complements.get(i)
        if found is None:
            found = self._complements[i] = self.ebm() - s
        return found

    def _keep_bit(self, state: BitMap, i: int, s: BitMap) -> None:
        """``state &= slice i`` for ``state`` within the existence bitmap.

        CRoaring turns an AND of two bitset containers whose result is sparse into an array
        bit by bit, ~4x slower than the vectorised extraction of its AND-NOT; where most of
        the result's containers will be arrays, ``state -= ebm - slice`` gives the same rows
        (the halving of a uniform column there costs 0.39 instead of 1.18 ms per 10M rows).
        """
        stats = state.get_statistics()
        if stats["n_bitset_containers"] and state.intersection_cardinality(s) <= _ARRAY_MAX * stats["n_containers"]:
            state -= self._complement(i, s)
        else:
            state &= s

    @contextmanager
    def kept(self):
        """Keep every slice loaded inside the block (several queries over the same slices)."""
        outer = self._slices is not None
        if not outer:
            self._slices, self._complements, self._words = {}, {}, {}
        try:
            yield self
        finally:
            if not outer:
                self._slices = self._complements = self._words = None

    def lt(self, t: int) -> BitMap:
        """Rows whose value is ``< t``."""
        if t <= 0 or not self.ebm():
            return BitMap()
        if t > self.max_value:
            return BitMap(self.ebm())
        below = BitMap()
        below_rows: list[np.ndarray] = []
        prefix = BitMap(self.ebm())  # rows equal to t on every bit seen so far
        rows = None  # ``prefix`` as positions, once few rows are left
        limit = self.sparse_limit()
        for i in range(self.count - 1, -1, -1):  # per slice, most significant first
            bit = (t >> i) & 1
            if rows is None and len(prefix) < limit:
                rows = positions_of(prefix)
            inside = self.slice_contains(i, rows) if rows is not None else None
            if inside is not None:
                if bit:
                    below_rows.append(rows[~inside])
                    rows = rows[inside]
                else:
                    rows = rows[~inside]
                if not rows.size or not t & ((1 << i) - 1):
                    break
                continue
            if rows is not None:
                prefix, rows = bitmap_of(rows), None
            s = self.slice(i)
            if bit:
                below |= prefix - s
                self._keep_bit(prefix, i, s)
            else:
                prefix -= s
            del s
            if not prefix or not t & ((1 << i) - 1):
                break  # nothing left to compare, or no lower bit of t can add rows
        if below_rows:
            below |= bitmap_of(np.concatenate(below_rows))
        return below

    def eq(self, c: int) -> BitMap:
        """Rows whose value is ``c``."""
        return self.eq_any((c,))

    def eq_any(self, values: Iterable[int]) -> BitMap:
        """Rows whose value is any of ``values``.

        The values walk down the slices together, as a binary trie: the rows agreeing with
        several values on their high bits are narrowed once for all of them, and split where
        the values' bits part. Each slice halves the candidates of a uniform column: once few
        are left they are probed in the slices' serialised bits (:meth:`slice_contains`)
        instead of decoding whole slices. Where it pays, the walk keeps the candidate rows
        as machine words instead (:meth:`_eq_words`).
        """
        wanted = sorted({c for c in values if 0 <= c <= self.max_value})
        if not wanted or not self.ebm():
            return BitMap()
        if self._words_pay():
            return self._eq_words(wanted)
        found: list[BitMap] = []
        found_rows: list[np.ndarray] = []
        self._narrow(BitMap(self.ebm()), None, wanted, self.count - 1, found, found_rows)
        if found_rows:
            found.append(bitmap_of(np.concatenate(found_rows)))
        return BitMap.union(BitMap(), *found) if len(found) != 1 else found[0]

    def _narrow(
        self,
        state: BitMap | None,
        rows: np.ndarray | None,
        values: list[int],
        i: int,
        found: list[BitMap],
        found_rows: list[np.ndarray],
    ) -> None:
        """Keep the rows of ``state`` (or of ``rows``, the same as positions) whose bits ``i``
        and below equal one of ``values``; they already agree on the bits above ``i``.
        Adds the survivors to ``found`` or ``found_rows``; ``state`` is consumed."""
        limit = self.sparse_limit()
        while i >= 0:  # per slice, most significant first
            ones = [c for c in values if (c >> i) & 1]
            zeros = values if not ones else [c for c in values if not (c >> i) & 1]
            if rows is None and len(state) < limit:
                rows = positions_of(state)
            inside = self.slice_contains(i, rows) if rows is not None else None
            if inside is not None:
                if ones and zeros:  # the values part here: the ones go on apart
                    self._narrow(None, rows[inside], ones, i - 1, found, found_rows)
                    rows, values = rows[~inside], zeros
                else:
                    rows = rows[inside] if ones else rows[~inside]
                if not rows.size:
                    return
                i -= 1
                continue
            if rows is not None:
                state, rows = bitmap_of(rows), None
            s = self.slice(i)
            if ones and zeros:
                rest = state - s
                self._keep_bit(state, i, s)
                if state:
                    self._narrow(state, None, ones, i - 1, found, found_rows)
                state, values = rest, zeros
            elif ones:
                self._keep_bit(state, i, s)
            else:
                state -= s
            del s
            if not state:
                return
            i -= 1
        if rows is not None:
            found_rows.append(rows)
        else:
            found.append(state)

    # -- = and IN over the slices as machine words ---------------------------------------
    def _words_pay(self) -> bool:
        """Whether = and IN walk the slices as machine words (:meth:`_eq_words`)."""
        return False

    def _containers(self) -> int:
        return -(-self.rows // _ROWS_PER_CONTAINER)

    def _slice_words(self, i: int) -> _SliceWords:
        """Slice ``i`` as machine words (see :class:`_SliceWords`)."""
        if self._words is not None and i in self._words:
            return self._words[i]
        n = self._containers()
        start, length = self._span(i)
        first, m, rest = leading_bitsets(self._buffer(), start, start + length, n)
        head = self._buf[first : first + m * _BYTES_PER_CONTAINER].view("<u8")
        tail = np.zeros(0, np.uint64)
        if m < n:
            try:
                tail = decode_containers(self._buf, rest or self._layout(i), m, n).view("<u8")
            except MalformedBitmap as e:
                raise CorruptIndexError(
                    f"slice {i} is not a valid portable Roaring bitmap ({e})", source=self.source, offset=e.offset
                ) from None
        words = _SliceWords(head, tail)
        if self._words is not None:
            self._words[i] = words
        return words

    def _ebm_words(self) -> np.ndarray:
        """The existence bitmap as uint64 words (a fresh array the caller may change)."""
        n = self._containers()
        ebm = self.ebm()
        if len(ebm) == self.rows:  # every row has a value (the usual case: no nulls)
            words = np.full(n * _BYTES_PER_CONTAINER // 8, np.uint64(0xFFFF_FFFF_FFFF_FFFF))
            whole, rest = divmod(self.rows, 64)
            words[whole:] = 0
            if rest:
                words[whole] = np.uint64((1 << rest) - 1)
            return words
        return packed_window(ebm, 0, n * _ROWS_PER_CONTAINER).view("<u8")

    def _eq_words(self, values: list[int]) -> BitMap:
        """:meth:`eq_any` for large indexes: the candidate rows are kept as machine words.

        CRoaring's containers turn from bitsets into arrays a few slices down, and from there
        every slice costs an operation per candidate row; as words every slice costs one
        vectorised AND over the rows' bits (~40 µs per 10M rows), and once most words are
        zero only the non-zero ones are kept (with their indexes), so the last slices are
        nearly free.
        """
        found: list[BitMap | np.ndarray] = []
        state = self._ebm_words()
        self._narrow_words(state, None, values, self.count - 1, found, np.empty_like(state))
        bitmaps = [f for f in found if isinstance(f, BitMap)]
        rows = [f for f in found if not isinstance(f, BitMap)]
        if rows:
            bitmaps.append(bitmap_of(np.concatenate(rows)))
        return BitMap.union(BitMap(), *bitmaps) if len(bitmaps) != 1 else bitmaps[0]

    def _narrow_words(
        self,
        state: np.ndarray,
        where: np.ndarray | None,
        values: list[int],
        i: int,
        found: list,
        scratch: np.ndarray,
    ) -> None:
        """Keep the rows of ``state`` whose bits ``i`` and below equal one of ``values`` (they
        agree with them on the bits above). ``state`` holds the words at ``where`` (all the
        words when None); ``scratch`` is a spare array of the full size. Adds the survivors
        to ``found``, as positions or a ``BitMap``; ``state`` is consumed."""
        top = self.count - 1
        while i >= 0:  # per slice, most significant first
            s = self._slice_words(i)
            if where is not None:
                s = _SliceWords(s.gather(where), np.zeros(0, np.uint64))
            ones = [c for c in values if (c >> i) & 1]
            zeros = values if not ones else [c for c in values if not (c >> i) & 1]
            if ones and zeros:  # the values part here: the ones go on apart
                part = s.and_(state, np.empty_like(state))
                np.bitwise_xor(state, part, out=state)  # state & ~s, as part is within state
                self._narrow_words(part, where, ones, i - 1, found, scratch)
                values = zeros
            elif ones:
                s.and_(state, state)
            else:
                tmp = s.and_(state, scratch if where is None else np.empty_like(state))
                np.bitwise_xor(state, tmp, out=state)
            del s
            if where is not None or top - i + 1 >= COMPACT_AFTER:
                live = np.flatnonzero(state != 0)
                if where is not None or 2 * len(live) < len(state):
                    state, where = state[live], live if where is None else where[live]
                    if not len(state):
                        return
            i -= 1
        live = np.flatnonzero(state != 0)
        if len(live) * _UNPACK_SHARE > len(scratch):  # many rows: CRoaring extracts them
            if where is not None:
                full = np.zeros(len(scratch), dtype=np.uint64)
                full[where] = state
                state = full
            found.append(bitmap_from_words(state))
            return
        at = live if where is None else where[live]
        bits = np.unpackbits(state[live].view(np.uint8), bitorder="little").reshape(-1, 64)
        word, bit = np.nonzero(bits)
        found.append(at[word].astype(np.int64) * 64 + bit)

    def le(self, t: int) -> BitMap:
        return self.lt(t + 1)

    def ge(self, t: int) -> BitMap:
        if t <= 0:
            return BitMap(self.ebm())
        return self.ebm() - self.lt(t)

    def gt(self, t: int) -> BitMap:
        return self.ge(t + 1)

    def extreme(self, k: int, candidates: BitMap, largest: bool) -> tuple[BitMap, BitMap]:
        """Top-k of ``candidates`` (a subset of the existence bitmap) by value.

        Returns ``(above, tied)``: ``above`` are rows strictly better than the k-th value,
        ``tied`` the rows holding it; ``above | tied`` covers every row that can be in a
        top-k and ``len(above) < k <= len(above) + len(tied)``. When the k-th boundary falls
        between two values ``tied`` is empty and ``above`` has exactly ``k`` rows.
        (Algorithm 4.1 of O'Neil, "Bit-Sliced Index Arithmetic": one pass over the slices.)
        """
        above = BitMap()
        rest = BitMap(candidates)
        if len(rest) <= k:
            return rest, BitMap()
        for i in range(self.count - 1, -1, -1):  # per slice
            s = self.slice(i)
            better = rest & s if largest else rest - s
            n = len(above) + len(better)
            if n > k:
                rest = better
            elif n < k:
                above |= better
                rest = rest - s if largest else rest & s
            else:
                return above | better, BitMap()
        return above, rest


class _SliceWords:
    """One slice as uint64 words, bit ``r`` of the words being row ``r`` (whole containers).

    ``head`` covers the leading containers that are bitsets: a view of the index bytes (the
    portable format stores them back to back; copying them into aligned words costs more
    than it saves). ``tail`` holds the containers after them laid out as words (a partial
    last container is usually an array or runs); empty when every container is a bitset.
    """

    __slots__ = ("head", "tail")

    def __init__(self, head: np.ndarray, tail: np.ndarray):
        self.head, self.tail = head, tail

    def and_(self, state: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out = state & slice`` for ``state`` covering every word."""
        if not len(self.tail):
            return np.bitwise_and(state, self.head, out=out)
        cut = len(self.head)
        np.bitwise_and(state[:cut], self.head, out=out[:cut])
        np.bitwise_and(state[cut:], self.tail, out=out[cut:])
        return out

    def gather(self, where: np.ndarray) -> np.ndarray:
        """The words at ``where`` (sorted word indexes)."""
        if not len(self.tail):
            return self.head[where]
        cut = int(np.searchsorted(where, len(self.head)))
        return np.concatenate((self.head[where[:cut]], self.tail[where[cut:] - len(self.head)]))


class BitSliceIndexBitmap(SliceSet):
    """A range-bitmap's bit-slice section, read lazily from its bytes.

    The header (lengths and per-slice offsets) is validated when opened, so a truncated or
    inconsistent file fails here; bitmaps are deserialised only when a query needs them.
    """

    def __init__(self, r: ByteReader, rows: int, max_code: int):
        super().__init__()
        self.source = r.source
        self.data = r.data
        self.rows = rows
        at = r.pos
        header_length = r.i32("bit-slice header length")
        if header_length < 10:
            raise r.fail(f"bit-slice header length {header_length} is below the minimum of 10", at)
        h = r.sub(header_length, "bit-slice header")
        version = h.u8("bit-slice version")
        if version != VERSION_1:
            _version_error(h, version, "bit-slice index")
        self.count = h.i8("slice count")
        if not 1 <= self.count <= 64:
            raise h.fail(f"slice count {self.count} is outside [1, 64]", h.pos - 1)
        if max_code.bit_length() > self.count:
            raise h.fail(
                f"{self.count} slices cannot hold dictionary codes up to {max_code}", h.pos - 1
            )
        self.max_value = max_code
        ebm_length = h.i32("existence bitmap length")
        index_length = h.i32("slice index length")
        if index_length != 8 * self.count:
            raise h.fail(
                f"slice index length {index_length} is not 8 x {self.count} slices", h.pos - 4
            )
        index = (
            h.array(">i4", 2 * self.count, "slice index").reshape(self.count, 2).astype(np.int64)
        )
        if h.remaining:
            raise h.fail(f"{h.remaining} unexpected bytes at the end of the bit-slice header")
        self.ebm_start = r.pos
        if ebm_length < 0 or ebm_length > r.remaining:
            raise r.fail(f"existence bitmap length {ebm_length} with {r.remaining} bytes left")
        self.ebm_length = ebm_length
        self.slices_start = r.pos + ebm_length
        space = r.end - self.slices_start
        offsets, lengths = index[:, 0], index[:, 1]
        ends = offsets + lengths
        if (offsets < 0).any() or (lengths < 0).any() or (ends > space).any():
            bad = int(np.flatnonzero((offsets < 0) | (lengths < 0) | (ends > space))[0])
            raise r.fail(
                f"slice {bad} at [{offsets[bad]}, {ends[bad]}) lies outside the {space} bytes of slices",
                at + 14 + 8 * bad,
            )
        if int(ends.max()) != space:
            raise r.fail(
                f"slices end at byte {int(ends.max())} of a {space}-byte slice area",
                self.slices_start,
            )
        self.offsets, self.lengths = offsets.tolist(), lengths.tolist()

    def _load_ebm(self) -> BitMap:
        ebm = load_bitmap(
            self.data, self.source, self.ebm_start, self.ebm_length, "existence bitmap"
        )
        if ebm and ebm.max() >= self.rows:
            raise CorruptIndexError(
                f"existence bitmap holds row {ebm.max()} of a {self.rows}-row index",
                source=self.source,
                offset=self.ebm_start,
            )
        return ebm

    def _words_pay(self) -> bool:
        """For many rows, few rows per code (so answers are small) and a top slice of bitsets
        (the slices below it hold ~half the rows): measured on uniform columns of 65k-10M
        rows, the word walk is 1.5-3x faster there and slower elsewhere."""
        if self.rows < DENSE_MIN_ROWS or self.rows > WORDS_ROWS_PER_CODE * (self.max_value + 1):
            return False
        n = self._containers()
        start, length = self._span(self.count - 1)
        return leading_bitsets(self._buffer(), start, start + length, n)[1] >= n - 1

    def sparse_limit(self) -> int:
        # measured on W4 (10M rows): 4,096 beats rows/512 for IN (the slices are shared by
        # the values) and ties for = and <; 256-8,192 are within 10 %
        return 4096

    def slice_contains(self, i: int, rows: np.ndarray) -> np.ndarray | None:
        """Probe slice ``i``'s bitset containers at ``rows`` without decoding the slice;
        None if a row falls in an array or run container (then the slice is decoded)."""
        layout = self._layout(i)
        if not len(layout.keys):
            return np.zeros(len(rows), dtype=bool)
        high = (rows >> 16).astype(np.int64)
        at = np.minimum(np.searchsorted(layout.keys, high), len(layout.keys) - 1)
        found = layout.keys[at] == high
        if not (layout.kinds[at[found]] == _KIND_BITMAP).all():
            return None
        low = (rows & 0xFFFF).astype(np.int64)
        byte = np.where(found, layout.offsets[at] + (low >> 3), 0)
        return found & ((self._buf[byte] >> (low & 7).astype(np.uint8)) & 1).astype(bool)

    def _span(self, i: int) -> tuple[int, int]:
        return self.slices_start + self.offsets[i], self.lengths[i]

    def _load_slice(self, i: int) -> BitMap:
        return load_bitmap(self.data, self.source, *self._span(i), f"slice {i}")


def _version_error(r: ByteReader, version: int, what: str):
    if version > VERSION_1:
        from ..container import UnsupportedVersionError

        raise UnsupportedVersionError(
            f"{what} version {version}; arrowidx reads version {VERSION_1}",
            source=r.source,
            offset=r.pos - 1,
        )
    raise r.fail(f"bad {what} version {version}", r.pos - 1)
