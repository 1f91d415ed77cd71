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

Building is vectorised (:mod:`.bitwords`): :func:`bitmap_from_mask` turns a boolean row mask into a bitmap by
packing the bits with numpy and handing CRoaring the containers directly (dense 65,536-row
blocks as bitsets, sparse ones as sorted 16-bit positions), never touching rows in Python.

The on-disk layout of the range-bitmap variant (``BitSliceIndexBitmap`` V1), big-endian::

    header length (int32)
    version (byte, 1) | slice count (byte) | existence bitmap length (int32)
    index length (int32, 8 * slice count) | (slice offset, slice length) int32 pairs
    existence bitmap | slice 0 | slice 1 | ...      (portable Roaring, run-optimised)
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import contextmanager

import numpy as np
from pyroaring import BitMap

from ..._bytes import ByteReader
from ..._roaring import (
    KIND_BITMAP,
    MalformedBitmap,
    PortableLayout,
    bitmap_of,
    bitmap_of_sorted,
    decode_containers,
    leading_bitsets,
    packed_window,
    portable_layout,
    positions_of,
    to_portable,
)
from ...errors import CorruptIndexError
from .bitwords import (
    bitmap_from_words,
    positions_of_words,
)

VERSION_1 = 1
_ROWS_PER_CONTAINER = 1 << 16
_BYTES_PER_CONTAINER = _ROWS_PER_CONTAINER // 8
_WORDS_PER_CONTAINER = _BYTES_PER_CONTAINER // 8
_ARRAY_MAX = 4096  # a container with more values is a bitset in the portable format
_NO_RUN_COOKIE = 12346
# = and IN walk a range bitmap's slices as machine words from this many rows, with at most
# this many rows per code on average (see BitSliceIndexBitmap._words_pay)
DENSE_MIN_ROWS = 1 << 16
WORDS_ROWS_PER_CODE = 256
# the word walk keeps only the non-zero words (with their indexes) once this many slices
# are applied and at most 1/_COMPACT_SHARE of the words hold a row: gathering a word from a
# slice costs ~16 times ANDing it in place
COMPACT_AFTER = 8
_COMPACT_SHARE = 16
# a word walk's answer is read bit by bit from its words while at most 1/2 of them hold a
# row (~7 ns a row), else built by CRoaring (~1.5 ms per 10M rows, however many)
_READ_SHARE = 2
_ONE = np.uint64(1)
EMPTY_PORTABLE = to_portable(BitMap())


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
        # slices as words (headers parsed once per opened index: a scan asks it per query);
        # one whose containers past the leading bitsets take more than one container's
        # words is kept only while ``kept()``
        self._words: dict[int, _SliceWords] = {}
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
            self._slices, self._complements = {}, {}
        try:
            yield self
        finally:
            if not outer:
                self._slices = self._complements = None
                self._words = {i: w for i, w in self._words.items() if len(w.tail) <= _WORDS_PER_CONTAINER}

    def lt(self, t: int) -> BitMap:
        """Rows whose value is ``< t``."""
        if t <= 0 or not self.ebm():
            return BitMap()
        if t > self.max_value:
            return BitMap(self.ebm())
        if self._words_pay():
            return self._bitmap_of_words(self._below_words(t))
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
        """Whether comparisons walk the slices as machine words (:meth:`_eq_words`, :meth:`_below_words`)."""
        return False

    def _containers(self) -> int:
        return -(-self.rows // _ROWS_PER_CONTAINER)

    def _slice_words(self, i: int) -> _SliceWords:
        """Slice ``i`` as machine words (see :class:`_SliceWords`)."""
        found = self._words.get(i)
        if found is not None:
            return found
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
        if len(tail) <= _WORDS_PER_CONTAINER or self._slices is not None:
            self._words[i] = words  # a view of the bytes and one container: kept for good
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
        bitmaps.extend(bitmap_of_sorted(r) for r in rows)  # each sorted; together interleaved
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
            state, where = _compacted(state, where, top - i + 1)
            if not len(state):
                return
            i -= 1
        if np.count_nonzero(state) * _READ_SHARE > len(scratch):
            if where is not None:  # many rows: CRoaring extracts them
                full = np.zeros(len(scratch), dtype=np.uint64)
                full[where] = state
                state = full
            found.append(bitmap_from_words(state))
            return
        found.append(positions_of_words(state, where))

    # -- < and >= over the slices as machine words ---------------------------------------
    def _bitmap_of_words(self, words: np.ndarray, complement: bool = False) -> BitMap:
        """The rows set in ``words`` (within the existence bitmap), or with ``complement`` the
        rows with a value that are not, as a ``BitMap`` (``words`` is consumed).

        An answer in at most half the words is read bit by bit (:func:`positions_of_words`);
        so is the rest of the existence bitmap when that is, and taken from it; otherwise
        CRoaring builds the answer from the words (:func:`bitmap_from_words`).
        """
        answer = np.bitwise_xor(self._ebm_words(), words, out=words) if complement else words
        if np.count_nonzero(answer) * _READ_SHARE <= len(answer):
            return bitmap_of_sorted(positions_of_words(answer))
        rest = np.bitwise_xor(self._ebm_words(), answer)  # the rows with a value left out
        if np.count_nonzero(rest) * _READ_SHARE <= len(rest):
            return self.ebm() - bitmap_of_sorted(positions_of_words(rest))
        return bitmap_from_words(answer)

    def _below_words(self, t: int) -> np.ndarray:
        """The rows whose value is ``< t``, as uint64 words over every row (``0 < t <=
        max_value``): :meth:`lt`'s walk of the slices with the candidate rows kept as words.

        ``state`` holds the rows equal to ``t`` on every bit seen so far; where ``t`` has a 1
        bit, those of them with a 0 there are below ``t`` and join ``below``.
        """
        state = self._ebm_words()
        below = np.zeros_like(state)
        scratch = np.empty_like(state)
        where = None  # the word indexes of ``state`` once only its non-zero words are kept
        top = self.count - 1
        high = t.bit_length() - 1  # t's highest 1 bit: a row with any slice above it set is >= t
        if high < top:  # one OR per slice above it, then one AND-NOT
            self._slice_words(top).and_(state, scratch)
            for i in range(top - 1, high, -1):
                self._slice_words(i).or_into(scratch)
            np.bitwise_xor(state, np.bitwise_and(state, scratch, out=scratch), out=state)
        for i in range(high, -1, -1):  # per slice, most significant first
            s = self._slice_words(i)
            if where is None:
                ones = s.and_(state, scratch)
            else:
                ones = np.bitwise_and(state, s.gather(where), out=scratch[: len(state)])
            np.bitwise_xor(state, ones, out=state)  # state & ~slice, as ones is within state
            if (t >> i) & 1:
                if where is None:
                    np.bitwise_or(below, state, out=below)
                else:
                    below[where] |= state
                state, scratch = ones, state
            if not t & ((1 << i) - 1):
                break  # no lower bit of t can add rows
            state, where = _compacted(state, where, top - i + 1)
            if not len(state):
                break
        return below

    def le(self, t: int) -> BitMap:
        return self.lt(t + 1)

    def ge(self, t: int) -> BitMap:
        if t <= 0:
            return BitMap(self.ebm())
        if self._words_pay() and t <= self.max_value and self.ebm():
            return self._bitmap_of_words(self._below_words(t), complement=True)
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


def _compacted(state: np.ndarray, where: np.ndarray | None, applied: int) -> tuple[np.ndarray, np.ndarray | None]:
    """A word walk's ``state`` (the words at ``where``, every word when None) with only its
    non-zero words kept, and their indexes, once that pays (``applied`` slices so far)."""
    if where is None:
        if applied < COMPACT_AFTER or np.count_nonzero(state) * _COMPACT_SHARE > len(state):
            return state, None
        live = np.flatnonzero(state != 0)
        return state[live], live
    live = np.flatnonzero(state != 0)
    return state[live], where[live]


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

    def or_into(self, words: np.ndarray) -> None:
        """``words |= slice`` for ``words`` covering every word."""
        cut = len(self.head)
        np.bitwise_or(words[:cut], self.head, out=words[:cut])
        if len(self.tail):
            np.bitwise_or(words[cut:], self.tail, out=words[cut:])

    def gather(self, where: np.ndarray) -> np.ndarray:
        """The words at ``where`` (sorted word indexes)."""
        if not len(self.tail):
            return np.take(self.head, where)
        cut = int(np.searchsorted(where, len(self.head)))
        return np.concatenate((self.head[where[:cut]], self.tail[where[cut:] - len(self.head)]))


class BitSliceIndexBitmap(SliceSet):
    """A range-bitmap's bit-slice section, read lazily from its bytes.

    The header (lengths and per-slice offsets) is validated when opened, so a truncated or
    inconsistent file fails here; bitmaps are deserialised only when a query needs them.
    """

    def __init__(self, r: ByteReader, rows: int, max_code: int):
        super().__init__()
        self._top_bitsets: bool | None = None  # the top slice's containers are bitsets (all but the last)
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
            version_error(h, version, "bit-slice index")
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
        if self._top_bitsets is None:  # once per opened index
            n = self._containers()
            start, length = self._span(self.count - 1)
            self._top_bitsets = leading_bitsets(self._buffer(), start, start + length, n)[1] >= n - 1
        return self._top_bitsets

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
        if not (layout.kinds[at[found]] == KIND_BITMAP).all():
            return None
        low = (rows & 0xFFFF).astype(np.int64)
        byte = np.where(found, layout.offsets[at] + (low >> 3), 0)
        return found & ((self._buf[byte] >> (low & 7).astype(np.uint8)) & 1).astype(bool)

    def _span(self, i: int) -> tuple[int, int]:
        return self.slices_start + self.offsets[i], self.lengths[i]

    def _load_slice(self, i: int) -> BitMap:
        return load_bitmap(self.data, self.source, *self._span(i), f"slice {i}")


def version_error(r: ByteReader, version: int, what: str):
    if version > VERSION_1:
        from ..container import UnsupportedVersionError

        raise UnsupportedVersionError(
            f"{what} version {version}; arrowidx reads version {VERSION_1}",
            source=r.source,
            offset=r.pos - 1,
        )
    raise r.fail(f"bad {what} version {version}", r.pos - 1)
