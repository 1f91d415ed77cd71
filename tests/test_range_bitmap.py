"""Range-bitmap: property tests against pyarrow.compute, TopN against sort, and bad input.

Every expected answer is computed here from the raw data with pyarrow/numpy, never from
arrowidx. Exactness rule: a range-bitmap answer equals pyarrow's selection; for floats it
equals the union of pyarrow's IEEE selection and Java's ``Double.compare`` selection (each
leaf; AND/OR/NOT combine those). Keys that only bound a value (ns timestamps, sub-ms TIME)
need only keep every row pyarrow selects.
"""

from __future__ import annotations

import decimal
import math
import struct
import tracemalloc
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from arrowidx import (
    ArrowIdxError,
    CorruptIndexError,
    FileIndex,
    OptionError,
    UnsupportedTypeError,
    write_file_index,
)
from arrowidx._roaring import positions_of
from arrowidx.index.container import UnsupportedVersionError, write_container
from arrowidx.index.rangebitmap import bitslice
from arrowidx.predicate import bind, is_exact

from .differential_support import fuzz_settings
from .golden_support import golden_cases, index_bytes, load_table, pyarrow_rows
from .java_reference import java_float_key
from .test_golden_topn import goodness, is_valid_top, reference

SETTINGS = settings(max_examples=35, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CHUNK_SIZES = ["0b", "5b", "16b", "64b", "16kb"]

# ---------------------------------------------------------------------------------------
# column specs: an Arrow type and a strategy of raw values (ints, floats, str, bool)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    arrow_type: pa.DataType
    raw: st.SearchStrategy
    lossy: bool = False

    @property
    def id(self) -> str:
        return str(self.arrow_type).replace(" ", "")

    @property
    def is_float(self) -> bool:
        return pa.types.is_floating(self.arrow_type)

    def array(self, raws: list) -> pa.Array:
        t = self.arrow_type
        if pa.types.is_decimal(t):
            return pa.array(
                [None if r is None else decimal.Decimal(r).scaleb(-t.scale) for r in raws], t
            )
        if pa.types.is_temporal(t):
            storage = pa.int32() if t.bit_width == 32 else pa.int64()
            return pa.array(raws, storage).view(t)
        if pa.types.is_string_view(t):
            return pa.array(raws, pa.string()).cast(t)
        return pa.array(raws, t)

    def scalar(self, raw) -> pa.Scalar:
        s = self.array([raw])[0]
        return s.cast(pa.string()) if pa.types.is_string_view(self.arrow_type) else s

    def java(self, arr: pa.Array) -> pa.Array:
        """Floats as int64 ordered like ``Double.compare`` (NaN largest, -0.0 < 0.0)."""
        valid = pc.is_valid(arr).to_numpy(zero_copy_only=False)
        filled = arr.fill_null(0).to_numpy(zero_copy_only=False)
        return pa.array(java_float_key(filled), mask=~valid)


def _ints(bits: int) -> st.SearchStrategy:
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return st.sampled_from([lo, hi, 0, -1, 1, 2, 100, lo + 1, hi - 1]) | st.integers(lo, hi)


def _floats(width: int) -> st.SearchStrategy:
    fmax = 3.4028234663852886e38 if width == 32 else 1.7976931348623157e308
    specials = [
        0.0,
        -0.0,
        math.nan,
        math.inf,
        -math.inf,
        1.5,
        -2.25,
        fmax,
        -fmax,
        1e-45 if width == 32 else 5e-324,
    ]
    return st.sampled_from(specials) | st.floats(width=width, allow_nan=True)


_TEXT = st.sampled_from(
    ["", "a", "b", "ab", "é", "日本", "\x00", "a" * 30, "\U0001f600"]
) | st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
_MS_DAY = 86_400_000

RANGE_SPECS = [
    Spec(pa.int8(), _ints(8)),
    Spec(pa.int16(), _ints(16)),
    Spec(pa.int32(), _ints(32)),
    Spec(pa.int64(), _ints(64)),
    Spec(pa.bool_(), st.booleans()),
    Spec(pa.string(), _TEXT),
    Spec(pa.large_string(), _TEXT),
    Spec(pa.string_view(), _TEXT),
    Spec(pa.date32(), st.integers(-800_000, 800_000)),
    Spec(pa.time32("s"), st.integers(0, 86_399)),
    Spec(pa.time32("ms"), st.integers(0, _MS_DAY - 1)),
    Spec(pa.timestamp("s"), st.integers(-(10**11), 10**11)),
    Spec(pa.timestamp("ms"), st.integers(-(10**14), 10**14)),
    Spec(pa.timestamp("us"), _ints(64) | st.integers(-(10**17), 10**17)),
    Spec(pa.timestamp("ms", tz="UTC"), st.integers(-(10**14), 10**14)),
    Spec(pa.timestamp("us", tz="Asia/Tokyo"), st.integers(-(10**17), 10**17)),
    Spec(pa.float32(), _floats(32)),
    Spec(pa.float64(), _floats(64)),
    Spec(pa.decimal128(10, 2), st.integers(-(10**10) + 1, 10**10 - 1)),
    Spec(
        pa.decimal128(18, 4),
        st.sampled_from([10**18 - 1, -(10**18) + 1, 0]) | st.integers(-(10**18) + 1, 10**18 - 1),
    ),
]
LOSSY_RANGE_SPECS = [
    Spec(pa.time64("us"), st.integers(0, _MS_DAY * 1000 - 1), lossy=True),
    Spec(pa.time64("ns"), st.integers(0, _MS_DAY * 1_000_000 - 1), lossy=True),
]

# ---------------------------------------------------------------------------------------
# predicates as small trees, so that each can be evaluated in the IEEE and Java domains
# ---------------------------------------------------------------------------------------


def _leaf(fn):
    return ("leaf", fn)


TREES = [
    _leaf(lambda c, v, w, vals: c == v),
    _leaf(lambda c, v, w, vals: c != v),
    _leaf(lambda c, v, w, vals: c < v),
    _leaf(lambda c, v, w, vals: c <= v),
    _leaf(lambda c, v, w, vals: c > v),
    _leaf(lambda c, v, w, vals: c >= v),
    _leaf(lambda c, v, w, vals: pc.scalar(v) < c),
    _leaf(lambda c, v, w, vals: pc.scalar(w) >= c),
    _leaf(lambda c, v, w, vals: c.isin(vals)),
    _leaf(lambda c, v, w, vals: ~c.isin(vals)),
    _leaf(lambda c, v, w, vals: c.is_null()),
    _leaf(lambda c, v, w, vals: c.is_valid()),
    _leaf(lambda c, v, w, vals: ~(c < v)),
    _leaf(lambda c, v, w, vals: ~(c >= w)),
    _leaf(lambda c, v, w, vals: ~(c == v)),
    ("and", _leaf(lambda c, v, w, vals: c >= v), _leaf(lambda c, v, w, vals: c <= w)),  # between
    ("or", _leaf(lambda c, v, w, vals: c < v), _leaf(lambda c, v, w, vals: c.is_null())),
    ("or", _leaf(lambda c, v, w, vals: c == v), _leaf(lambda c, v, w, vals: c > w)),
    ("and", _leaf(lambda c, v, w, vals: ~c.isin(vals)), _leaf(lambda c, v, w, vals: c != w)),
]


def _expr(tree, c, v, w, vals) -> pc.Expression:
    if tree[0] == "leaf":
        return tree[1](c, v, w, vals)
    a, b = _expr(tree[1], c, v, w, vals), _expr(tree[2], c, v, w, vals)
    return (a & b) if tree[0] == "and" else (a | b)


def _union_rows(tree, ieee: tuple, java: tuple) -> np.ndarray:
    """Per leaf, the rows IEEE (pyarrow) or Java selects; combined by AND / OR."""
    if tree[0] == "leaf":
        return pyarrow_rows(ieee[0], tree[1](*ieee[1:])) | pyarrow_rows(java[0], tree[1](*java[1:]))
    a, b = _union_rows(tree[1], ieee, java), _union_rows(tree[2], ieee, java)
    return (a & b) if tree[0] == "and" else (a | b)


def _batches(table: pa.Table, cuts: list[int]) -> list[pa.RecordBatch]:
    """``table`` as record batches split at ``cuts`` (empty batches included)."""
    bounds = [0, *sorted(min(c, table.num_rows) for c in cuts), table.num_rows]
    return [table.slice(a, b - a).combine_chunks().to_batches(max_chunksize=max(b - a, 1))[0]
            if b > a else pa.RecordBatch.from_pylist([], schema=table.schema)
            for a, b in zip(bounds, bounds[1:])]  # fmt: skip


def check_answers(
    spec: Spec, raws: list, lits: list, index_type: str, options: dict, cuts: list[int]
) -> None:
    """Build ``index_type`` over ``raws`` and check every tree against pyarrow (and Java)."""
    arr = spec.array(raws)
    table = pa.table({"c": arr})
    data = write_file_index(
        _batches(table, cuts), {f"file-index.{index_type}.columns": "c", **options}
    )
    index = FileIndex(data, table.schema)
    v, w = spec.scalar(lits[0]), spec.scalar(lits[1])
    vals = spec.array(lits[2:])
    if pa.types.is_string_view(spec.arrow_type):
        vals = vals.cast(pa.string())
    c = pc.field("c")
    n = len(arr)
    if pa.types.is_string_view(
        spec.arrow_type
    ):  # pyarrow compares string_view with string literals poorly
        table = pa.table({"c": arr.cast(pa.string())})
    for tree in TREES:
        expr = _expr(tree, c, v, w, vals)
        ours = index.evaluate(expr).to_mask(n).to_numpy(zero_copy_only=False)
        truth = pyarrow_rows(table, expr)
        where = f"{expr} on {raws} (literals {lits})"
        if spec.lossy:
            assert not (truth & ~ours).any(), f"drops rows: {where}"
            continue
        if not spec.is_float:
            assert (ours == truth).all(), (
                f"not exact: {where}: ours {np.flatnonzero(ours)}, pyarrow {np.flatnonzero(truth)}"
            )
            continue
        jtable = pa.table({"c": spec.java(arr)})
        jv, jw = (
            pa.scalar(int(java_float_key(np.array([x], arr.type.to_pandas_dtype()))[0]))
            for x in lits[:2]
        )
        jvals = spec.java(vals)
        want = _union_rows(tree, (table, c, v, w, vals), (jtable, c, jv, jw, jvals))
        java_truth = pyarrow_rows(jtable, _expr(tree, c, jv, jw, jvals))
        assert not ((truth | java_truth) & ~ours).any(), f"drops rows: {where}"
        assert (ours == want).all() or _only_nan_slack(ours, want, arr, vals), (
            f"not exact: {where}: ours {np.flatnonzero(ours)}, want {np.flatnonzero(want)}"
        )


def nan_rows(arr: pa.Array) -> np.ndarray:
    return pc.fill_null(pc.is_nan(arr), False).to_numpy(zero_copy_only=False)


def _only_nan_slack(ours: np.ndarray, want: np.ndarray, arr: pa.Array, vals: pa.Array) -> bool:
    """The one documented widening: with NaN in an is_in set, a complement keeps NaN rows.

    pyarrow's is_in matches NaN only with the same bit pattern, while index keys hold one
    canonical NaN (as Java's do), so a NaN row may be FALSE for ``is_in`` and is kept by ``~``.
    """
    has_nan_literal = len(vals) and pc.any(pc.is_nan(vals)).as_py()
    extra = ours & ~want
    return bool(has_nan_literal) and not (want & ~ours).any() and not (extra & ~nan_rows(arr)).any()


@st.composite
def column(draw, spec: Spec, max_size: int = 60):
    pool = draw(st.lists(spec.raw, min_size=1, max_size=8))
    pick = st.sampled_from(pool)
    raws = draw(st.lists(st.none() | pick | pick | spec.raw, max_size=max_size))
    lits = draw(st.lists(pick | spec.raw, min_size=3, max_size=6))
    cuts = draw(st.lists(st.integers(0, max_size), max_size=2))
    return raws, lits, cuts


@pytest.mark.parametrize("spec", RANGE_SPECS + LOSSY_RANGE_SPECS, ids=lambda s: s.id)
@SETTINGS
@given(data=st.data())
def test_range_bitmap_answers_exactly(spec, data):
    raws, lits, cuts = data.draw(column(spec))
    chunk = data.draw(st.sampled_from(CHUNK_SIZES))
    check_answers(
        spec, raws, lits, "range-bitmap", {"file-index.range-bitmap.c.chunk-size": chunk}, cuts
    )


@pytest.mark.parametrize(
    "spec", [RANGE_SPECS[2], RANGE_SPECS[5], RANGE_SPECS[17]], ids=lambda s: s.id
)
def test_edge_files(spec):
    """Empty files, all-NULL files, one distinct value, one row."""
    some = {"int32": [7, -3], "string": ["x", ""], "double": [math.nan, -0.0]}[str(spec.arrow_type)]
    for raws in (
        [],
        [None],
        [None] * 70_000,
        [some[0]] * 5,
        [some[0]],
        [None, some[0], None],
        [some[1]] * 3 + [None],
    ):
        for chunk in ("0b", "16kb"):
            check_answers(
                spec,
                raws,
                [some[0], some[1], some[0], some[1]],
                "range-bitmap",
                {"file-index.range-bitmap.c.chunk-size": chunk},
                [],
            )


@pytest.mark.parametrize("how", ["roaring", "words"])
def test_many_rows_many_containers(how):
    """300k rows (several Roaring containers, dense and sparse) and 3 chunk sizes; one
    opened index answers every query (a scan keeps indexes open across queries)."""
    rng = np.random.default_rng(7)
    values = rng.integers(-50_000, 50_000, 300_000).astype(np.int32)
    values[::10] = 12_345
    nulls = rng.random(300_000) < 0.05
    arr = pa.array(values, mask=nulls)
    table = pa.table({"c": arr})
    c = pc.field("c")
    exprs = [c == 12_345, c == 17, c < -49_000, c >= 0, ~(c > 100), c.isin([1, 2, 12_345]), c.is_null(),
             (c > -10) & (c < 10), ~c.isin([12_345])]  # fmt: skip
    for chunk in ("0b", "64b", "16kb"):
        index = FileIndex(
            write_file_index(
                table,
                {
                    "file-index.range-bitmap.columns": "c",
                    "file-index.range-bitmap.c.chunk-size": chunk,
                },
            ),
            table.schema,
        )
        with walk(how):
            for expr in exprs + exprs[::-1]:  # again, in reverse: parsed slice layouts are reused
                ours = index.evaluate(expr).to_mask(len(arr)).to_numpy(zero_copy_only=False)
                assert (ours == pyarrow_rows(table, expr)).all(), expr


@pytest.mark.parametrize("repeat", [1, 50], ids=["mostly-distinct", "many-repeats"])
def test_wide_int_span(repeat):
    """Integers spanning far more than their count: the sort and the hash encodings."""
    wide = np.array([-(2**63), 2**63 - 1, 0, 5, -(2**40), 2**40, 5, 0], dtype=np.int64)
    values = np.tile(wide, repeat)
    table = pa.table({"c": pa.array(values)})
    index = FileIndex(
        write_file_index(table, {"file-index.range-bitmap.columns": "c"}), table.schema
    )
    c = pc.field("c")
    for expr in (c == 5, c < 0, c >= 2**40, c > -(2**63), c <= -(2**63), c.isin([0, 2**63 - 1])):
        ours = index.evaluate(expr).to_mask(len(values)).to_numpy(zero_copy_only=False)
        assert (ours == pyarrow_rows(table, expr)).all(), expr


def test_float_in_and_not_in_zero():
    """pyarrow's is_in is bitwise for floats (-0.0 is not in {0.0}); so are the answers."""
    table = pa.table({"c": pa.array([0.0, -0.0, 1.0, None, math.nan])})
    index = FileIndex(
        write_file_index(table, {"file-index.range-bitmap.columns": "c"}), table.schema
    )
    for values in ([0.0], [-0.0], [0.0, math.nan], [1.0]):
        for expr in (pc.field("c").isin(pa.array(values)), ~pc.field("c").isin(pa.array(values))):
            ours = index.evaluate(expr).to_mask(5).to_numpy(zero_copy_only=False)
            truth = pyarrow_rows(table, expr)
            assert (ours == truth).all() or _only_nan_slack(ours, truth, table.column("c").chunk(0), pa.array(values)), expr


# ---------------------------------------------------------------------------------------
# TopN against pyarrow's sort
# ---------------------------------------------------------------------------------------


def _sorted_prefix_values(
    table: pa.Table, cand: np.ndarray, order: str, null_placement: str, limit: int
) -> list:
    """The sort values of the first ``limit`` candidates by pyarrow's sort (Java order column ``j``)."""
    sub = table.filter(pa.array(cand))
    idx = pc.sort_indices(sub, sort_keys=[("j", order, null_placement)])
    return sub.column("j").take(idx[:limit]).to_pylist()


def _sort_key(v):
    return (v is None, v)


@pytest.mark.parametrize(
    "spec",
    [s for s in RANGE_SPECS if not pa.types.is_string_view(s.arrow_type)],
    ids=lambda s: s.id,
)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_top_n(spec, data):
    raws, lits, cuts = data.draw(column(spec, max_size=50))
    limit = data.draw(st.integers(0, len(raws) + 3))
    order = data.draw(st.sampled_from(["ascending", "descending"]))
    placement = data.draw(st.sampled_from(["at_start", "at_end"]))
    two_keys = data.draw(st.booleans())
    with_filter = data.draw(st.sampled_from([None, "group", "range"]))
    arr = spec.array(raws)
    n = len(arr)
    groups = pa.array(np.arange(n) % 3, pa.int8())
    table = pa.table({"c": arr, "g": groups})
    options = {"file-index.range-bitmap.columns": "c", "file-index.bitmap.columns": "g",
               "file-index.range-bitmap.c.chunk-size": data.draw(st.sampled_from(CHUNK_SIZES))}  # fmt: skip
    index = FileIndex(write_file_index(_batches(table, cuts), options), table.schema)
    filt = {
        None: None,
        "group": pc.field("g") == 1,
        "range": pc.field("c") >= spec.scalar(lits[0]),
    }[with_filter]
    sort_keys = [("c", order)] + ([("g", "ascending")] if two_keys else [])
    result = index.evaluate_top_n(sort_keys, limit, null_placement=placement, filter=filt)
    ours = result.to_mask(n).to_numpy(zero_copy_only=False)
    if filt is None:
        cand = np.ones(n, dtype=bool)
    else:
        cand = pyarrow_rows(table, filt)
        if limit and not is_exact(bind(filt, table.schema), table.schema, index.readers):
            # Floats with NaN or -0.0 rows: the filter's answer is the union of IEEE and Java
            # matches, a superset; its top rows could miss matching rows, so it comes back.
            assert (ours == index.evaluate(filt).to_mask(n).to_numpy(zero_copy_only=False)).all()
            return
    strict = not two_keys
    # 1. against pyarrow's sort: the kept values are the first `limit` values of the sort
    j = spec.java(arr) if spec.is_float else arr
    if pa.types.is_temporal(j.type):  # Python datetimes cannot hold every value
        j = j.view(pa.int32() if j.type.bit_width == 32 else pa.int64())
    jt = pa.table({"j": j})
    prefix = _sorted_prefix_values(jt, cand, order, placement, limit)
    kept = jt.column("j").filter(pa.array(ours)).to_pylist()
    descending = order == "descending"
    if strict:
        assert sorted(kept, key=_sort_key) == sorted(prefix, key=_sort_key), (
            raws,
            limit,
            order,
            placement,
        )
    else:
        assert all(kept.count(v) >= prefix.count(v) for v in set(prefix) if v == v)
    # 2. a valid top-limit with Java's tie-break (independent reference)
    score = goodness(pa.chunked_array([arr]), descending, placement == "at_start")
    assert is_valid_top(ours, score, cand, limit, strict) is None
    assert (ours == reference(score, cand, limit, strict)).all()


def test_top_n_without_range_bitmap_returns_filter():
    table = pa.table({"c": pa.array([3, 1, 2, None], pa.int32())})
    index = FileIndex(write_file_index(table, {"file-index.bsi.columns": "c"}), table.schema)
    assert index.evaluate_top_n([("c", "descending")], 1).kind == "remain"
    filtered = index.evaluate_top_n([("c", "descending")], 1, filter=pc.field("c") > 1)
    assert filtered.bitmap == index.evaluate(pc.field("c") > 1).bitmap


# ---------------------------------------------------------------------------------------
# types, options, Java quirks
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arrow_type",
    [pa.decimal128(19, 2), pa.decimal128(38, 10), pa.timestamp("ns"), pa.timestamp("ns", tz="UTC")],
)
def test_refuses_what_java_refuses(arrow_type):
    table = pa.table({"c": pa.array([None], arrow_type)})
    with pytest.raises(UnsupportedTypeError):
        write_file_index(table, {"file-index.range-bitmap.columns": "c"})


def test_options():
    table = pa.table({"c": pa.array([1, 2], pa.int32())})
    with pytest.raises(OptionError):
        write_file_index(
            table,
            {
                "file-index.range-bitmap.columns": "c",
                "file-index.range-bitmap.c.chunk-size": "lots",
            },
        )
    with pytest.raises(OptionError):
        write_file_index(
            table,
            {"file-index.range-bitmap.columns": "c", "file-index.range-bitmap.c.chunk-size": "4gb"},
        )
    with pytest.raises(OptionError):
        write_file_index(
            table,
            {"file-index.range-bitmap.columns": "c", "file-index.range-bitmap.c.colour": "red"},
        )


def test_empty_index_is_1080_bytes_with_64_slices():
    """Java's empty range-bitmap (no non-NULL value): 64 empty slices, 1,080 bytes."""
    for arr in (pa.array([], pa.int32()), pa.array([None] * 3, pa.int32())):
        data = write_file_index(pa.table({"c": arr}), {"file-index.range-bitmap.columns": "c"})
        from arrowidx.index.container import Container

        (entry,) = [e for e in Container(data).all_entries()]
        assert entry.length == 1080
        golden = next(c for c in golden_cases() if c["id"] == "i32_empty_0__range-bitmap")
        assert golden["containerLayout"][0]["length"] == 1080


def test_point_lookup_decodes_one_chunk():
    values = np.arange(200_000, dtype=np.int32)
    table = pa.table({"c": pa.array(values)})
    index = FileIndex(
        write_file_index(table, {"file-index.range-bitmap.columns": "c"}), table.schema
    )
    assert list(index.evaluate(pc.field("c") == 123_457).bitmap) == [123_457]
    (reader,) = index.readers("c")
    chunks = reader.dictionary._chunks
    assert reader.dictionary.size > 40
    assert len(chunks) <= 2 + reader.dictionary.size.bit_length()  # headers on the search path
    assert sum(c.decoded is not None for c in chunks.values()) == 1  # keys of one chunk


# ---------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------

BAD_SAMPLES = [
    "str_unique_200__range-bitmap__chunk-size-16b",
    "i32_mixed_2k__range-bitmap",
    "f64_2k__range-bitmap__chunk-size-16b",
]


def _case(case_id: str) -> dict:
    return next(c for c in golden_cases() if c["id"] == case_id)


def _entry_bytes(case: dict) -> bytes:
    layout = case["containerLayout"][0]
    return index_bytes(case)[layout["start"] : layout["start"] + layout["length"]]


def probe(data: bytes, schema: pa.Schema, index_type: str) -> None:
    """Open an index entry on its own and ask everything (forces every lazy decode)."""
    index = FileIndex(write_container({"c": {index_type: data}}), schema)
    typ = schema.field("c").type
    table_literals = {
        pa.int32(): [1, 54_880, -5],
        pa.string(): ["a", "zz", ""],
        pa.float64(): [0.5, -1.0, 1e300],
    }
    c = pc.field("c")
    for lit in table_literals.get(typ, [1, 2, 3]):
        v = pa.scalar(lit, typ)
        for expr in (c == v, c < v, c >= v, ~(c > v), c.isin(pa.array([lit], typ))):
            index.evaluate(expr).remain  # noqa: B018
    index.evaluate(c.is_null()).remain  # noqa: B018
    for order in ("ascending", "descending"):
        index.evaluate_top_n([("c", order)], 3).remain  # noqa: B018


@pytest.mark.parametrize("case_id", BAD_SAMPLES)
def test_truncated_at_every_offset(case_id):
    case = _case(case_id)
    data = _entry_bytes(case)
    schema = load_table(case["dataset"]).schema
    probe(data, schema, "range-bitmap")  # the whole entry is fine
    for cut in range(len(data)):
        with pytest.raises(CorruptIndexError) as info:
            probe(data[:cut], schema, "range-bitmap")
        assert "<bytes>" in str(info.value) and "byte" in str(info.value)


def _layout(data: bytes) -> dict:
    """Offsets of the fields of a range-bitmap entry, from the documented layout."""
    (header_length,) = struct.unpack_from(">i", data, 0)
    dict_at = 4 + header_length
    (dict_length,) = struct.unpack_from(">i", data, dict_at - 4)
    bsi_at = dict_at + dict_length
    (size,) = struct.unpack_from(">i", data, dict_at + 5)
    return {
        "version": 4, "rows": 5, "card": 9, "dict_length": dict_at - 4, "dict_header": dict_at,
        "dict_version": dict_at + 4, "chunk_count": dict_at + 5, "offsets_length": dict_at + 9,
        "chunks_length": dict_at + 13, "chunk_offset1": dict_at + 17 + 4, "chunk0": dict_at + 17 + 4 * size,
        "bsi_header": bsi_at, "bsi_version": bsi_at + 4, "slice_count": bsi_at + 5, "ebm_length": bsi_at + 6,
        "index_length": bsi_at + 10, "slice0_offset": bsi_at + 14, "slice0_length": bsi_at + 18,
    }  # fmt: skip


def _patched(data: bytes, at: int, fmt: str, value) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


CORRUPTIONS = [
    ("version", ">b", 0), ("rows", ">i", -1), ("rows", ">i", 3), ("card", ">i", -5), ("card", ">i", 2**31 - 1),
    ("dict_length", ">i", -1), ("dict_length", ">i", 2**31 - 1), ("dict_header", ">i", 12),
    ("dict_version", ">b", 0), ("chunk_count", ">i", -1), ("chunk_count", ">i", 2**30),
    ("offsets_length", ">i", 3), ("chunks_length", ">i", -4), ("chunks_length", ">i", 2**31 - 1),
    ("chunk_offset1", ">i", 0), ("chunk_offset1", ">i", 2**31 - 1), ("chunk0", ">b", 9),
    ("bsi_header", ">i", 2), ("bsi_header", ">i", 2**31 - 1), ("bsi_version", ">b", 0),
    ("slice_count", ">b", 0), ("slice_count", ">b", -1), ("slice_count", ">b", 65), ("slice_count", ">b", 1),
    ("ebm_length", ">i", -1), ("ebm_length", ">i", 2**31 - 1), ("index_length", ">i", 7),
    ("slice0_offset", ">i", -1), ("slice0_offset", ">i", 2**31 - 9), ("slice0_length", ">i", 2**31 - 1),
    ("slice0_length", ">i", 3),
]  # fmt: skip


@pytest.mark.parametrize("field,fmt,value", CORRUPTIONS, ids=lambda x: str(x))
@pytest.mark.parametrize("case_id", BAD_SAMPLES[:2])
def test_corrupt_fields(case_id, field, fmt, value):
    case = _case(case_id)
    data = _entry_bytes(case)
    schema = load_table(case["dataset"]).schema
    bad = _patched(data, _layout(data)[field], fmt, value)
    with pytest.raises(CorruptIndexError):
        probe(bad, schema, "range-bitmap")


@pytest.mark.parametrize("field", ["version", "dict_version", "bsi_version", "chunk0"])
def test_newer_versions(field):
    case = _case(BAD_SAMPLES[1])
    data = _entry_bytes(case)
    bad = _patched(data, _layout(data)[field], ">b", 2)
    with pytest.raises(UnsupportedVersionError):
        probe(bad, load_table(case["dataset"]).schema, "range-bitmap")


@pytest.mark.parametrize(
    "field,value", [("card", 2**31 - 1), ("chunk_count", 2**30), ("slice_count", 64)]
)
def test_lying_counts_allocate_nothing_big(field, value):
    case = _case(BAD_SAMPLES[1])
    data = _entry_bytes(case)
    bad = _patched(data, _layout(data)[field], ">i" if field != "slice_count" else ">b", value)
    tracemalloc.start()
    try:
        with pytest.raises(CorruptIndexError):
            probe(bad, load_table(case["dataset"]).schema, "range-bitmap")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * len(data) + (1 << 20)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_corruption_never_crashes(data):
    case = _case(data.draw(st.sampled_from(BAD_SAMPLES)))
    raw = bytearray(_entry_bytes(case))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    try:
        probe(bytes(raw), load_table(case["dataset"]).schema, "range-bitmap")
    except ArrowIdxError:
        pass


def walk(how: str):
    """Which walk =, IN and ranges take: ``"index"`` leaves it to the index (the machine-word
    walk where it pays), ``"roaring"`` and ``"words"`` force one; ``"words, bitset answer"``
    also builds the word walk's answer from bitsets however few its rows."""
    if how == "index":
        return nullcontext()
    stack = ExitStack()
    for cls in (bitslice.SliceSet, bitslice.BitSliceIndexBitmap):
        stack.enter_context(mock.patch.object(cls, "_words_pay", lambda self: how != "roaring"))
    if how == "words, bitset answer":
        stack.enter_context(mock.patch.object(bitslice, "_READ_SHARE", 1 << 30))
    return stack


@pytest.mark.parametrize("how", ["roaring", "words", "index"])
@pytest.mark.parametrize("kind", ["range-bitmap", "bsi"])
def test_in_lists_and_ranges_over_dense_slices(kind, how):
    """6 x 65,536 rows, uniform plus one hot value: the slices are dense bitsets, so the
    queries pass where CRoaring's containers turn from bitsets into arrays (there an AND
    is computed as AND-NOT of the complement, kept across the values of an IN list), with IN
    values parting high and low in the slices; and through the machine-word walk, where the
    hot value's 100k rows come back as bitsets."""
    rng = np.random.default_rng(11)
    values = np.concatenate([rng.integers(0, 100_000, 293_216), np.full(100_000, 7)]).astype(np.int32)
    rng.shuffle(values)
    table = pa.table({"c": pa.array(values, mask=rng.random(len(values)) < 0.03)})
    index = FileIndex(write_file_index(table, {f"file-index.{kind}.columns": "c"}), table.schema)
    c = pc.field("c")
    present = values[:12].tolist()
    neighbours = [present[0] + k for k in range(-3, 5)]  # codes parting only in their low bits
    with walk(how):
        for expr in (c.isin(present + [7, 0, 99_999, 123_456, -1]), c.isin(present[:3]), c == present[0], c == 7,
                     c < 50_000, c < 8, c >= 99_000, c <= 7, ~c.isin(present), c.isin(neighbours),
                     c.isin([5, 6, 7, 8])):  # fmt: skip
            ours = index.evaluate(expr).to_mask(len(values)).to_numpy(zero_copy_only=False)
            assert (ours == pyarrow_rows(table, expr)).all(), expr


class _Slices(bitslice.SliceSet):
    """A bit-sliced index made of given bitmaps, every row having a value."""

    def __init__(self, rows: int, slices: list[BitMap]):
        super().__init__()
        self.rows, self.count, self.max_value = rows, len(slices), (1 << len(slices)) - 1
        parts = [s.serialize() for s in slices]
        self.data = b"".join(parts)
        ends = np.cumsum([len(p) for p in parts]).tolist()
        self.spans = [(end - len(p), len(p)) for end, p in zip(ends, parts)]

    def _span(self, i: int) -> tuple[int, int]:
        return self.spans[i]

    def _load_slice(self, i: int) -> BitMap:
        return BitMap.deserialize(self.data[self.spans[i][0] : sum(self.spans[i])])

    def _load_ebm(self) -> BitMap:
        return BitMap(range(self.rows))


def test_word_walk_ignores_slice_rows_past_the_index():
    """A slice holding rows past the index's rows (only a damaged file has them) answers as
    the Roaring walk does, which meets them only within the existence bitmap: no error, no
    row past the end."""
    rows = 70_000
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 8, rows)
    slices = [BitMap(np.flatnonzero((codes >> i) & 1).tolist()) for i in range(3)]
    slices[1] |= BitMap([rows + 5, 200_000, 2**31])
    for code in range(8):
        expected = BitMap(np.flatnonzero(codes == code).tolist())
        below = BitMap(np.flatnonzero(codes < code).tolist())
        for how in ("roaring", "words"):
            with walk(how):
                assert _Slices(rows, slices).eq_any([code]) == expected, (how, code)
                assert _Slices(rows, slices).lt(code) == below, (how, code)
                assert _Slices(rows, slices).ge(code) == BitMap(range(rows)) - below, (how, code)


@pytest.fixture(scope="module")
def word_walk_index() -> tuple[bytes, pa.Schema, list[int]]:
    """A range bitmap the word walk reads: 1,051,576 rows (a last container of 3,000 rows,
    an array or runs in each slice), uniform over 300,000 values; and where its slices'
    headers lie."""
    values = np.random.default_rng(9).integers(0, 300_000, 1_051_576).astype(np.int32)
    table = pa.table({"c": values})
    data = write_file_index(table, {"file-index.range-bitmap.columns": "c"})
    with mock.patch.object(bitslice.BitSliceIndexBitmap, "_load_ebm", autospec=True,
                           side_effect=bitslice.BitSliceIndexBitmap._load_ebm) as spy:  # fmt: skip
        FileIndex(data, table.schema).evaluate(pc.field("c") == 5)
    bsi = spy.call_args.args[0]  # it reads the whole container's bytes
    headers = [bsi.slices_start + offset for offset in bsi.offsets]
    return data, table.schema, headers


@fuzz_settings(40)
@given(data=st.data())
def test_damaged_slices_never_crash_the_word_walk(word_walk_index, data):
    """Bytes changed in the slices' headers (and anywhere) give an answer or an arrowidx
    error through the word walk, never another exception."""
    raw, schema, headers = word_walk_index
    raw = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.sampled_from(headers).flatmap(lambda h: st.integers(h, h + 40)) | st.integers(0, len(raw) - 1))
        raw[min(at, len(raw) - 1)] = data.draw(st.integers(0, 255))
    c = pc.field("c")
    with walk("words"):
        for expr in (c == 17, c.isin([3, 170_000, 299_999]), c < 2_000, c >= 150_000):
            try:
                FileIndex(bytes(raw), schema).evaluate(expr).to_mask(1_051_576)
            except ArrowIdxError:
                pass


@st.composite
def many_row_columns(draw):
    """100k-260k integers of varied shapes, so the bit slices hold dense bitset containers,
    sparse array containers and runs, and comparisons cross from one kind to the other."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.sampled_from([100_000, 140_000, 260_000]))
    low = draw(st.sampled_from([0, -500, -(2**40), 7]))
    domain = draw(st.sampled_from([2, 3, 100, 5_000, 70_000, 1_000_000, 2**40]))
    shape = draw(st.sampled_from(["uniform", "skewed", "sorted", "blocks", "hot"]))
    if shape == "skewed":
        values = low + np.minimum(rng.zipf(1.5, n), domain) - 1
    elif shape == "blocks":  # each 65,536-row block draws from its own narrow range
        values = low + (np.arange(n) >> 16) * 7 + rng.integers(0, 7, n)
    else:
        values = low + rng.integers(0, domain, n)
        if shape == "sorted":
            values.sort()
        elif shape == "hot":
            values[rng.random(n) < 0.4] = low
    nulls = rng.random(n) < draw(st.sampled_from([0.0, 0.05]))
    return values.astype(np.int64), nulls


@fuzz_settings(15)
@given(column=many_row_columns(), data=st.data())
def test_many_rows_against_pyarrow(column, data):
    """Range bitmap and BSI over many rows answer =, IN, <, <=, >, >= and their combinations
    exactly as pyarrow selects (hypothesis; more examples with ARROWIDX_FUZZ=long)."""
    values, nulls = column
    table = pa.table({"c": pa.array(values, mask=nulls)})
    present = values[~nulls] if (~nulls).any() else values
    pick = st.sampled_from(present[:: max(1, len(present) // 200)].tolist()) | st.integers(
        int(values.min()) - 2, int(values.max()) + 2
    )
    c = pc.field("c")
    leaf = st.one_of(
        pick.map(lambda v: c == v),
        st.lists(pick, min_size=1, max_size=12).map(lambda vs: c.isin(vs)),
        pick.map(lambda v: c < v),
        pick.map(lambda v: c <= v),
        pick.map(lambda v: c > v),
        pick.map(lambda v: c >= v),
    )
    exprs = data.draw(st.lists(st.one_of(leaf, st.tuples(leaf, leaf).map(lambda ab: ab[0] & ~ab[1])), min_size=1, max_size=4))
    how = data.draw(st.sampled_from(["roaring", "words", "words, bitset answer", "index"]))
    for kind in ("range-bitmap", "bsi"):
        index = FileIndex(write_file_index(table, {f"file-index.{kind}.columns": "c"}), table.schema)
        with walk(how):
            for expr in exprs:
                ours = index.evaluate(expr).to_mask(len(values)).to_numpy(zero_copy_only=False)
                assert (ours == pyarrow_rows(table, expr)).all(), (kind, how, expr)


@pytest.mark.parametrize("kind", ["range-bitmap", "bsi"])
@pytest.mark.parametrize(
    "shape, rows",
    [("uniform", 1_100_003), ("uniform", 1_048_640), ("nulls", 1_100_003), ("sorted", 1_100_003),
     ("hot", 1_100_003), ("negative", 1_100_003)],
)  # fmt: skip
def test_word_walk_answers_equal_numpy(kind, shape, rows):
    """=, IN and ranges through the machine-word walk, past the million rows, on a row
    count that is not a whole number of containers (and one that is not a whole number of
    words either), equal numpy's selection: slices that are all bitsets (read in place),
    slices with arrays and runs (sorted: decoded first), NULLs (the existence bitmap as
    words), a value on 40 % of the rows, BSI's negative half, and the smallest value (code
    0: no slice bit set, so only the existence bitmap bounds its rows)."""
    rng = np.random.default_rng(5)
    values = rng.integers(0, 300_000, rows)
    if shape == "sorted":
        values.sort()
    elif shape == "hot":
        values[rng.random(rows) < 0.4] = 4_242
    elif shape == "negative":
        values -= 150_000
    nulls = rng.random(rows) < 0.1 if shape == "nulls" else None
    table = pa.table({"c": pa.array(values.astype(np.int32), mask=nulls)})
    index = FileIndex(write_file_index(table, {f"file-index.{kind}.columns": "c"}), table.schema)
    live = values if nulls is None else values[~nulls]
    some = live[:: len(live) // 9][:9].tolist() + [4_242, -1, 300_000]
    lowest = int(live.min())
    c = pc.field("c")
    for how in ("words", "words, bitset answer"):
        with walk(how):
            for wanted in ([some[0]], [some[4]], some, some[:2], [4_242], [-1, 300_000], [lowest], [lowest, some[1]]):
                expr = c == wanted[0] if len(wanted) == 1 else c.isin(wanted)
                expected = np.isin(values, wanted) & (True if nulls is None else ~nulls)
                ours = index.evaluate(expr).bitmap  # exactly these rows: none past the end either
                assert ours == BitMap(np.flatnonzero(expected).tolist()), (how, wanted, len(ours), int(expected.sum()))
            bounds = [lowest, lowest + 1, some[0], some[4], 3_000 - 150_000 * (shape == "negative"), 0, -1]
            for bound in bounds + [int(live.max()), int(live.max()) + 1, int(np.median(live))]:
                for op in ("less", "less_equal", "greater", "greater_equal"):
                    expected = getattr(np, op)(values, bound) & (True if nulls is None else ~nulls)
                    ours = positions_of(index.evaluate(getattr(pc, op)(c, bound)).bitmap)
                    assert np.array_equal(ours, np.flatnonzero(expected)), (how, op, bound)


@pytest.mark.parametrize(
    "op, bound, way",
    [("less", 3_000, "rows"), ("greater_equal", 297_000, "rows"), ("less_equal", 296_999, "rest"),
     ("greater", 2_999, "rest"), ("less", 150_000, "croaring"), ("greater_equal", 150_000, "croaring")],
)  # fmt: skip
def test_word_walk_builds_each_range_answer_the_cheap_way(op, bound, way):
    """A range through the word walk reads a small answer bit by bit, reads the few rows a
    nearly full answer leaves out and takes them from the existence bitmap, and hands an
    answer of about half the rows to CRoaring; each equals numpy's selection."""
    rng = np.random.default_rng(4)
    values = rng.integers(0, 300_000, 1_100_003)
    nulls = rng.random(len(values)) < 0.05
    table = pa.table({"c": pa.array(values.astype(np.int32), mask=nulls)})
    index = FileIndex(write_file_index(table, {"file-index.range-bitmap.columns": "c"}), table.schema)
    expected = np.flatnonzero(getattr(np, op)(values, bound) & ~nulls)
    read = mock.patch.object(bitslice, "positions_of_words", side_effect=bitslice.positions_of_words)
    handed = mock.patch.object(bitslice, "bitmap_from_words", side_effect=bitslice.bitmap_from_words)
    with walk("index"), read as read, handed as handed:
        ours = positions_of(index.evaluate(getattr(pc, op)(pc.field("c"), bound)).bitmap)
    assert np.array_equal(ours, expected)
    assert handed.called == (way == "croaring")
    if way != "croaring":
        (call,) = read.call_args_list
        read_rows = len(call.args[0]) and int(np.bitwise_count(call.args[0]).sum())
        assert read_rows == (len(expected) if way == "rows" else int((~nulls).sum()) - len(expected))


@pytest.mark.parametrize(
    "rows, distinct, kind, walks",
    [(1_100_003, 300_000, "range-bitmap", True),  # many rows, ~4 per code, dense slices
     (1_100_003, 1_000, "range-bitmap", False),  # ~1,100 rows per code: large answers
     (8_000_000 // 16, 100_000, "range-bitmap", True),
     (2_000, 1_000, "range-bitmap", False),  # less than one container
     (1_100_003, 300_000, "bsi", False)],  # BSI does not know its number of distinct values
)  # fmt: skip
def test_word_walk_is_taken_where_it_pays(rows, distinct, kind, walks):
    """The machine-word walk is chosen for many rows with few rows per code, and left to the
    Roaring walk otherwise (there it is slower: measured in bench/bench_range_bitmap.py)."""
    values = np.random.default_rng(2).integers(0, distinct, rows).astype(np.int32)
    table = pa.table({"c": values})
    index = FileIndex(write_file_index(table, {f"file-index.{kind}.columns": "c"}), table.schema)
    with mock.patch.object(bitslice.SliceSet, "_eq_words", autospec=True, side_effect=bitslice.SliceSet._eq_words) as spy:
        ours = index.evaluate(pc.field("c") == int(values[0])).bitmap
    assert ours == BitMap(np.flatnonzero(values == values[0]).tolist())
    assert spy.called == walks
    bound = distinct // 100
    with mock.patch.object(bitslice.SliceSet, "_below_words", autospec=True,
                           side_effect=bitslice.SliceSet._below_words) as spy:  # fmt: skip
        ours = index.evaluate(pc.field("c") < bound).bitmap
    assert ours == BitMap(np.flatnonzero(values < bound).tolist())
    assert spy.called == walks


def test_word_walk_reads_slice_headers_once_per_opened_index(word_walk_index):
    """An opened range bitmap keeps its slices' word views: a scan asking the same index
    again (another query, the next batch) parses no slice header twice, and answers the
    same."""
    raw, schema, _ = word_walk_index
    index = FileIndex(raw, schema)
    c = pc.field("c")
    with mock.patch.object(bitslice, "leading_bitsets", side_effect=bitslice.leading_bitsets) as spy:
        first = [index.evaluate(e).bitmap for e in (c < 3_000, c == 17)]
        parsed = spy.call_count
        again = [index.evaluate(e).bitmap for e in (c < 3_000, c == 17)]
    assert parsed > 0 and spy.call_count == parsed
    assert again == first
