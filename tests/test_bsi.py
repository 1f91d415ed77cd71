"""BSI (``bsi``): property tests against pyarrow.compute, Java's write quirks, bad input.

Same exactness rule as the range-bitmap tests (expected answers from pyarrow on the raw data):
BSI answers every comparison, IN, IS NULL and their complements exactly.
"""

from __future__ import annotations

import struct

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
    UnsupportedTypeError,
    write_file_index,
)
from arrowidx.index.container import Container, UnsupportedVersionError

from .golden_support import golden_cases, index_bytes, load_table
from .test_range_bitmap import _MS_DAY, SETTINGS, Spec, _ints, check_answers, column, probe

_LONG = st.integers(-(2**63) + 1, 2**63 - 1)
BSI_SPECS = [
    Spec(pa.int8(), _ints(8)),
    Spec(pa.int16(), _ints(16)),
    Spec(pa.int32(), _ints(32)),
    Spec(pa.int64(), st.sampled_from([-(2**63) + 1, 2**63 - 1, 0, -1, 1, 2**62, -(2**62)]) | _LONG),
    Spec(pa.date32(), st.integers(-800_000, 800_000)),
    Spec(pa.time32("s"), st.integers(0, 86_399)),
    Spec(pa.time32("ms"), st.integers(0, _MS_DAY - 1)),
    Spec(pa.timestamp("s"), st.integers(-(10**11), 10**11)),
    Spec(pa.timestamp("ms", tz="UTC"), st.integers(-(10**14), 10**14)),
    Spec(
        pa.timestamp("us"),
        st.sampled_from([-(2**63) + 1, 2**63 - 1]) | st.integers(-(10**17), 10**17),
    ),
    Spec(pa.decimal128(10, 2), st.integers(-(10**10) + 1, 10**10 - 1)),
    Spec(pa.decimal128(18, 4), st.integers(-(10**18) + 1, 10**18 - 1)),
    Spec(pa.decimal128(38, 10), st.integers(-(10**18), 10**18)),  # fits a long, as Java requires
]
LOSSY_BSI_SPECS = [
    Spec(pa.time64("us"), st.integers(0, _MS_DAY * 1000 - 1), lossy=True),
    Spec(pa.timestamp("ns"), st.integers(-(10**18), 10**18), lossy=True),
]


@pytest.mark.parametrize("spec", BSI_SPECS + LOSSY_BSI_SPECS, ids=lambda s: s.id)
@SETTINGS
@given(data=st.data())
def test_bsi_answers_exactly(spec, data):
    raws, lits, cuts = data.draw(column(spec))
    check_answers(spec, raws, lits, "bsi", {}, cuts)


@pytest.mark.parametrize(
    "raws", [[], [None], [None] * 70_000, [5] * 4, [-5], [0], [None, 0, None], [-3, 3, -3, 3]]
)
def test_edge_files(raws):
    check_answers(BSI_SPECS[2], raws, [5, -5, 0, 3], "bsi", {}, [])


def _entry(data: bytes) -> bytes:
    (entry,) = Container(data).all_entries()
    return bytes(data[entry.start : entry.start + entry.length])


def test_java_layout_quirks():
    """Empty BSI is 7 bytes; the stored minimum is 0 even when every value is larger."""
    for arr in (pa.array([], pa.int32()), pa.array([None, None], pa.int32())):
        assert (
            len(_entry(write_file_index(pa.table({"c": arr}), {"file-index.bsi.columns": "c"})))
            == 7
        )
    data = _entry(
        write_file_index(
            pa.table({"c": pa.array([100, 101, None], pa.int32())}), {"file-index.bsi.columns": "c"}
        )
    )
    version, rows, has_positive, bsi_version, lo, hi = struct.unpack_from(">bi?bqq", data, 0)
    assert (version, rows, has_positive, bsi_version, lo, hi) == (1, 3, True, 1, 0, 101)
    assert data[-1:] == b"\x00"  # no negative BSI


@pytest.mark.parametrize(
    "arr",
    [pa.array([1, -(2**63)], pa.int64()), pa.array([-(2**63)], pa.timestamp("us"))],
    ids=["bigint", "timestamp"],
)
def test_long_min_value_cannot_be_written(arr):
    with pytest.raises(ArrowIdxError, match="2\\*\\*63"):
        write_file_index(pa.table({"c": arr}), {"file-index.bsi.columns": "c"})


def test_decimal_beyond_a_long_cannot_be_written():
    import decimal

    arr = pa.array([decimal.Decimal("12345678901234567890.5")], pa.decimal128(38, 10))
    with pytest.raises(ArrowIdxError):
        write_file_index(pa.table({"c": arr}), {"file-index.bsi.columns": "c"})


@pytest.mark.parametrize(
    "arrow_type", [pa.string(), pa.float32(), pa.float64(), pa.bool_(), pa.large_string()]
)
def test_refuses_what_java_refuses(arrow_type):
    with pytest.raises(UnsupportedTypeError):
        write_file_index(
            pa.table({"c": pa.array([None], arrow_type)}), {"file-index.bsi.columns": "c"}
        )


def test_bsi_has_no_top_n():
    table = pa.table({"c": pa.array([3, 1, 2], pa.int32())})
    index = FileIndex(write_file_index(table, {"file-index.bsi.columns": "c"}), table.schema)
    assert index.evaluate_top_n([("c", "ascending")], 1).kind == "remain"


# ---------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------

BAD_SAMPLES = ["i32_mixed_2k__bsi", "i32_minmax_200__bsi", "date_5k__bsi"]


def _case(case_id: str) -> dict:
    return next(c for c in golden_cases() if c["id"] == case_id)


def _golden_entry(case: dict) -> bytes:
    layout = case["containerLayout"][0]
    return index_bytes(case)[layout["start"] : layout["start"] + layout["length"]]


@pytest.mark.parametrize("case_id", ["i32_minmax_200__bsi", "i32_manynull_1k__bsi"])
def test_truncated_at_every_offset(case_id):
    case = _case(case_id)
    data = _golden_entry(case)
    schema = load_table(case["dataset"]).schema
    probe(data, schema, "bsi")
    for cut in range(len(data)):
        with pytest.raises(CorruptIndexError) as info:
            probe(data[:cut], schema, "bsi")
        assert "<bytes>" in str(info.value)


def _fields(data: bytes) -> dict:
    """Offsets in a BSI entry with a positive half, from the documented layout."""
    ebm_at = 6 + 1 + 16
    ebm_size = len(BitMap.deserialize(data[ebm_at:]).serialize())
    return {
        "version": 0,
        "rows": 1,
        "flag": 5,
        "half_version": 6,
        "min": 7,
        "max": 15,
        "count": ebm_at + ebm_size,
    }


CORRUPTIONS = [
    ("rows", ">i", -1), ("rows", ">i", 1), ("min", ">q", -1), ("min", ">q", 2**62), ("max", ">q", -1),
    ("max", ">q", 2**62), ("count", ">i", -1), ("count", ">i", 65), ("count", ">i", 0), ("count", ">i", 2**31 - 1),
    ("flag", ">b", 0), ("half_version", ">b", 0),
]  # fmt: skip


@pytest.mark.parametrize("field,fmt,value", CORRUPTIONS, ids=lambda x: str(x))
def test_corrupt_fields(field, fmt, value):
    case = _case(BAD_SAMPLES[0])
    data = bytearray(_golden_entry(case))
    struct.pack_into(fmt, data, _fields(bytes(data))[field], value)
    with pytest.raises(CorruptIndexError):
        probe(bytes(data), load_table(case["dataset"]).schema, "bsi")


def test_trailing_bytes_and_overlapping_halves():
    case = _case(BAD_SAMPLES[0])
    schema = load_table(case["dataset"]).schema
    data = _golden_entry(case)
    with pytest.raises(CorruptIndexError):
        probe(data + b"\x00", schema, "bsi")
    # the same row in both halves
    table = pa.table({"c": pa.array([5, -5], pa.int32())})
    good = _entry(write_file_index(table, {"file-index.bsi.columns": "c"}))
    row0, row1 = BitMap([0]).serialize(), BitMap([1]).serialize()
    # the first {1} is the negative existence bitmap, the first {0} the positive one: make both {1}
    swapped = good.replace(row1, b"\xff" * len(row1), 1).replace(row0, row1, 1)
    swapped = swapped.replace(b"\xff" * len(row1), row1, 1)
    assert swapped != good
    with pytest.raises(CorruptIndexError):
        probe(swapped, table.schema, "bsi")


@pytest.mark.parametrize("field", ["version", "half_version"])
def test_newer_versions(field):
    case = _case(BAD_SAMPLES[0])
    data = bytearray(_golden_entry(case))
    data[_fields(bytes(data))[field]] = 2
    with pytest.raises(UnsupportedVersionError):
        probe(bytes(data), load_table(case["dataset"]).schema, "bsi")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_corruption_never_crashes(data):
    case = _case(data.draw(st.sampled_from(BAD_SAMPLES)))
    raw = bytearray(_golden_entry(case))
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        probe(bytes(raw), load_table(case["dataset"]).schema, "bsi")
    except ArrowIdxError:
        pass


def test_answers_from_java_file_match_pyarrow_on_extremes():
    """Java's file for min/max integers answers exactly what pyarrow selects."""
    case = _case("i32_minmax_200__bsi")
    table = load_table(case["dataset"])
    index = FileIndex(index_bytes(case), table.schema)
    c = pc.field("c")
    for v in (-(2**31), 2**31 - 1, 0, -1):
        lit = pa.scalar(v, pa.int32())
        for expr in (
            c == lit,
            c < lit,
            c <= lit,
            c > lit,
            c >= lit,
            ~c.isin(pa.array([v], pa.int32())),
        ):
            ours = index.evaluate(expr).to_mask(table.num_rows).to_numpy(zero_copy_only=False)
            want = (
                table.append_column("r", pa.array(range(table.num_rows)))
                .filter(expr)
                .column("r")
                .to_pylist()
            )
            assert sorted(ours.nonzero()[0].tolist()) == want, expr
