"""Deletion vectors: Java golden records and index files, properties, and bad input.

Expected positions come from the golden manifest (written by Paimon's Java classes) or from
numpy/pyarrow computed independently of arrowidx.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

import arrowidx
from arrowidx import (
    ArrowIdxError,
    CorruptIndexError,
    DeletionVector,
    PositionOutOfRangeError,
    apply_deletion_vector,
    read_deletion_vectors,
    read_puffin_deletion_vectors,
    write_deletion_vectors,
    write_deletion_vectors_file,
    write_puffin_deletion_vectors,
)
from arrowidx._roaring import portable_size

from .conftest import GOLDEN, golden_manifest

MAGIC_32 = 1581511376
MAGIC_64 = 1681511377


def _cases(key):
    return golden_manifest()[key]


def _positions(runs) -> np.ndarray:
    if not runs:
        return np.zeros(0, dtype=np.uint64)
    return np.concatenate([np.arange(a, b, dtype=np.uint64) for a, b in runs])


def _frame(magic_le: bool, body: bytes) -> bytes:
    """An independent framing of a record: length BE | magic | body | CRC32 BE."""
    magic = struct.pack("<i", MAGIC_64) if magic_le else struct.pack(">i", MAGIC_32)
    payload = magic + body
    return struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))


def _refix_crc(record: bytes) -> bytes:
    length = struct.unpack(">i", record[:4])[0]
    body = record[4 : 4 + length]
    return record[: 4 + length] + struct.pack(">I", zlib.crc32(body)) + record[8 + length :]


# --------------------------------------------------------------------------------------
# Golden: single records
# --------------------------------------------------------------------------------------
DV_CASES = [c for c in _cases("deletionVectorCases") if c["file"]]
DV_ERRORS = [c for c in _cases("deletionVectorCases") if not c["file"]]


@pytest.mark.parametrize("case", DV_CASES, ids=[c["id"] for c in DV_CASES])
def test_golden_record_reads_to_java_positions(case):
    data = (GOLDEN / case["file"]).read_bytes()
    assert len(data) == case["fileSize"]
    dv = DeletionVector.deserialize(data)
    assert dv.bitmap64 == case["bitmap64"]
    assert dv.cardinality == case["cardinality"]
    expected = _positions(case["positionRuns"])
    got = dv.positions()
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, expected)
    assert dv.index_length() == case["serializeToReturned"]


@pytest.mark.parametrize("case", DV_CASES, ids=[c["id"] for c in DV_CASES])
def test_golden_record_written_byte_identical(case):
    data = (GOLDEN / case["file"]).read_bytes()
    expected = _positions(case["positionRuns"])
    dv = DeletionVector.from_positions(expected, bitmap64=case["bitmap64"])
    assert dv.serialize() == data
    # Built one position at a time, and from Arrow, the bytes are the same.
    if expected.size <= 2000:
        one_by_one = DeletionVector(bitmap64=case["bitmap64"])
        for p in expected.tolist():
            one_by_one.delete(p)
        assert one_by_one.serialize() == data
    from_arrow = DeletionVector.from_positions(pa.array(expected), bitmap64=case["bitmap64"])
    assert from_arrow.serialize() == data


@pytest.mark.parametrize("case", DV_ERRORS, ids=[c["id"] for c in DV_ERRORS])
def test_golden_error_cases(case):
    assert "2147483647" in case["error"]
    with pytest.raises(PositionOutOfRangeError, match="2147483647"):
        DeletionVector.from_positions([0, 2**31], bitmap64=False)
    dv = DeletionVector()
    with pytest.raises(ArrowIdxError):
        dv.delete(2**31)
    assert dv.cardinality == 0
    # The 64-bit kind takes it.
    assert DeletionVector.from_positions([2**31], bitmap64=True).cardinality == 1


def test_golden_puffin_blob_is_the_64bit_record():
    for case in DV_CASES:
        if not case["bitmap64"]:
            continue
        data = (GOLDEN / case["file"]).read_bytes()
        dv = DeletionVector.from_puffin_blob(data)
        np.testing.assert_array_equal(dv.positions(), _positions(case["positionRuns"]))
        assert dv.to_puffin_blob() == data
        # Iceberg's magic bytes D1 D3 39 64 sit right after the length.
        assert data[4:8] == bytes.fromhex("d1d33964")
        # A 32-bit vector exports the same blob.
        p = _positions(case["positionRuns"])
        if p.size == 0 or p.max() < 2**31:
            assert DeletionVector.from_positions(p).to_puffin_blob() == data


def test_puffin_import_rejects_32bit_record():
    data = (GOLDEN / "dv/dv32_one.dv").read_bytes()
    with pytest.raises(CorruptIndexError, match="deletion-vector-v1"):
        DeletionVector.from_puffin_blob(data)


# --------------------------------------------------------------------------------------
# Golden: index files
# --------------------------------------------------------------------------------------
IDX_CASES = _cases("deletionVectorIndexFiles")


@pytest.mark.parametrize("case", IDX_CASES, ids=[c["id"] for c in IDX_CASES])
def test_golden_index_file_reads(case):
    path = GOLDEN / case["file"]
    data = path.read_bytes()
    assert len(data) == case["fileSize"] == case["metaFileSize"]
    ranges = {r["dataFile"]: (r["offset"], r["length"]) for r in case["ranges"]}
    with_card = {
        r["dataFile"]: (r["offset"], r["length"], r["cardinality"]) for r in case["ranges"]
    }
    for rng in (ranges, with_card):
        for source in (data, path, str(path)):
            got = read_deletion_vectors(source, rng, bitmap64=case["bitmap64"])
            assert list(got) == list(rng)
            for r in case["ranges"]:
                dv = got[r["dataFile"]]
                assert dv.bitmap64 == case["bitmap64"]
                assert dv.cardinality == r["cardinality"]
                np.testing.assert_array_equal(dv.positions(), _positions(r["positionRuns"]))
    # Without ranges: every record in file order, named "0", "1", ...
    everything = read_deletion_vectors(data)
    assert list(everything) == [str(i) for i in range(case["metaRowCount"])]
    for i, r in enumerate(case["ranges"]):
        np.testing.assert_array_equal(everything[str(i)].positions(), _positions(r["positionRuns"]))
    # One vector read on its own.
    for r in case["ranges"]:
        one = read_deletion_vectors(data, {"x": (r["offset"], r["length"])})
        assert one["x"].cardinality == r["cardinality"]


@pytest.mark.parametrize("case", IDX_CASES, ids=[c["id"] for c in IDX_CASES])
def test_golden_index_file_written_byte_identical(case, tmp_path):
    data = (GOLDEN / case["file"]).read_bytes()
    expected_ranges = {r["dataFile"]: (r["offset"], r["length"]) for r in case["ranges"]}
    positions = {r["dataFile"]: _positions(r["positionRuns"]) for r in case["ranges"]}
    out, ranges = write_deletion_vectors(positions, bitmap64=case["bitmap64"])
    assert out == data
    assert ranges == expected_ranges
    vectors = {
        name: DeletionVector.from_positions(p, bitmap64=case["bitmap64"])
        for name, p in positions.items()
    }
    out2, ranges2 = write_deletion_vectors(vectors)  # each vector keeps its kind
    assert out2 == data and ranges2 == expected_ranges
    target = tmp_path / "index-0"
    assert write_deletion_vectors_file(target, vectors) == expected_ranges
    assert target.read_bytes() == data
    assert [p.name for p in tmp_path.iterdir()] == ["index-0"]  # no temporary left over


def test_write_converts_to_requested_kind():
    p = np.array([1, 5, 70000], dtype=np.int64)
    dv32 = DeletionVector.from_positions(p)
    dv64 = DeletionVector.from_positions(p, bitmap64=True)
    assert write_deletion_vectors({"a": dv32}, bitmap64=True) == write_deletion_vectors({"a": dv64})
    assert write_deletion_vectors({"a": dv64}, bitmap64=False) == write_deletion_vectors(
        {"a": dv32}
    )
    big = DeletionVector.from_positions([2**33], bitmap64=True)
    with pytest.raises(PositionOutOfRangeError):
        write_deletion_vectors({"a": big}, bitmap64=False)


def test_public_names():
    for name in (
        "DeletionVector",
        "write_deletion_vectors",
        "read_deletion_vectors",
        "apply_deletion_vector",
        "write_deletion_vectors_file",
    ):
        assert name in arrowidx.__all__ and hasattr(arrowidx, name)


# --------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------
def _position_sets(max_pos: int):
    sparse = st.lists(st.integers(0, max_pos), max_size=300)
    runs = st.lists(st.tuples(st.integers(0, max_pos), st.integers(1, 5000)), max_size=12).map(
        lambda rs: [p for a, n in rs for p in range(a, min(a + n, max_pos + 1))]
    )
    dense = st.tuples(st.integers(0, max_pos), st.integers(0, 150_000)).map(
        lambda t: list(range(t[0], min(t[0] + t[1], max_pos + 1)))
    )

    def clustered(t):  # ~13 % of 70,000 consecutive positions: bitmap containers
        a = np.random.default_rng(t[1]).choice(70_000, size=9_000, replace=False) + t[0]
        return a[a <= max_pos].tolist()

    clustered = st.tuples(st.integers(0, max_pos), st.integers(0, 2**31 - 1)).map(clustered)
    return st.one_of(st.just([]), sparse, runs, dense, clustered)


MAX64 = 2**40  # well above 2**32: several buckets, empty ones between


def _around_2p32():
    return st.lists(st.integers(2**32 - 300, 2**32 + 300), max_size=100)


PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(positions=_position_sets(2**31 - 1))
def test_roundtrip_32(positions):
    expected = np.unique(np.asarray(positions, dtype=np.int64)).astype(np.uint64)
    dv = DeletionVector.from_positions(np.asarray(positions, dtype=np.int64))
    assert dv.cardinality == expected.size
    data = dv.serialize()
    back = DeletionVector.deserialize(data)
    assert not back.bitmap64
    np.testing.assert_array_equal(back.positions(), expected)
    assert back == dv
    assert back.serialize() == data
    # framing, checked independently
    (length,) = struct.unpack(">i", data[:4])
    assert length == len(data) - 8
    assert data[4:8] == struct.pack(">i", MAGIC_32)
    assert struct.unpack(">I", data[-4:])[0] == zlib.crc32(data[4:-4])
    assert BitMap.deserialize(data[8:-4]) == BitMap(expected.astype(np.uint32).tolist())


@PROPS
@given(positions=st.one_of(_position_sets(MAX64), _around_2p32()))
def test_roundtrip_64(positions):
    expected = np.unique(np.asarray(positions, dtype=np.int64)).astype(np.uint64)
    dv = DeletionVector.from_positions(np.asarray(positions, dtype=np.uint64), bitmap64=True)
    data = dv.serialize()
    back = DeletionVector.deserialize(data)
    assert back.bitmap64
    np.testing.assert_array_equal(back.positions(), expected)
    assert back.serialize() == data
    # Iceberg layout: bucket count, then every key 0..max with its portable bitmap.
    assert data[4:8] == struct.pack("<i", MAGIC_64)
    (count,) = struct.unpack("<q", data[8:16])
    highs = expected >> np.uint64(32)
    assert count == (int(highs.max()) + 1 if expected.size else 0)
    pos, seen = 16, []
    for _ in range(count):
        (key,) = struct.unpack("<i", data[pos : pos + 4])
        seen.append(key)
        size = portable_size(memoryview(data), pos + 4, len(data) - 4)
        bm = BitMap.deserialize(data[pos + 4 : pos + 4 + size])
        low = expected[highs == key] & np.uint64(0xFFFFFFFF)
        assert bm == BitMap(low.astype(np.uint32).tolist())
        pos += 4 + size
    assert seen == list(range(count))
    assert pos == len(data) - 4


@PROPS
@given(positions=_position_sets(400_000), data=st.data())
def test_queries_match_numpy(positions, data):
    bitmap64 = data.draw(st.booleans())
    dv = DeletionVector.from_positions(positions, bitmap64=bitmap64)
    ref = np.unique(np.asarray(positions, dtype=np.int64))
    queries = np.asarray(
        data.draw(st.lists(st.integers(-5, 500_000), max_size=200)), dtype=np.int64
    )
    expected = np.isin(queries, ref)
    np.testing.assert_array_equal(dv.is_deleted(queries), expected)
    np.testing.assert_array_equal(dv.is_deleted(pa.array(queries)), expected)
    for q, e in zip(queries.tolist()[:20], expected.tolist()[:20]):
        assert dv.is_deleted(q) is e
        assert (q in dv) is e
    start = data.draw(st.integers(0, 420_000))
    length = data.draw(st.integers(0, 130_000))
    keep = dv.keep_mask(start, length)
    assert isinstance(keep, pa.BooleanArray) and len(keep) == length and keep.null_count == 0
    window = np.arange(start, start + length)
    np.testing.assert_array_equal(keep.to_numpy(zero_copy_only=False), ~np.isin(window, ref))
    np.testing.assert_array_equal(
        dv.deleted_mask(start, length).to_numpy(zero_copy_only=False), np.isin(window, ref)
    )
    assert dv.count_deleted(start, length) == int(np.isin(window, ref).sum())


def test_is_deleted_dense_all_positions_and_edge_queries():
    rng = np.random.default_rng(5)
    n = 3_000_000
    deleted = rng.random(n) < 0.2
    deleted[0] = True
    dv = DeletionVector.from_positions(np.flatnonzero(deleted))
    np.testing.assert_array_equal(dv.is_deleted(np.arange(n)), deleted)
    np.testing.assert_array_equal(dv.is_deleted(np.arange(n, dtype=np.uint32)), deleted)
    odd = np.array([-1, -(2**62), 0, 2**40, n + 5], dtype=np.int64)
    np.testing.assert_array_equal(dv.is_deleted(odd), [False, False, True, False, False])
    big = np.array([2**64 - 1, 2**63, 0], dtype=np.uint64)
    np.testing.assert_array_equal(dv.is_deleted(big), [False, False, True])
    assert dv.is_deleted(-1) is False and dv.is_deleted(2**40) is False


def test_is_deleted_sparse_path_high_positions():
    p = np.array([3, 2**33, 2**33 + 1, 2**39], dtype=np.uint64)
    dv = DeletionVector.from_positions(p, bitmap64=True)
    q = np.array([3, 4, 2**33, 2**33 + 2, 2**39, 2**39 + 1, -7], dtype=np.int64)
    np.testing.assert_array_equal(dv.is_deleted(q), [1, 0, 1, 0, 1, 0, 0])
    np.testing.assert_array_equal(
        dv.keep_mask(2**33 - 1, 4).to_numpy(zero_copy_only=False), [1, 0, 0, 1]
    )


@PROPS
@given(
    positions=_position_sets(60_000),
    sizes=st.lists(st.integers(0, 9000), min_size=1, max_size=12),
    data=st.data(),
)
def test_apply_matches_pc_filter(positions, sizes, data):
    bitmap64 = data.draw(st.booleans())
    start = data.draw(st.sampled_from([0, 0, 3, 65_531]))
    total = sum(sizes)
    ids = np.arange(total, dtype=np.int64)
    table = pa.table({"id": ids, "s": pa.array(ids.astype(str))})
    batches, at = [], 0
    for size in sizes:
        batches.append(table.slice(at, size).combine_chunks().to_batches()[0] if size else None)
        at += size
    batches = [
        b
        if b is not None
        else pa.record_batch({"id": pa.array([], pa.int64()), "s": pa.array([], pa.string())})
        for b in batches
    ]
    dv = DeletionVector.from_positions(positions, bitmap64=bitmap64)
    deleted = np.isin(ids + start, np.asarray(positions, dtype=np.int64))
    expected = pc.filter(table, pa.array(~deleted))
    out = list(apply_deletion_vector(iter(batches), dv, start=start))
    assert len(out) == len(batches)
    got = pa.Table.from_batches(out, schema=table.schema)
    assert got.equals(expected)
    whole = list(apply_deletion_vector(table, dv, start))
    assert pa.Table.from_batches(whole, schema=table.schema).equals(expected)
    assert dv.apply(table, start).equals(expected)
    assert list(apply_deletion_vector(batches, None)) == batches


def test_apply_passes_untouched_batches_through():
    batch = pa.record_batch({"x": pa.array(range(10))})
    dv = DeletionVector.from_positions([25])
    out = list(apply_deletion_vector([batch, batch, batch], dv))
    assert out[0] is batch and out[1] is batch
    assert out[2].column(0).to_pylist() == [0, 1, 2, 3, 4, 6, 7, 8, 9]  # position 25 = row 5
    assert dv.apply(batch) is batch


@PROPS
@given(a=_position_sets(3_000_000), b=_position_sets(3_000_000), data=st.data())
def test_merge_is_union(a, b, data):
    k1, k2 = data.draw(st.booleans()), data.draw(st.booleans())
    left = DeletionVector.from_positions(a, bitmap64=k1)
    left.merge(DeletionVector.from_positions(b, bitmap64=k2))
    assert left.bitmap64 == k1
    expected = np.union1d(np.asarray(a, np.int64), np.asarray(b, np.int64)).astype(np.uint64)
    np.testing.assert_array_equal(left.positions(), expected)


@PROPS
@given(
    vectors=st.dictionaries(
        st.text(min_size=1, max_size=12), _position_sets(2**31 - 1), max_size=5
    ),
    bitmap64=st.booleans(),
)
def test_index_file_roundtrip(vectors, bitmap64):
    data, ranges = write_deletion_vectors(vectors, bitmap64=bitmap64)
    assert data[0] == 1
    got = read_deletion_vectors(data, ranges, bitmap64=bitmap64)
    assert list(got) == list(vectors)
    for name, positions in vectors.items():
        expected = np.unique(np.asarray(positions, np.int64)).astype(np.uint64)
        np.testing.assert_array_equal(got[name].positions(), expected)
        offset, length = ranges[name]
        (field,) = struct.unpack(">i", data[offset : offset + 4])
        assert length == (field + 8 if bitmap64 else field)
    in_order = read_deletion_vectors(data)
    assert [v.cardinality for v in in_order.values()] == [v.cardinality for v in got.values()]


def test_delete_inputs():
    dv = DeletionVector()
    dv.delete(3)
    dv.delete(np.int32(4))
    dv.delete(np.array([7, 8], dtype=np.uint16))
    dv.delete(pa.array([9, 10], pa.int8()))
    dv.delete(pa.chunked_array([[11], [12, 13]]))
    dv.delete(range(20, 25))
    dv.delete(range(30, 40, 5))
    dv.delete([])
    dv.delete(np.array([], dtype=np.float64))
    assert dv.positions().tolist() == [3, 4, 7, 8, 9, 10, 11, 12, 13, 20, 21, 22, 23, 24, 30, 35]
    assert dv.checked_delete(50) is True and dv.checked_delete(50) is False
    assert len(dv) == dv.cardinality == 17 and bool(dv)
    assert not DeletionVector(bitmap64=True) and DeletionVector().is_empty()
    copy = dv.copy()
    copy.delete(99)
    assert 99 not in dv and 99 in copy
    assert repr(dv) == "DeletionVector(32-bit, cardinality=17)"


@pytest.mark.parametrize(
    "bad",
    [
        [-1],
        np.array([5, -3]),
        pa.array([1, None], pa.int64()),
        np.array([1.5]),
        pa.array([1.0]),
        np.zeros((2, 2), dtype=np.int64),
        ["a"],
    ],
    ids=["neg", "neg-np", "null", "float-np", "float-arrow", "2d", "str"],
)
def test_delete_rejects_bad_positions(bad):
    for bitmap64 in (False, True):
        dv = DeletionVector(bitmap64=bitmap64)
        with pytest.raises(ArrowIdxError):
            dv.delete(bad)
        assert dv.cardinality == 0


def test_position_limits():
    assert DeletionVector.from_positions([2**31 - 1]).cardinality == 1
    with pytest.raises(PositionOutOfRangeError):
        DeletionVector.from_positions(np.array([2**31], dtype=np.uint64))
    with pytest.raises(PositionOutOfRangeError):
        DeletionVector.from_positions(range(2**31 - 2, 2**31 + 1))
    top = ((2**31 - 2) << 32) | 0x80000000  # Java's OptimizedRoaringBitmap64.MAX_VALUE
    assert DeletionVector.from_positions([top], bitmap64=True).cardinality == 1
    with pytest.raises(PositionOutOfRangeError):
        DeletionVector.from_positions([top + 1], bitmap64=True)
    with pytest.raises(ValueError):  # PositionOutOfRangeError is a ValueError too
        DeletionVector().delete(-5)


def test_with_kind_conversions():
    p = np.array([0, 65536, 2**31 - 1], dtype=np.uint64)
    dv = DeletionVector.from_positions(p)
    assert dv.with_kind(False) is dv
    dv64 = dv.with_kind(True)
    assert dv64.bitmap64 and np.array_equal(dv64.positions(), p)
    assert dv64.with_kind(False) == dv
    assert DeletionVector().with_kind(True) == DeletionVector(bitmap64=True)
    assert DeletionVector(bitmap64=True).with_kind(False) == DeletionVector()
    assert dv != dv64


# --------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------
def _golden(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


@pytest.mark.parametrize("name", ["dv/dv32_mixed.dv", "dv/dv64_mixed.dv", "dv/dv64_above_2p32.dv"])
def test_wrong_magic(name):
    data = bytearray(_golden(name))
    data[4:8] = struct.pack(">i", 12345)
    with pytest.raises(CorruptIndexError, match="magic") as e:
        DeletionVector.deserialize(_refix_crc(bytes(data)), source="x.dv")
    assert e.value.source == "x.dv" and e.value.offset == 4


def test_magic_with_the_other_byte_order():
    # 32-bit magic written little-endian / 64-bit magic written big-endian: neither is valid.
    body = BitMap([1, 2]).serialize()
    for magic in (struct.pack("<i", MAGIC_32), struct.pack(">i", MAGIC_64)):
        payload = magic + body
        rec = struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))
        with pytest.raises(CorruptIndexError, match="magic"):
            DeletionVector.deserialize(rec)


@pytest.mark.parametrize("name", ["dv/dv32_sparse_2k.dv", "dv/dv64_high_sparse.dv"])
def test_crc_mismatch(name):
    data = bytearray(_golden(name))
    data[20] ^= 0x01
    with pytest.raises(CorruptIndexError, match="CRC") as e:
        DeletionVector.deserialize(bytes(data))
    assert e.value.offset == len(data) - 4
    data = bytearray(_golden(name))
    data[-1] ^= 0x80
    with pytest.raises(CorruptIndexError, match="CRC"):
        DeletionVector.deserialize(bytes(data))


@pytest.mark.parametrize("name", ["dv/dv32_one.dv", "dv/dv64_one.dv"])
@pytest.mark.parametrize("length", [-1, 0, 3, 2**31 - 1, 10_000])
def test_length_field_lies(name, length):
    data = bytearray(_golden(name))
    data[0:4] = struct.pack(">i", length)
    with pytest.raises(CorruptIndexError, match="length") as e:
        DeletionVector.deserialize(bytes(data))
    assert e.value.offset == 0


def test_length_field_too_short_for_bitmap():
    data = _golden("dv/dv32_mixed.dv")
    (length,) = struct.unpack(">i", data[:4])
    # Claim 8 fewer bytes and put a valid CRC where the new framing expects it.
    body = data[4 : 4 + length - 8]
    cut = struct.pack(">i", length - 8) + body + struct.pack(">I", zlib.crc32(body))
    with pytest.raises(CorruptIndexError):
        DeletionVector.deserialize(cut)


@pytest.mark.parametrize(
    "name", ["dv/dv32_mixed.dv", "dv/dv64_above_2p32.dv", "dv/dv32_bitmapcontainer_10k.dv"]
)
def test_every_truncation_is_a_clear_error(name):
    data = _golden(name)
    step = 1 if len(data) < 200 else 37
    for cut in list(range(0, len(data), step)) + [len(data) - 1]:
        with pytest.raises(CorruptIndexError):
            DeletionVector.deserialize(data[:cut])


@pytest.mark.parametrize("name", ["dv/dv32_one.dv", "dv/dv64_cross_2p32.dv"])
def test_trailing_garbage(name):
    with pytest.raises(CorruptIndexError, match="trailing") as e:
        DeletionVector.deserialize(_golden(name) + b"\x00")
    assert e.value.offset == len(_golden(name))


def test_64bit_keys_out_of_order_or_repeated():
    def bucket(key: int, values) -> bytes:
        return struct.pack("<i", key) + BitMap(values).serialize()

    ok = _frame(True, struct.pack("<q", 2) + bucket(0, [1]) + bucket(1, [2]))
    assert DeletionVector.deserialize(ok).positions().tolist() == [1, 2**32 + 2]
    for body, msg in [
        (struct.pack("<q", 2) + bucket(1, [1]) + bucket(0, [2]), "ascend"),
        (struct.pack("<q", 2) + bucket(1, [1]) + bucket(1, [2]), "ascend"),
        (struct.pack("<q", 1) + bucket(-1, [1]), "out of range"),
        (struct.pack("<q", 1) + bucket(2**31 - 1, [1]), "out of range"),
        (struct.pack("<q", -1), "bucket count"),
        (struct.pack("<q", 2**31 - 1) + bucket(0, [1]), "bucket count"),
        (struct.pack("<q", 3) + bucket(0, [1]), "bucket count"),
        (struct.pack("<q", 1) + bucket(0, [1]) + b"\x00" * 4, "after the last bucket"),
    ]:
        with pytest.raises(CorruptIndexError, match=msg):
            DeletionVector.deserialize(_frame(True, body))


def test_64bit_sparse_keys_are_read_like_java():
    # Java's reader accepts key gaps (it fills them) and writes every key back.
    body = struct.pack("<q", 2) + struct.pack("<i", 0) + BitMap([7]).serialize()
    body += struct.pack("<i", 3) + BitMap([9]).serialize()
    dv = DeletionVector.deserialize(_frame(True, body))
    assert dv.positions().tolist() == [7, 3 * 2**32 + 9]
    assert dv == DeletionVector.from_positions([7, 3 * 2**32 + 9], bitmap64=True)


def test_32bit_position_above_int_max_in_bytes():
    rec = _frame(False, BitMap([5, 2**31]).serialize())
    with pytest.raises(CorruptIndexError, match="2147483647"):
        DeletionVector.deserialize(rec)


def test_invalid_roaring_content():
    bad = bytearray(BitMap([1, 2, 3]).serialize())
    bad[-2:] = b"\x01\x00"  # array values no longer increasing
    with pytest.raises(CorruptIndexError, match="Roaring"):
        DeletionVector.deserialize(_frame(False, bytes(bad)))
    body = struct.pack("<q", 1) + struct.pack("<i", 0) + bytes(bad)
    with pytest.raises(CorruptIndexError, match="Roaring"):
        DeletionVector.deserialize(_frame(True, body))
    cookie = struct.pack("<I", 99) + b"\x00" * 8
    with pytest.raises(CorruptIndexError, match="cookie"):
        DeletionVector.deserialize(_frame(False, cookie))


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_fuzzed_records_parse_or_raise_cleanly(data):
    name = data.draw(
        st.sampled_from(["dv/dv32_mixed.dv", "dv/dv64_above_2p32.dv", "dv/dv64_mixed.dv"])
    )
    raw = bytearray(_golden(name))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(8, len(raw) - 5))
        raw[at] = data.draw(st.integers(0, 255))
    fixed = _refix_crc(bytes(raw))  # get past the CRC to exercise the bitmap parsers
    try:
        dv = DeletionVector.deserialize(fixed)
    except CorruptIndexError:
        return
    try:
        again = dv.serialize()
    except ArrowIdxError as e:  # a fuzzed high key can need GiBs of empty buckets: refused
        assert "would serialise to" in str(e)
        return
    assert DeletionVector.deserialize(again) == dv


def test_index_file_version_and_bounds():
    data = _golden("dv/dvidx32_5files.index")
    for version in (0, 2, 255):
        with pytest.raises(CorruptIndexError, match="version") as e:
            read_deletion_vectors(bytes([version]) + data[1:])
        assert e.value.offset == 0
    with pytest.raises(CorruptIndexError, match="version"):
        read_deletion_vectors(b"")
    assert read_deletion_vectors(b"\x01") == {}
    with pytest.raises(CorruptIndexError, match="at least 8 bytes"):
        read_deletion_vectors(data + b"\x00\x00")
    with pytest.raises(CorruptIndexError):
        read_deletion_vectors(data[:-1])


def test_index_file_every_truncation():
    case = next(c for c in IDX_CASES if c["id"] == "dvidx64_6files")
    data = _golden(case["file"])
    ranges = {r["dataFile"]: (r["offset"], r["length"]) for r in case["ranges"]}
    starts = {offset for offset, _ in ranges.values()}
    for cut in range(2, len(data)):
        if cut in starts:  # a cut between records leaves a shorter, valid file
            assert len(read_deletion_vectors(data[:cut])) < len(ranges)
        elif cut % 5 == 0 or cut < 40:
            with pytest.raises(CorruptIndexError):
                read_deletion_vectors(data[:cut])
        # with the manifest's ranges a cut anywhere is noticed
        if cut % 11 == 0:
            with pytest.raises(CorruptIndexError):
                read_deletion_vectors(data[:cut], ranges)


def test_index_file_bad_ranges(tmp_path):
    case = next(c for c in IDX_CASES if c["id"] == "dvidx32_5files")
    path = tmp_path / "idx"
    path.write_bytes(_golden(case["file"]))
    r = case["ranges"][0]
    name = r["dataFile"]
    with pytest.raises(CorruptIndexError, match="length") as e:
        read_deletion_vectors(path, {name: (r["offset"], r["length"] + 8)})
    assert e.value.source == str(path) and e.value.offset == r["offset"]
    with pytest.raises(CorruptIndexError, match="cardinality"):
        read_deletion_vectors(path, {name: (r["offset"], r["length"], r["cardinality"] + 1)})
    for offset in (0, -3, 10**9):
        with pytest.raises(CorruptIndexError):
            read_deletion_vectors(path, {name: (offset, r["length"])})
    with pytest.raises(CorruptIndexError):
        read_deletion_vectors(path, {name: (r["offset"] + 1, r["length"])})
    with pytest.raises(CorruptIndexError, match="bitmap64"):
        read_deletion_vectors(path, {name: (r["offset"], r["length"])}, bitmap64=True)
    with pytest.raises(ArrowIdxError):
        read_deletion_vectors(path, {name: "nonsense"})
    # 64-bit ranges record the whole record: the 32-bit meaning is rejected.
    case64 = next(c for c in IDX_CASES if c["id"] == "dvidx64_single")
    r64 = case64["ranges"][0]
    with pytest.raises(CorruptIndexError, match="length"):
        read_deletion_vectors(_golden(case64["file"]), {"f": (r64["offset"], r64["length"] - 8)})


def test_write_rejects_bad_mapping():
    with pytest.raises(ArrowIdxError):
        write_deletion_vectors({1: [1, 2]})
    with pytest.raises(ArrowIdxError, match="'f'"):
        write_deletion_vectors({"f": [-1]})


def test_huge_64bit_key_gap_is_refused_before_allocating():
    dv = DeletionVector.from_positions([2**62], bitmap64=True)  # key 2**30: 12 GiB of empties
    with pytest.raises(ArrowIdxError, match="2 GiB"):
        dv.serialize()


# --------------------------------------------------------------------------------------
# Puffin files
# --------------------------------------------------------------------------------------
def _puffin(blobs_meta, blob_bytes: bytes, flags: bytes = bytes(4)) -> bytes:
    """An independent Puffin framing: magic, blobs, magic, footer JSON, size LE, flags, magic."""
    footer = json.dumps({"blobs": blobs_meta}).encode()
    return (
        b"PFA1" + blob_bytes + b"PFA1" + footer + struct.pack("<i", len(footer)) + flags + b"PFA1"
    )


def test_puffin_roundtrip_and_layout():
    vectors = {"a.parquet": [1, 2, 2**33], "b.parquet": DeletionVector.from_positions(range(10))}
    data, ranges = write_puffin_deletion_vectors(vectors)
    assert data[:4] == b"PFA1" and data[-4:] == b"PFA1"
    footer_size = struct.unpack("<i", data[-12:-8])[0]
    footer = json.loads(data[-12 - footer_size : -12])
    assert [b["type"] for b in footer["blobs"]] == ["deletion-vector-v1"] * 2
    for name, value in vectors.items():
        offset, length = ranges[name]
        dv = (
            value
            if isinstance(value, DeletionVector)
            else DeletionVector.from_positions(value, True)
        )
        assert data[offset : offset + length] == dv.to_puffin_blob()
    back = read_puffin_deletion_vectors(data)
    assert back["a.parquet"].positions().tolist() == [1, 2, 2**33]
    assert back["b.parquet"] == DeletionVector.from_positions(range(10), bitmap64=True)


def test_puffin_bad_input():
    blob = DeletionVector.from_positions([4, 9], bitmap64=True).serialize()
    meta = {
        "type": "deletion-vector-v1",
        "fields": [],
        "snapshot-id": -1,
        "sequence-number": -1,
        "offset": 4,
        "length": len(blob),
        "properties": {"referenced-data-file": "f", "cardinality": "2"},
    }
    assert read_puffin_deletion_vectors(_puffin([meta], blob))["f"].cardinality == 2
    other = dict(meta, type="apache-datasketches-theta-v1")
    assert read_puffin_deletion_vectors(_puffin([other], blob)) == {}
    bad = [
        (b"PFA0" + _puffin([meta], blob)[4:], "magic"),
        (_puffin([meta], blob, flags=b"\x01\x00\x00\x00"), "compressed"),
        (_puffin([meta], blob)[:-12] + struct.pack("<i", 10**6) + bytes(4) + b"PFA1", "footer"),
        (b"PFA1" + blob + b"PFA1{not json" + struct.pack("<i", 9) + bytes(4) + b"PFA1", "JSON"),
        (_puffin([dict(meta, length=len(blob) + 50)], blob), "outside"),
        (_puffin([dict(meta, offset=0)], blob), "outside"),
        (_puffin([dict(meta, **{"compression-codec": "zstd"})], blob), "compressed"),
        (_puffin([dict(meta, properties={"cardinality": "2"})], blob), "metadata"),
        (
            _puffin(
                [dict(meta, properties={"referenced-data-file": "f", "cardinality": "3"})], blob
            ),
            "cardinality",
        ),
        (_puffin([dict(meta, length=len(blob) - 1)], blob), "trailing|length|CRC"),
    ]
    rec32 = DeletionVector.from_positions([4, 9]).serialize()
    bad.append((_puffin([dict(meta, length=len(rec32))], rec32), "32-bit"))
    for data, msg in bad:
        with pytest.raises(CorruptIndexError, match=msg):
            read_puffin_deletion_vectors(data)
    with pytest.raises(CorruptIndexError):
        read_puffin_deletion_vectors(b"PFA1")


def test_docs_examples_run(tmp_path, monkeypatch):
    """Every ```python block of docs/deletion-vectors.md runs, in order, in one namespace."""
    doc = Path(__file__).resolve().parents[1] / "docs" / "deletion-vectors.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(doc), "exec"), namespace)


@pytest.mark.parametrize("bitmap64", [False, True])
def test_kept_rows_are_the_rows_not_deleted(bitmap64):
    """``kept(rows)`` drops exactly the deleted positions from a 32-bit bitmap of rows (an
    index answer), for either kind of vector, empty or not, leaving ``rows`` unchanged."""
    rows = BitMap([0, 5, 6, 70_000, 2**31 - 1, 2**32 - 1])
    for deleted in ([], [5, 7, 70_000, 2**31 - 1], [0, 1, 2]):
        dv = DeletionVector.from_positions(deleted, bitmap64=bitmap64)
        before = BitMap(rows)
        assert dv.kept(rows) == BitMap(sorted(set(rows) - set(deleted)))
        assert rows == before
