"""pyroaring helpers: bulk conversion from numpy and Java-compatible (de)serialisation.

Java's ``RoaringBitmap32.serialize`` always run-optimises first, so :func:`to_portable`
does too; the portable format is the one CRoaring, Java RoaringBitmap and Iceberg share.
"""

from __future__ import annotations

import array

import numpy as np
from pyroaring import BitMap

from ._bytes import ByteReader


def bitmap_of(positions: np.ndarray) -> BitMap:
    """A ``BitMap`` of uint32 positions, via ``array.array`` (pyroaring's fast bulk path)."""
    buf = array.array("I")
    buf.frombytes(memoryview(np.ascontiguousarray(positions, dtype=np.uint32)).cast("B"))
    return BitMap(buf)


def positions_of(bitmap: BitMap) -> np.ndarray:
    """The sorted positions of ``bitmap`` as a uint32 numpy array (no per-element Python)."""
    return np.frombuffer(bitmap.to_array(), dtype=np.uint32)


def _containers_of_sorted(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(high, bounds, cards)`` of sorted, unique, non-empty uint32 ``rows``: container ``j``
    holds ``rows[bounds[j]:bounds[j + 1]]``, ``cards[j]`` of them."""
    high = rows >> 16
    bounds = np.concatenate(([0], np.flatnonzero(high[1:] != high[:-1]) + 1, [len(rows)]))
    return high, bounds, np.diff(bounds)


def _array_portable(rows: np.ndarray, high: np.ndarray, bounds: np.ndarray, cards: np.ndarray) -> bytes:
    """Portable bytes holding every container of ``rows`` as an array (none over 4096 rows)."""
    m = len(cards)
    header = np.empty((m, 2), dtype="<u2")
    header[:, 0] = high[bounds[:-1]]
    header[:, 1] = cards - 1
    offsets = 8 + 8 * m + 2 * bounds[:-1]
    return b"".join(
        [
            np.array([_COOKIE_NO_RUN, m], dtype="<u4"),
            header,
            offsets.astype("<u4"),
            rows.astype("<u2"),  # the low 16 bits (the cast wraps)
        ]
    )


def bitmap_of_sorted(rows: np.ndarray) -> BitMap:
    """:func:`bitmap_of` for sorted, unique ``rows``.

    When no 65,536-row container holds over 4096 of them, CRoaring receives the containers
    as portable bytes written with numpy (~1 ns a row, against ~5 for its bulk add).
    """
    rows = np.asarray(rows, dtype=np.uint32)
    if len(rows) == 0:
        return BitMap()
    high, bounds, cards = _containers_of_sorted(rows)
    if int(cards.max()) > 4096:
        return bitmap_of(rows)
    return BitMap.deserialize(_array_portable(rows, high, bounds, cards))


def portable_of_sorted(rows: np.ndarray) -> bytes:
    """:func:`to_portable` of ``bitmap_of(rows)`` for sorted, unique uint32 ``rows``.

    When every 65,536-row container stays an array after run optimisation (at most 4096
    rows, and clearly more bytes as runs: ``2 * runs > rows + 2``, beyond both CRoaring's and
    Java's tie rules), the portable bytes are written straight from the rows with numpy;
    otherwise CRoaring builds and run-optimises the bitmap.
    """
    if len(rows) == 0:
        return to_portable(BitMap())
    high, bounds, cards = _containers_of_sorted(rows)
    if int(cards.max()) > 4096:
        return to_portable(bitmap_of(rows))
    # runs per container = rows - pairs of consecutive rows inside it (``after`` indexes the
    # second row of each pair; a pair straddling two containers is not inside either)
    after = np.flatnonzero(rows[1:] == rows[:-1] + 1) + 1
    pairs = np.searchsorted(after, bounds[1:], "left") - np.searchsorted(after, bounds[:-1], "right")
    runs = cards - pairs
    if bool((2 * runs <= cards + 2).any()):
        return to_portable(bitmap_of(rows))
    return _array_portable(rows, high, bounds, cards)


def put_at(out: np.ndarray, at: np.ndarray, values: np.ndarray, dtype: str) -> None:
    """Write ``values`` as ``dtype`` (e.g. ``"<u2"``, ``">i4"``) at the byte positions ``at``
    of the uint8 array ``out`` (unaligned: one byte plane at a time)."""
    width = np.dtype(dtype).itemsize
    raw = np.ascontiguousarray(values).astype(dtype).view(np.uint8).reshape(-1, width)
    at = np.asarray(at, dtype=np.intp)
    for j in range(width):
        out[at + j if j else at] = raw[:, j]


def portables_of_groups(
    rows: np.ndarray, starts: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(body, sizes)``: the portable bytes (:func:`to_portable`, byte for byte) of many
    bitmaps at once, back to back in the order given, and each one's size in bytes.

    Bitmap ``i`` holds ``rows[starts[i] : starts[i] + counts[i]]`` (sorted, unique uint32,
    ``counts[i] >= 1``). The bitmaps of at most 4096 rows, whose containers are all arrays
    or runs, are written together with numpy: each container as an array or, where
    ``runOptimize`` (Java's and CRoaring's alike) makes it one, ``2 + 4 * runs < 2 * rows``,
    a run container. A bitmap of more rows may need a bitset container: each of those (there
    are at most ``len(rows) / 4097``) goes through :func:`portable_of_sorted`.
    """
    starts = np.asarray(starts, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    sizes = np.zeros(len(starts), dtype=np.int64)
    large = {}
    for i in np.flatnonzero(counts > 4096).tolist():  # per bitmap of over 4096 rows
        large[i] = portable_of_sorted(
            np.asarray(rows[starts[i] : starts[i] + counts[i]], dtype=np.uint32)
        )
        sizes[i] = len(large[i])
    small = np.flatnonzero(counts <= 4096)
    if len(small):
        body, sizes[small] = _small_portables(rows, starts[small], counts[small])
    at = np.cumsum(sizes) - sizes
    out = np.empty(int(sizes.sum()), dtype=np.uint8)
    if len(small):
        bounds = np.concatenate(([0], np.cumsum(sizes[small])))
        if len(large):
            dest = np.repeat(at[small] - bounds[:-1], sizes[small]) + np.arange(len(body))
            out[dest] = body
        else:
            out[:] = body
    for i, data in large.items():
        out[at[i] : at[i] + sizes[i]] = np.frombuffer(data, dtype=np.uint8)
    return out, sizes


def _small_portables(
    rows: np.ndarray, starts: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`portables_of_groups` for bitmaps of at most 4096 rows (no bitset container)."""
    g = len(starts)
    ends = np.cumsum(counts)
    first = ends - counts  # where each bitmap's rows start in ``r``
    total = int(ends[-1])
    if bool(np.array_equal(starts, first)):
        r = np.asarray(rows[:total], dtype=np.uint32)
    else:  # the bitmaps' rows back to back, in the order asked for
        r = np.asarray(rows, dtype=np.uint32)[np.arange(total) + np.repeat(starts - first, counts)]
    high = r >> 16
    new = np.empty(total, dtype=bool)  # a container starts at this row
    new[0] = True
    np.not_equal(high[1:], high[:-1], out=new[1:])
    new[first] = True
    c_first = np.flatnonzero(new)
    c_card = np.diff(np.append(c_first, total))
    c_group = np.searchsorted(first, c_first, "right") - 1
    run_start = new.copy()  # a run of consecutive rows starts at this row
    run_start[1:] |= r[1:] != r[:-1] + 1
    run_first = np.flatnonzero(run_start)
    c_runs = np.diff(np.append(np.searchsorted(run_first, c_first), len(run_first)))
    n = np.bincount(c_group, minlength=g)  # containers per bitmap
    c_run = 2 + 4 * c_runs < 2 * c_card
    has_run = np.bincount(c_group, weights=c_run, minlength=g) > 0
    payload = np.where(c_run, 2 + 4 * c_runs, 2 * c_card)
    with_offsets = ~has_run | (n >= 4)
    keys_at = np.where(has_run, 4 + (n + 7) // 8, 8)  # where the (key, cardinality - 1) pairs start
    header = keys_at + np.where(with_offsets, 8 * n, 4 * n)
    c_before = np.cumsum(payload) - payload
    group_c0 = np.cumsum(n) - n  # each bitmap's first container
    sizes = header + np.add.reduceat(payload, group_c0)
    at = np.cumsum(sizes) - sizes
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    plain, runny = np.flatnonzero(~has_run), np.flatnonzero(has_run)
    put_at(out, at[plain], np.full(len(plain), _COOKIE_NO_RUN), "<u4")
    put_at(out, at[plain] + 4, n[plain], "<u4")
    put_at(out, at[runny], _COOKIE_RUN | ((n[runny] - 1) << 16), "<u4")
    c_index = np.arange(len(c_first)) - group_c0[c_group]  # the container's index in its bitmap
    c_at = at[c_group] + keys_at[c_group] + 4 * c_index
    put_at(out, c_at, high[c_first], "<u2")
    put_at(out, c_at + 2, c_card - 1, "<u2")
    c_data = header[c_group] + c_before - c_before[group_c0][c_group]  # from the bitmap's start
    listed = with_offsets[c_group]
    put_at(out, (c_at + 4 * n[c_group])[listed], c_data[listed], "<u4")
    c_data += at[c_group]  # from here on: positions in ``out``
    runs_c = np.flatnonzero(c_run)
    if len(runs_c):  # run flags: bit ``index`` of the bitmap's flag bytes (distinct bits add as OR)
        np.add.at(
            out,
            at[c_group[runs_c]] + 4 + c_index[runs_c] // 8,
            (1 << (c_index[runs_c] % 8)).astype(np.uint8),
        )
    # array containers: the low 16 bits of their rows
    row_at = np.repeat(c_data - 2 * c_first, c_card) + 2 * np.arange(total)
    if not len(runs_c):
        put_at(out, row_at, r, "<u2")
    else:  # run containers: the run count, then (start, length - 1) per run
        container = np.cumsum(new) - 1
        in_array = ~c_run[container]
        put_at(out, row_at[in_array], r[in_array], "<u2")
        put_at(out, c_data[runs_c], c_runs[runs_c], "<u2")
        length = np.diff(np.append(run_first, total))
        keep = c_run[container[run_first]]
        rs, length = run_first[keep], length[keep]
        rc = container[rs]
        k = np.arange(len(rs)) - np.searchsorted(rs, c_first[rc])
        put_at(out, c_data[rc] + 2 + 4 * k, r[rs], "<u2")
        put_at(out, c_data[rc] + 4 + 4 * k, length - 1, "<u2")
    return out, sizes


def to_portable(bitmap: BitMap, *, copy: bool = True) -> bytes:
    """Portable serialisation after run optimisation, byte-identical to Java's.

    ``copy=False``: run-optimise the caller's bitmap itself (a writer's, about to be dropped)
    instead of a copy of it."""
    if copy:
        bitmap = BitMap(bitmap)  # never mutate the caller's bitmap
    bitmap.run_optimize()
    return bitmap.serialize()


def read_portable(reader: ByteReader, length: int, what: str) -> BitMap:
    """Deserialise a portable bitmap occupying exactly ``length`` bytes of ``reader``."""
    at = reader.pos
    raw = reader.raw(length, what)
    try:
        bitmap = BitMap.deserialize(bytes(raw))
    except (ValueError, IndexError) as e:
        raise reader.fail(f"{what} is not a valid portable Roaring bitmap ({e})", at) from None
    return bitmap


def read_portable_unsized(reader: ByteReader, what: str) -> BitMap:
    """Deserialise a portable bitmap whose length is only known from its own header."""
    at = reader.pos
    length = portable_size(reader.data, at, reader.end)
    if length is None:
        raise reader.fail(f"{what} has a bad portable Roaring header", at)
    return read_portable(reader, length, what)


_COOKIE_NO_RUN = 12346
_COOKIE_RUN = 12347
KIND_ARRAY, KIND_BITMAP, KIND_RUN = 0, 1, 2


def portable_size(data, start: int, end: int) -> int | None:
    """Size in bytes of the portable bitmap at ``data[start:end]``, or None if malformed."""
    try:
        return portable_layout(np.frombuffer(data, dtype=np.uint8), start, end).size
    except MalformedBitmap:
        return None


class MalformedBitmap(Exception):
    """A portable Roaring bitmap that does not parse; ``offset`` is where it went wrong."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset

    def __reduce__(self):  # (pickle and copy: both arguments, not only the message)
        return type(self), (self.args[0], self.offset)


class PortableLayout:
    """Where each container of one portable Roaring32 bitmap lies in a buffer."""

    __slots__ = ("size", "keys", "kinds", "cards", "offsets")

    def __init__(self, size, keys, kinds, cards, offsets):
        self.size = size
        self.keys = keys
        self.kinds = kinds
        self.cards = cards
        self.offsets = offsets


def portable_layout(buf: np.ndarray, pos: int, end: int) -> PortableLayout:
    """Parse the portable Roaring32 header at ``buf[pos:end]`` (a uint8 array).

    Sizes are computed with numpy; only run containers (whose size sits in the data) are
    visited one by one. Never allocates more than the header can justify: a container count
    above 65536 or past ``end`` is rejected before any array is built.
    """
    if end - pos < 4:
        raise MalformedBitmap("portable Roaring bitmap needs a 4-byte cookie", pos)
    cookie = int(buf[pos : pos + 4].view("<u4")[0])
    p = pos + 4
    if cookie & 0xFFFF == _COOKIE_RUN:
        n = (cookie >> 16) + 1
        nflags = (n + 7) // 8
        if end - p < nflags:
            raise MalformedBitmap("portable Roaring run flags are truncated", p)
        is_run = np.unpackbits(buf[p : p + nflags], bitorder="little")[:n].astype(bool)
        p += nflags
        has_offsets = n >= 4
    elif cookie == _COOKIE_NO_RUN:
        if end - p < 4:
            raise MalformedBitmap("portable Roaring container count is truncated", p)
        n = int(buf[p : p + 4].view("<u4")[0])
        if n > 65536:
            raise MalformedBitmap(f"portable Roaring container count {n} exceeds 65536", p)
        p += 4
        is_run = np.zeros(n, dtype=bool)
        has_offsets = True
    else:
        raise MalformedBitmap(f"bad portable Roaring cookie 0x{cookie:08x}", pos)
    if end - p < 4 * n:
        raise MalformedBitmap(f"portable Roaring header of {n} containers is truncated", p)
    header = buf[p : p + 4 * n].view("<u2").reshape(n, 2)
    keys = header[:, 0].astype(np.int64)
    cards = header[:, 1].astype(np.int64) + 1
    p += 4 * n
    if has_offsets:
        if end - p < 4 * n:
            raise MalformedBitmap("portable Roaring offset table is truncated", p)
        p += 4 * n
    if n > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        raise MalformedBitmap("portable Roaring container keys are not strictly increasing", pos)
    kinds = np.where(is_run, KIND_RUN, np.where(cards > 4096, KIND_BITMAP, KIND_ARRAY))
    sizes = np.where(kinds == KIND_BITMAP, 8192, np.where(kinds == KIND_ARRAY, 2 * cards, 0))
    run_index = np.flatnonzero(is_run)
    if run_index.size:
        before = np.concatenate(([0], np.cumsum(sizes)))
        extra = 0
        for i in run_index.tolist():  # one step per run container, not per position
            at = p + int(before[i]) + extra
            if end - at < 2:
                raise MalformedBitmap("portable Roaring run container is truncated", at)
            nruns = int(buf[at : at + 2].view("<u2")[0])
            size = 2 + 4 * nruns
            if end - at < size:
                raise MalformedBitmap("portable Roaring run container is truncated", at)
            sizes[i] = size
            extra += size
    offsets = p + np.concatenate(([0], np.cumsum(sizes)[:-1])) if n else np.zeros(0, np.int64)
    total = p + int(sizes.sum()) - pos
    if pos + total > end:
        raise MalformedBitmap(
            f"portable Roaring containers need {total} bytes but only {end - pos} remain", pos
        )
    return PortableLayout(total, keys, kinds, cards, offsets.astype(np.int64))


def leading_bitsets(buf: np.ndarray, pos: int, end: int, n: int) -> tuple[int, int, PortableLayout | None]:
    """``(start, m, rest)``: the first ``m`` (at most ``n``) containers of the portable bitmap
    at ``buf[pos:end]`` are bitsets keyed ``0 .. m - 1``, so their bits are ``8192 * m``
    bytes back to back from ``start``; ``rest`` is the layout of the containers after them
    when that is read off the header too (none, or one last container), else None.

    Reads only the header: ``m`` is 0 and ``rest`` None when it cannot be read this way
    (:func:`portable_layout` then parses the bitmap, and says what is wrong).
    """
    if n <= 0 or end - pos < 8:
        return pos, 0, None
    cookie = int(buf[pos : pos + 4].view("<u4")[0])
    if cookie == _COOKIE_NO_RUN:
        count = int(buf[pos + 4 : pos + 8].view("<u4")[0])
        p, has_offsets, runs = pos + 8, True, None
    elif cookie & 0xFFFF == _COOKIE_RUN:
        count = (cookie >> 16) + 1
        flags = (count + 7) // 8
        if end - pos - 4 < flags:
            return pos, 0, None
        runs = np.unpackbits(buf[pos + 4 : pos + 4 + flags], bitorder="little")[:count]
        p, has_offsets = pos + 4 + flags, count >= 4
    else:
        return pos, 0, None
    if count > 65536 or end - p < 4 * count:
        return pos, 0, None
    first = min(count, n)
    header = buf[p : p + 4 * count].view("<u2").reshape(count, 2)
    dense = (header[:first, 0] == np.arange(first)) & (header[:first, 1] >= 4096)  # > 4096 rows
    if runs is not None:
        dense &= runs[:first] == 0
    m = first if dense.all() else int(np.argmin(dense))
    start = p + (8 if has_offsets else 4) * count
    if end - start < 8192 * m:
        return pos, 0, None
    rest = None
    if m == count:
        rest = PortableLayout(0, *(np.zeros(0, np.int64),) * 4)
    elif m == count - 1:  # one last container that is not a bitset: where it lies is known
        at = start + 8192 * m
        key, card = int(header[m, 0]), int(header[m, 1]) + 1
        if runs is not None and runs[m]:
            kind = KIND_RUN
            size = 2 + 4 * int(buf[at : at + 2].view("<u2")[0]) if end - at >= 2 else end - at + 1
        else:
            kind = KIND_BITMAP if card > 4096 else KIND_ARRAY
            size = 8192 if kind == KIND_BITMAP else 2 * card
        if (m == 0 or key > m - 1) and at + size <= end:
            rest = PortableLayout(size, *(np.array([v], np.int64) for v in (key, kind, card, at)))
    return start, m, rest


def decode_containers(buf: np.ndarray, layout: PortableLayout, first: int, n: int) -> np.ndarray:
    """Containers ``first .. n - 1`` of a portable bitmap as ``8192 * (n - first)`` packed
    bytes (LSB first); the others are left out.

    Neighbouring bitset containers are copied together (their payloads lie back to back),
    array containers set their bits with one reduce, run containers are laid out one by
    one. Raises :class:`MalformedBitmap` for arrays and runs that CRoaring would reject.
    """
    out = np.zeros((n - first) * 8192, dtype=np.uint8)
    keys, kinds, offsets, cards = layout.keys, layout.kinds, layout.offsets, layout.cards
    inside = (keys >= first) & (keys < n)
    rel = keys - first
    dense = np.flatnonzero(inside & (kinds == KIND_BITMAP))
    if dense.size:
        breaks = np.flatnonzero((np.diff(keys[dense]) != 1) | (np.diff(offsets[dense]) != 8192)) + 1
        for group in np.split(dense, breaks):  # per group of neighbouring bitsets
            k, at, m = int(rel[group[0]]), int(offsets[group[0]]), len(group)
            out[k * 8192 : (k + m) * 8192] = buf[at : at + m * 8192]
    for i in np.flatnonzero(inside & (kinds == KIND_ARRAY)).tolist():  # per array container
        at = int(offsets[i])
        low = buf[at : at + 2 * int(cards[i])].view("<u2").astype(np.int64)
        if not (low[1:] > low[:-1]).all():
            raise MalformedBitmap("array container values are not strictly increasing", at)
        _set_sorted_bits(out, low + (int(rel[i]) << 16))
    for i in np.flatnonzero(inside & (kinds == KIND_RUN)).tolist():  # per run container
        at = int(offsets[i])
        nruns = int(buf[at : at + 2].view("<u2")[0])
        pairs = buf[at + 2 : at + 2 + 4 * nruns].view("<u2").reshape(nruns, 2).astype(np.int64)
        lo, hi = pairs[:, 0], pairs[:, 0] + pairs[:, 1] + 1
        if (hi > 1 << 16).any() or not (lo[1:] >= hi[:-1]).all():
            raise MalformedBitmap("run container runs are out of order, overlap or pass 65,535", at)
        # the container's 65,536 bits as alternating gaps and runs, then packed
        gaps = lo - np.concatenate(([0], hi[:-1]))
        lengths = np.stack((gaps, hi - lo), axis=1).reshape(-1)
        bits = np.repeat(np.tile(np.array([False, True]), nruns), lengths)
        k = int(rel[i])
        out[k * 8192 : k * 8192 + (len(bits) + 7) // 8] = np.packbits(bits, bitorder="little")
    return out


def _set_sorted_bits(out: np.ndarray, bits: np.ndarray) -> None:
    """Set the (unique) bit indices ``bits`` in the LSB-first packed array ``out``, whose
    bits at those indices are still clear.

    One ``np.add.at`` (numpy's fast path, ~2 ns a bit): for distinct bits of a clear byte
    the sum is the OR (``np.bitwise_or.at`` and ``reduceat`` are several times slower).
    """
    if bits.size == 0:
        return
    byte_index = (bits >> 3).astype(np.intp)
    values = np.left_shift(np.uint8(1), (bits & 7).astype(np.uint8))
    np.add.at(out, byte_index, values)


def _set_bit_ranges(out: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
    """Set bits ``[lo[i], hi[i])`` (sorted, non-overlapping ranges) in packed ``out``."""
    if lo.size == 0:
        return
    first_full = (lo + 7) >> 3
    last_full = hi >> 3  # exclusive
    spans = first_full < last_full
    if spans.any():
        n = out.size
        delta = np.bincount(first_full[spans], minlength=n + 1)[: n + 1].astype(np.int64)
        delta -= np.bincount(last_full[spans], minlength=n + 1)[: n + 1]
        out[np.cumsum(delta[:n]) > 0] = 0xFF
    # Partial bytes at either end of every range (or the single byte a short range lies in).
    inside = first_full > last_full  # whole range within one byte, not touching its edges
    head_end = np.where(inside, hi, np.minimum(hi, first_full << 3))
    piece_lo = np.concatenate((lo, np.maximum(lo, last_full << 3)[~inside]))
    piece_hi = np.concatenate((head_end, hi[~inside]))
    keep = piece_hi > piece_lo
    piece_lo, piece_hi = piece_lo[keep], piece_hi[keep]
    if piece_lo.size:
        width = piece_hi - piece_lo
        masks = (((np.int64(1) << width) - 1) << (piece_lo & 7)).astype(np.uint8)
        np.bitwise_or.at(out, piece_lo >> 3, masks)


def decode_into(
    buf: np.ndarray, layout: PortableLayout, high: int, first_container: int, out: np.ndarray
) -> None:
    """OR the containers of one portable bitmap into ``out`` (packed, LSB first).

    ``high`` is the bucket key (upper 32 bits) of a 64-bit bitmap, 0 for 32-bit ones; bit 0
    of ``out`` is position ``first_container << 16``. Containers outside ``out`` must have
    been cut away by the caller (intersection with the wanted range).
    """
    rel = (high << 16) + layout.keys - first_container  # container index within ``out``
    kinds, offsets, cards = layout.kinds, layout.offsets, layout.cards
    for i in np.flatnonzero(kinds == KIND_BITMAP).tolist():
        dst = int(rel[i]) * 8192
        src = int(offsets[i])
        out[dst : dst + 8192] |= buf[src : src + 8192]
    array_idx = np.flatnonzero(kinds == KIND_ARRAY)
    if array_idx.size:
        array_cards = cards[array_idx]
        first, total = int(offsets[array_idx[0]]), int(array_cards.sum())
        if int(offsets[array_idx[-1]]) + 2 * int(array_cards[-1]) - first == 2 * total:
            # The array containers lie back to back (no dense or run container between them).
            low = buf[first : first + 2 * total].view("<u2").astype(np.int64)
            low += np.repeat(rel[array_idx] << 16, array_cards)
        else:
            parts = [
                buf[int(offsets[i]) : int(offsets[i]) + 2 * int(cards[i])].view("<u2").astype(np.int64)
                + (int(rel[i]) << 16)
                for i in array_idx.tolist()
            ]
            low = np.concatenate(parts)
        _set_sorted_bits(out, low)
    run_idx = np.flatnonzero(kinds == KIND_RUN)
    if run_idx.size:
        los, his = [], []
        for i in run_idx.tolist():
            at = int(offsets[i])
            nruns = int(buf[at : at + 2].view("<u2")[0])
            pairs = buf[at + 2 : at + 2 + 4 * nruns].view("<u2").reshape(nruns, 2).astype(np.int64)
            start = pairs[:, 0] + (int(rel[i]) << 16)
            los.append(start)
            his.append(start + pairs[:, 1] + 1)
        _set_bit_ranges(out, np.concatenate(los), np.concatenate(his))


# --------------------------------------------------------------------------------------
# Position input handling
# --------------------------------------------------------------------------------------


def packed_window(bitmap, start: int, length: int, bitmap64: bool = False) -> np.ndarray:
    """Bits ``[start, start + length)`` of ``bitmap`` packed LSB first (Arrow's layout).

    ``ceil(length / 8)`` bytes, bits past ``length`` zero. The bitmap is serialised and its
    containers are decoded straight into the packed bytes (dense containers are copied,
    array containers OR-ed in with one reduce, run containers become byte ranges): the
    work is per 65,536-row container, never per row. Positions outside the window must
    already have been removed by the caller.
    """
    nbytes = (length + 7) // 8
    if length <= 0:
        return np.zeros(0, np.uint8)
    if not bitmap:
        return np.zeros(nbytes, np.uint8)
    if not bitmap64 and start == 0:
        stats = bitmap.get_statistics()
        if stats["n_bitset_containers"] == 0 and stats["n_run_containers"] == 0:
            # Sparse: every container is an array of positions; set their bits directly.
            out = np.zeros(nbytes, np.uint8)
            _set_sorted_bits(out, np.frombuffer(bitmap.to_array(), dtype=np.uint32))
            if length & 7:
                out[-1] &= (1 << (length & 7)) - 1
            return out
    first = start >> 16
    ncontainers = ((start + length - 1) >> 16) - first + 1
    out = np.zeros(ncontainers * 8192 + 1, np.uint8)
    raw = np.frombuffer(bitmap.serialize(), dtype=np.uint8)
    if bitmap64:
        count = int(raw[:8].view("<u8")[0])
        p = 8
        for _ in range(count):  # one step per 2**32 positions
            high = int(raw[p : p + 4].view("<u4")[0])
            layout = portable_layout(raw, p + 4, raw.size)
            decode_into(raw, layout, high, first, out)
            p += 4 + layout.size
    else:
        decode_into(raw, portable_layout(raw, 0, raw.size), 0, first, out)
    shift = start - (first << 16)
    byte0, bit0 = shift >> 3, shift & 7
    if bit0:
        window = out[byte0 : byte0 + nbytes + 1]
        bits = (window[:-1] >> bit0) | (window[1:] << (8 - bit0))
    else:
        bits = out[byte0 : byte0 + nbytes].copy()
    if length & 7:
        bits[-1] &= (1 << (length & 7)) - 1
    return bits
