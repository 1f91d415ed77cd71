"""Property tests: bitmap and bloom-filter answers against pyarrow.compute on the raw data.

For every supported Arrow type (with NULLs, NaN, ±0.0, ±inf, empty and non-ASCII strings,
empty batches): the bitmap index answers equality, IN, IS NULL and their complements and
combinations exactly (floats: exactly the union of pyarrow's IEEE selection and Java's
``Double.compare`` selection), and no index ever drops a row pyarrow selects.
"""

from __future__ import annotations

import datetime
import decimal
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arrowidx import FileIndex, write_file_index

from .java_reference import java_float_key

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_INT_BOUNDS = {pa.int8(): 7, pa.int16(): 15, pa.int32(): 31, pa.int64(): 63}
_EPOCH = datetime.datetime(1970, 1, 1)


def _values(arrow_type: pa.DataType) -> st.SearchStrategy:
    """A small pool of values of ``arrow_type`` (small, so that values repeat)."""
    if arrow_type in _INT_BOUNDS:
        b = _INT_BOUNDS[arrow_type]
        return st.sampled_from([-(2**b), 2**b - 1, 0, -1, 1, 2, 3, 100]) | st.integers(-(2**b), 2**b - 1)
    if pa.types.is_boolean(arrow_type):
        return st.booleans()
    if pa.types.is_floating(arrow_type):
        specials = st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf, 1.5, -2.25])
        width = 32 if arrow_type == pa.float32() else 64
        return specials | st.floats(width=width, allow_nan=True)
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type):
        return st.sampled_from(["", "a", "b", "é", "日本", "\x00", "a" * 20]) | st.text(max_size=5)
    if pa.types.is_date32(arrow_type):
        return st.dates(datetime.date(1900, 1, 1), datetime.date(2200, 1, 1))
    if pa.types.is_timestamp(arrow_type):
        return st.integers(-(10**15), 10**15).map(lambda us: _EPOCH + datetime.timedelta(microseconds=us))
    if pa.types.is_time32(arrow_type) or pa.types.is_time64(arrow_type):
        return st.integers(0, 86_399_999_999).map(
            lambda us: (datetime.datetime.min + datetime.timedelta(microseconds=us)).time()
        )
    raise AssertionError(arrow_type)


BITMAP_TYPES = [
    pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.bool_(), pa.string(), pa.large_string(),
    pa.string_view(), pa.date32(), pa.timestamp("s"), pa.timestamp("ms"), pa.timestamp("us"),
    pa.timestamp("ms", tz="UTC"), pa.timestamp("us", tz="Europe/Paris"), pa.time32("s"),
    pa.time32("ms"), pa.float32(), pa.float64(),
]  # fmt: skip
LOSSY_TYPES = [pa.timestamp("ns"), pa.time64("us"), pa.time64("ns")]
BLOOM_TYPES = [t for t in BITMAP_TYPES if not pa.types.is_boolean(t)] + LOSSY_TYPES


@st.composite
def column_and_literals(draw, types):
    arrow_type = draw(st.sampled_from(types))
    pool = draw(st.lists(_values(arrow_type), min_size=1, max_size=6))
    rows = draw(st.lists(st.one_of(st.none(), st.sampled_from(pool)), max_size=60))
    array = pa.array(rows, type=arrow_type)
    if pa.types.is_timestamp(arrow_type) or pa.types.is_time64(arrow_type) or pa.types.is_time32(arrow_type):
        array = pa.array(rows, type=arrow_type) if rows else pa.array([], arrow_type)
    literals = draw(st.lists(st.sampled_from(pool) | _values(arrow_type), min_size=1, max_size=4))
    literal_type = pa.string() if pa.types.is_string_view(arrow_type) else arrow_type
    return array, [pa.scalar(v, type=literal_type) for v in literals]


def _isin(values: list[pa.Scalar]) -> pc.Expression:
    return pc.field("c").isin(pa.array([v.as_py() for v in values], type=values[0].type))


@st.composite
def predicates(draw, literals, exact_only: bool):
    """Expressions over column ``c`` built from the leaves the bitmap index answers."""
    c = pc.field("c")
    leaves = [
        st.sampled_from(literals).map(lambda v: c == v),
        st.sampled_from(literals).map(lambda v: c != v),
        st.lists(st.sampled_from(literals), min_size=1, max_size=3).map(_isin),
        st.just(c.is_null()),
        st.just(c.is_valid()),
    ]
    if not exact_only:
        leaves.append(st.sampled_from(literals).map(lambda v: c < v))
        leaves.append(st.sampled_from(literals).map(lambda v: c >= v))
    leaf = st.one_of(*leaves)
    return draw(
        st.recursive(
            leaf,
            lambda inner: st.one_of(
                inner.map(lambda e: ~e),
                st.tuples(inner, inner).map(lambda ab: ab[0] & ab[1]),
                st.tuples(inner, inner).map(lambda ab: ab[0] | ab[1]),
            ),
            max_leaves=4,
        )
    )


def _batches(table: pa.Table, cuts: list[int]) -> list[pa.RecordBatch]:
    """``table`` split at ``cuts``, including empty batches."""
    bounds = sorted({0, table.num_rows, *[min(x, table.num_rows) for x in cuts]})
    out = [table.slice(a, b - a).to_batches()[0] if b > a else pa.RecordBatch.from_pylist([], schema=table.schema) for a, b in zip(bounds, bounds[1:])]
    return out + [pa.RecordBatch.from_pylist([], schema=table.schema)]


def _selected(table: pa.Table, expr: pc.Expression) -> np.ndarray:
    """Rows where pyarrow evaluates ``expr`` to TRUE (what ``Table.filter`` would keep).

    pyarrow 26 has no ``is_in``/``filter`` kernels for string_view, so the truth for a
    string_view column is computed on the same strings as ``string``.
    """
    if pa.types.is_string_view(table.schema.field("c").type):
        table = table.cast(pa.schema([("c", pa.string())]))
    mask = ds.dataset(table).to_table(columns={"m": expr}).column("m")
    return pc.fill_null(mask, False).to_numpy(zero_copy_only=False).astype(bool)


def _java_float_selected(array: pa.Array, expr_leaf: tuple[str, list[pa.Scalar]]) -> np.ndarray:
    """Rows a single float leaf selects under Java's Double.compare (NaN == NaN, -0.0 != 0.0)."""
    op, lits = expr_leaf
    dtype = np.float32 if array.type == pa.float32() else np.float64
    values = java_float_key(array.fill_null(0).to_numpy(zero_copy_only=False).astype(dtype))
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    keys = java_float_key(np.array([v.as_py() for v in lits], dtype=dtype))
    hit = np.isin(values, keys) & valid
    return {"eq": hit, "ne": valid & ~hit, "in": hit, "not_in": ~hit}[op]


def _result_rows(result, n: int) -> np.ndarray:
    return result.to_mask(n).to_numpy(zero_copy_only=False)


@SETTINGS
@given(data=column_and_literals(BITMAP_TYPES), version=st.sampled_from(["1", "2"]),
       block=st.sampled_from(["64b", "200b", "16kb"]), cuts=st.lists(st.integers(0, 60), max_size=3),
       st_data=st.data())  # fmt: skip
def test_bitmap_is_exact(data, version, block, cuts, st_data):
    array, literals = data
    table = pa.table({"c": array})
    options = {
        "file-index.bitmap.columns": "c",
        "file-index.bitmap.c.version": version,
        "file-index.bitmap.c.index-block-size": block,
    }
    index = FileIndex(write_file_index(_batches(table, cuts), options), table.schema)
    expr = st_data.draw(predicates(literals, exact_only=True))
    truth = _selected(table, expr)
    ours = _result_rows(index.evaluate(expr), table.num_rows)
    assert not (truth & ~ours).any(), f"{expr} dropped rows {np.flatnonzero(truth & ~ours)}"
    if not pa.types.is_floating(array.type):
        assert (ours == truth).all(), f"{expr}: extra rows {np.flatnonzero(ours & ~truth)}"


@SETTINGS
@given(data=column_and_literals([pa.float32(), pa.float64()]), op=st.sampled_from(["eq", "ne", "in", "not_in"]))
def test_bitmap_float_leaf_is_union_of_ieee_and_java(data, op):
    array, literals = data
    table = pa.table({"c": array})
    index = FileIndex(write_file_index(table, {"file-index.bitmap.columns": "c"}), table.schema)
    c = pc.field("c")
    lits = literals if op in ("in", "not_in") else literals[:1]
    value_set = pa.array([v.as_py() for v in lits], type=array.type)
    expr = {"eq": c == lits[0], "ne": c != lits[0], "in": c.isin(value_set), "not_in": ~c.isin(value_set)}[op]
    ieee = _selected(table, expr)
    java = _java_float_selected(array, (op, lits))
    if op == "not_in":  # pyarrow keeps NULL rows for ~isin; Java's NOT IN does not
        java = java & array.is_valid().to_numpy(zero_copy_only=False)
    ours = _result_rows(index.evaluate(expr), table.num_rows)
    want = ieee | java
    if op == "not_in" and any(math.isnan(v.as_py()) for v in lits):
        # pyarrow's is_in matches NaN by bit pattern, index keys hold one canonical NaN (as
        # Java's): a complement of is_in with NaN in the set keeps every NaN row.
        want |= pc.fill_null(pc.is_nan(array), False).to_numpy(zero_copy_only=False)
    assert (ours == want).all(), f"{expr}: ours {np.flatnonzero(ours)} ieee {np.flatnonzero(ieee)} java {np.flatnonzero(java)}"


@SETTINGS
@given(data=column_and_literals(BLOOM_TYPES), cuts=st.lists(st.integers(0, 60), max_size=3), st_data=st.data())
def test_bloom_never_drops_a_row(data, cuts, st_data):
    array, literals = data
    table = pa.table({"c": array})
    options = {"file-index.bloom-filter.columns": "c", "file-index.bloom-filter.c.items": "50",
               "file-index.bloom-filter.c.fpp": "0.05"}  # fmt: skip
    index = FileIndex(write_file_index(_batches(table, cuts), options), table.schema)
    expr = st_data.draw(predicates(literals, exact_only=False))
    truth = _selected(table, expr)
    ours = _result_rows(index.evaluate(expr), table.num_rows)
    assert not (truth & ~ours).any(), f"{expr} dropped rows {np.flatnonzero(truth & ~ours)}"


@SETTINGS
@given(data=column_and_literals(LOSSY_TYPES + [pa.timestamp("ns", tz="UTC")]), st_data=st.data())
def test_bitmap_on_lossy_keys_never_drops_a_row(data, st_data):
    """ns timestamps are keyed on micros and us/ns TIME on millis: answers are supersets."""
    array, literals = data
    table = pa.table({"c": array})
    index = FileIndex(write_file_index(table, {"file-index.bitmap.columns": "c"}), table.schema)
    expr = st_data.draw(predicates(literals, exact_only=False))
    truth = _selected(table, expr)
    ours = _result_rows(index.evaluate(expr), table.num_rows)
    assert not (truth & ~ours).any(), f"{expr} dropped rows {np.flatnonzero(truth & ~ours)}"


def test_decimal_is_refused_by_bitmap_and_bloom():
    import pytest

    from arrowidx import UnsupportedTypeError

    table = pa.table({"d": pa.array([decimal.Decimal("1.50")], pa.decimal128(10, 2))})
    for kind in ("bitmap", "bloom-filter"):
        with pytest.raises(UnsupportedTypeError, match="DECIMAL"):
            write_file_index(table, {f"file-index.{kind}.columns": "d"})


@SETTINGS
@given(data=column_and_literals(BLOOM_TYPES), extra=st.integers(0, 40))
def test_bloom_scalar_and_vector_probes_agree(data, extra):
    """A few literals are probed in plain Python, many with numpy: the answers are the same."""
    from arrowidx.index.bloom import _SCALAR_KEYS, BloomFilterReader
    from arrowidx.types import literal_keys, paimon_type

    array, literals = data
    table = pa.table({"c": array})
    options = {"file-index.bloom-filter.columns": "c", "file-index.bloom-filter.c.items": "20"}
    index = FileIndex(write_file_index(table, options), table.schema)
    (reader,) = index.readers("c")
    assert isinstance(reader, BloomFilterReader)
    keys = [k for k in literal_keys(pa.array([v.as_py() for v in literals], type=array.type), paimon_type(array.type)) if k is not None]
    keys = keys * (1 + extra)
    few = reader.might_contain(keys[:_SCALAR_KEYS])
    many = reader.might_contain(keys + keys[:1] * _SCALAR_KEYS)[: len(few)]
    assert (few == many).all()


@SETTINGS
@given(data=column_and_literals(BLOOM_TYPES))
def test_bloom_needles_asked_again_answer_as_the_vector_probe(data):
    """A needle's key hash is remembered between the files a scan asks: asked twice, each
    key still gets the answer the numpy probe (no remembered hash) gives it."""
    from arrowidx.index.bloom import _SCALAR_KEYS, BloomFilterReader
    from arrowidx.types import literal_keys, paimon_type

    array, literals = data
    table = pa.table({"c": array})
    options = {"file-index.bloom-filter.columns": "c", "file-index.bloom-filter.c.items": "20"}
    (reader,) = FileIndex(write_file_index(table, options), table.schema).readers("c")
    assert isinstance(reader, BloomFilterReader)
    keys = [k for k in literal_keys(pa.array([v.as_py() for v in literals], type=array.type), paimon_type(array.type)) if k is not None]
    for key in keys + keys:
        vector = bool(reader.might_contain([key] * (_SCALAR_KEYS + 1))[0])
        assert reader.answer("eq", (key,)).t.remain == vector, key


def test_bloom_needle_minus_zero_is_not_answered_as_plus_zero():
    """-0.0 and 0.0 are equal as dictionary keys but hash apart in Java: a filter holding
    0.0 asked for 0.0 first must still answer -0.0 with -0.0's own probe."""
    from arrowidx.index.bloom import BloomFilterReader

    table = pa.table({"c": pa.array([0.0], pa.float64())})
    options = {"file-index.bloom-filter.columns": "c", "file-index.bloom-filter.c.items": "1000"}
    (reader,) = FileIndex(write_file_index(table, options), table.schema).readers("c")
    assert isinstance(reader, BloomFilterReader)
    assert reader.answer("eq", (0.0,)).t.remain
    assert not reader.might_contain([-0.0] * 20)[0]  # (the filter's bits: -0.0 is not a false positive)
    assert not reader.answer("eq", (-0.0,)).t.remain


@st.composite
def sorted_rows(draw):
    """Sorted unique uint32 rows: scattered singles and short runs, some across the
    65,536-row container boundaries, a few containers near the 4,096-row array limit."""
    parts = [np.array(draw(st.lists(st.integers(0, 5 << 16), max_size=300)), dtype=np.int64)]
    for _ in range(draw(st.integers(0, 4))):  # runs, often straddling a container boundary
        start = draw(st.sampled_from([0, 65_530, 65_535, 131_071, 200_000]) | st.integers(0, 5 << 16))
        parts.append(np.arange(start, start + draw(st.integers(1, 12))))
    if draw(st.booleans()):  # one nearly full array container (every other row: no runs)
        base = draw(st.integers(0, 4)) << 16
        parts.append(base + 2 * np.arange(draw(st.sampled_from([4095, 4096, 4097]))))
    return np.unique(np.concatenate(parts)).astype(np.uint32)


@SETTINGS
@given(rows=sorted_rows())
def test_portable_bytes_from_rows_equal_croarings(rows):
    """The numpy writer of portable bitmaps gives CRoaring's run-optimised bytes."""
    from arrowidx._roaring import bitmap_of, portable_of_sorted, to_portable

    assert portable_of_sorted(rows) == to_portable(bitmap_of(rows))


@st.composite
def container_mixes(draw):
    """Sorted rows over up to 6 containers, each empty, sparse (an array, up to the 4,096 rows
    where a container turns into a bitset), dense (a bitset), runs or full; and a container count ``n`` at, below or past the last container used."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    parts = []
    kinds = draw(st.lists(st.sampled_from(["empty", "array", "bitset", "runs", "full"]), min_size=1, max_size=6))
    for key, kind in enumerate(kinds):
        base = key << 16
        if kind == "array":
            size = draw(st.sampled_from([4096, 4097]) | st.integers(1, 4096))  # 4,097: a bitset
            parts.append(base + rng.choice(65_536, size, replace=False))
        elif kind == "bitset":
            parts.append(base + np.flatnonzero(rng.random(65_536) < draw(st.sampled_from([0.07, 0.5, 0.93]))))
        elif kind == "runs":
            starts = np.sort(rng.choice(np.arange(0, 65_536, 64), draw(st.integers(1, 40)), replace=False))
            parts.extend(base + start + np.arange(draw(st.integers(1, 64))) for start in starts)
        elif kind == "full":
            parts.append(base + np.arange(65_536))
    rows = np.unique(np.concatenate(parts + [np.zeros(0, np.int64)])).astype(np.uint32)
    n = max(1, len(kinds) + draw(st.integers(-2, 1)))
    return rows, n


@SETTINGS
@given(mix=container_mixes(), run_optimised=st.booleans())
def test_containers_laid_out_as_words_equal_the_rows(mix, run_optimised):
    """A portable bitmap's containers as packed words (leading bitsets read in place, the rest
    decoded, containers from ``n`` on left out) hold exactly the bitmap's rows below
    ``n * 65,536``, set with numpy from CRoaring's own positions."""
    from pyroaring import BitMap

    from arrowidx._roaring import decode_containers, leading_bitsets, portable_layout, to_portable

    rows, n = mix
    bitmap = BitMap(rows)
    raw = np.frombuffer(to_portable(bitmap) if run_optimised else bitmap.serialize(), np.uint8)
    expected = np.zeros(n << 16, dtype=bool)
    inside = rows[rows < n << 16]
    expected[inside] = True
    start, m, rest = leading_bitsets(raw, 0, len(raw), n)
    head = raw[start : start + 8192 * m]
    tail = decode_containers(raw, rest or portable_layout(raw, 0, len(raw)), m, n) if m < n else b""
    words = np.concatenate((head, np.frombuffer(bytes(tail), np.uint8)))
    assert (np.unpackbits(words, bitorder="little").astype(bool) == expected).all()
    layout = portable_layout(raw, 0, len(raw))  # m counts exactly the leading bitsets
    leading = (layout.keys[:n] == np.arange(min(n, len(layout.keys)))) & (layout.kinds[:n] == 1)
    assert m == (len(leading) if leading.all() else int(np.argmin(leading)))


@st.composite
def word_arrays(draw):
    """uint64 words over up to 4 containers: empty, one bit, sparse, dense or full words,
    bits 0 and 63 included; and, half the time, the word indexes they stand for."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(0, 4)) * 1024
    density = draw(st.sampled_from([0.0, 0.001, 0.02, 0.3, 0.97, 1.0]))
    bits = rng.random(n * 64) < density
    for position in draw(st.lists(st.integers(0, max(n * 64 - 1, 0)), max_size=5)) if n else []:
        bits[position] = True
    words = np.packbits(bits, bitorder="little").view(np.uint64) if n else np.zeros(0, np.uint64)
    where = None
    if n and draw(st.booleans()):
        where = np.sort(rng.choice(n * 3, n, replace=False))
    return words.copy(), where


@SETTINGS
@given(case=word_arrays())
def test_positions_of_words_are_the_set_bits(case):
    """The bits of a word walk's words, read pass by pass, are numpy's unpacked bits (at the
    words' own indexes when given), in order."""
    from arrowidx.index.rangebitmap.bitwords import positions_of_words

    words, where = case
    bits = np.unpackbits(words.view(np.uint8), bitorder="little").reshape(-1, 64)
    word, bit = np.nonzero(bits)
    expected = (word if where is None else where[word]).astype(np.int64) * 64 + bit
    got = positions_of_words(words.copy(), where)
    assert got.dtype == np.uint32 and np.array_equal(got, expected)


@SETTINGS
@given(case=word_arrays())
def test_bitmaps_of_words_hold_the_set_bits(case):
    """Both ways of turning words into a bitmap (bit by bit, or CRoaring's AND-NOT of two
    dense bitmaps) give the bitmap CRoaring builds from numpy's unpacked bits."""
    from pyroaring import BitMap

    from arrowidx._roaring import bitmap_of_sorted
    from arrowidx.index.rangebitmap.bitwords import bitmap_from_words, positions_of_words

    words, _ = case
    expected = BitMap(np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little")).tolist())
    assert bitmap_of_sorted(positions_of_words(words.copy())) == expected
    assert bitmap_from_words(words.copy()) == expected


@SETTINGS
@given(rows=sorted_rows())
def test_bitmap_of_sorted_rows_holds_them(rows):
    """Sorted rows handed to CRoaring as array containers (or, past 4,096 rows in one
    container, added in bulk) make the bitmap of exactly those rows."""
    from pyroaring import BitMap

    from arrowidx._roaring import bitmap_of_sorted

    got = bitmap_of_sorted(rows)
    assert got == BitMap(rows.tolist())
    assert np.array_equal(np.frombuffer(got.to_array(), np.uint32), rows)


SMALL_RANGE_TYPES = {  # type: its storage
    pa.int8(): pa.int8(), pa.int16(): pa.int16(), pa.int32(): pa.int32(), pa.int64(): pa.int64(),
    pa.date32(): pa.int32(), pa.timestamp("us"): pa.int64(), pa.time32("ms"): pa.int32(),
}  # fmt: skip


@SETTINGS
@given(arrow_type=st.sampled_from(list(SMALL_RANGE_TYPES)), low=st.integers(-100, 20),
       span=st.integers(1, 5000) | st.integers(4097, 200_000), rows=st.integers(0, 3000), with_nulls=st.booleans(),
       seed=st.integers(0, 2**32 - 1), version=st.sampled_from(["1", "2"]))  # fmt: skip
def test_bitmap_of_a_narrow_integer_column_equals_the_dictionary_encoded_build(
    arrow_type, low, span, rows, with_nulls, seed, version
):
    """Integers spanning at most 2**24 values (and not far more than the rows) skip Arrow's
    hash dictionary; the bytes must be those of the general (dictionary-encoded) build,
    which the golden tests check against Java."""
    import arrowidx.index.bitmap as bitmap

    if arrow_type == pa.time32("ms"):
        low = max(low, 0)  # a time of day
    if arrow_type == pa.int8():
        span = min(span, 127 - low)
    if arrow_type == pa.int16():
        span = min(span, 32767 - low)
    rng = np.random.default_rng(seed)
    values = low + rng.integers(0, span, rows)
    if rows:
        values[0], values[-1] = low, low + span - 1  # the whole span occurs
    nulls = rng.random(rows) < 0.1 if with_nulls else None
    column = pa.array(values, type=SMALL_RANGE_TYPES[arrow_type], mask=nulls).cast(arrow_type)
    table = pa.table({"c": column})
    options = {"file-index.bitmap.columns": "c", "file-index.bitmap.c.version": version}
    narrow = write_file_index(table, options)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(
            bitmap, "_integer_groups", lambda present, ptype: None
        )  # the dictionary-encoded build
        general = write_file_index(table, options)
    assert narrow == general


@SETTINGS
@given(
    span=st.integers(1, 5000) | st.integers(4097, 1 << 25),
    n=st.integers(0, 20_000),
    seed=st.integers(0, 2**32 - 1),
)
def test_rows_grouped_by_code_as_a_stable_sort_groups_them(span, n, seed):
    """The counting-sort passes of the bitmap writer order rows as a stable sort does."""
    from arrowidx.index.bitmap import group_rows

    rng = np.random.default_rng(seed)
    codes = rng.integers(0, span, n).astype(np.int32)
    if n:
        codes[0] = span - 1
    assert np.array_equal(group_rows(codes, span), np.argsort(codes, kind="stable"))


@st.composite
def many_bitmaps(draw):
    """``(rows, starts, counts, bitmaps)``: sorted unique uint32 rows of many bitmaps back to
    back in a shuffled order, as the bitmap writer holds them: mostly a few scattered rows,
    some short runs (across the 65,536-row container boundaries too), nearly full array
    containers (4095-4097 rows), and large bitmaps whose containers are bitsets (over 4096
    rows) or long runs, or runs on both sides of 4096."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    bitmaps = []
    for kind in draw(
        st.lists(
            st.sampled_from(
                ["few", "runs", "edge", "full", "bitset", "long-run", "sparse-wide", "top"]
            ),
            min_size=1,
            max_size=40,
        )
    ):
        if kind == "few":
            rows = rng.integers(0, 1 << 18, int(rng.integers(1, 12)))
        elif kind == "runs":  # short runs: arrays or run containers by a few bytes either way
            rows = np.concatenate(
                [
                    s + np.arange(int(rng.integers(1, 6)))
                    for s in rng.integers(0, 1 << 18, int(rng.integers(1, 40)))
                ]
            )
        elif kind == "edge":  # rows around container boundaries
            rows = np.concatenate([b * 65536 + np.arange(-3, 3) for b in rng.integers(1, 5, 3)])
        elif kind == "full":  # one array container at the 4096-row limit
            rows = (int(rng.integers(0, 4)) << 16) + 2 * np.arange(
                int(rng.choice([4095, 4096, 4097]))
            )
        elif kind == "bitset":
            rows = rng.integers(0, 3 << 16, int(rng.integers(4097, 30_000)))
        elif kind == "long-run":
            start = int(rng.integers(0, 1 << 18))
            rows = np.arange(start, start + int(rng.integers(2, 70_000)))
        elif kind == "sparse-wide":  # one row in each of many containers (over 4 of them: offsets)
            rows = np.arange(int(rng.integers(1, 12))) * 65536 + int(rng.integers(0, 65536))
        else:  # the top of the uint32 range
            rows = (
                np.uint64(2**32)
                - 1
                - rng.integers(0, 200_000, int(rng.integers(1, 5000))).astype(np.uint64)
            )
        bitmaps.append(np.unique(np.asarray(rows, dtype=np.int64)).astype(np.uint32))
    placed = rng.permutation(len(bitmaps))  # the bitmaps' rows lie in this order
    counts = np.array([len(b) for b in bitmaps], dtype=np.int64)
    at = np.cumsum(counts[placed]) - counts[placed]
    starts = np.empty(len(bitmaps), dtype=np.int64)
    starts[placed] = at
    return np.concatenate([bitmaps[i] for i in placed]), starts, counts, bitmaps


@SETTINGS
@given(case=many_bitmaps())
def test_portables_of_many_bitmaps_equal_croarings_one_by_one(case):
    """All of a column's bitmaps written by numpy together are, byte for byte, CRoaring's
    run-optimised portable bitmaps (Java's bytes) written one by one."""
    from arrowidx._roaring import bitmap_of, portables_of_groups, to_portable

    rows, starts, counts, bitmaps = case
    body, sizes = portables_of_groups(rows, starts, counts)
    expected = [to_portable(bitmap_of(b)) for b in bitmaps]
    assert sizes.tolist() == [len(e) for e in expected]
    assert body.tobytes() == b"".join(expected)


@settings(SETTINGS, max_examples=40)
@given(kind=st.sampled_from(["int", "bigint", "string", "double"]), n=st.integers(1, 40_000), distinct=st.integers(1, 3000),
       nulls=st.sampled_from([0.0, 0.001, 0.3]), sort=st.booleans(), version=st.sampled_from(["1", "2"]),
       seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_each_value_bitmap_in_the_index_is_croarings_bitmap_of_its_rows(
    kind, n, distinct, nulls, sort, version, seed
):
    """Every value of a bitmap index, read back from the bytes the vectorised writer laid
    out: a value in one row is that row (no bitmap), any other value's bytes are CRoaring's
    portable bitmap of the rows holding it, and the bitmaps (after the NULL bitmap) fill the
    body back to back, each once. (Their order is Java's: the golden tests check that.)"""
    from pyroaring import BitMap

    from arrowidx._bytes import ByteReader
    from arrowidx._roaring import to_portable
    from arrowidx.index.bitmap import BitmapReader, _sort_key
    from arrowidx.index.container import Container
    from arrowidx.types import paimon_type

    rng = np.random.default_rng(seed)
    codes = rng.integers(0, distinct, n)
    if sort:
        codes = np.sort(codes)  # long runs of rows: run and bitset containers
    mask = rng.random(n) < nulls
    key_of = {
        "int": lambda c: int(c) * 7919 - 100_000,
        "bigint": lambda c: int(c) << 33,
        "string": lambda c: f"v{c}".encode(),
        "double": lambda c: int(c) / 7.0,
    }[kind]
    arrow_type = {
        "int": pa.int32(),
        "bigint": pa.int64(),
        "string": pa.string(),
        "double": pa.float64(),
    }[kind]
    values = [key_of(c).decode() if kind == "string" else key_of(c) for c in codes.tolist()]
    column = pa.array(values, arrow_type, mask=mask)
    data = write_file_index(
        pa.table({"c": column}),
        {"file-index.bitmap.columns": "c", "file-index.bitmap.c.version": version},
    )
    entry = next(Container(memoryview(data)).all_entries())
    reader = BitmapReader(
        ByteReader(memoryview(data), "index", entry.start, entry.start + entry.length),
        paimon_type(arrow_type),
    )
    rows_of: dict = {}
    for row in np.flatnonzero(~mask).tolist():
        rows_of.setdefault(int(codes[row]), []).append(row)
    wanted = {key_of(c): c for c in rows_of}  # key -> code
    located = reader._find_all({_sort_key(k, reader.ptype) for k in wanted})
    assert len(located) == len(rows_of) == reader.cardinality
    spans = (
        [(reader.null_offset, reader.null_length)]
        if reader.has_null and reader.null_offset >= 0
        else []
    )
    for key, code in wanted.items():
        offset, length = located[_sort_key(key, reader.ptype)]
        rows = rows_of[code]
        if len(rows) == 1:
            assert offset == -1 - rows[0]
            continue
        at = reader.body_start + offset
        assert bytes(data[at : at + length]) == to_portable(BitMap(rows))
        spans.append((offset, length))
    spans.sort()
    assert all(a + la == b for (a, la), (b, _) in zip(spans, spans[1:]))
    assert sum(length for _, length in spans) == entry.start + entry.length - reader.body_start
    assert not spans or spans[0][0] == 0


@SETTINGS
@given(values=st.lists(st.binary(max_size=80), max_size=300), cut=st.integers(0, 10))
def test_xxh64_of_many_strings_equals_the_xxhash_package(values, cut):
    """The bloom filter's vectorised XXH64 equals the xxhash package, string by string
    (lengths around the 4-, 8- and 32-byte steps; a sliced array)."""
    import xxhash

    from arrowidx._hash import xxh64_binary

    array = pa.array(values, pa.binary()).slice(min(cut, len(values)))
    expected = [xxhash.xxh64_intdigest(v) for v in array.to_pylist()]
    assert xxh64_binary(array).view(np.uint64).tolist() == expected
