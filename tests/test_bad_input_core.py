"""Bad input for the container, bloom-filter and bitmap readers: every failure is a clear
arrowidx error naming the source and offset, never a crash, a hang or a giant allocation."""

from __future__ import annotations

import tracemalloc

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arrowidx import ArrowIdxError, CorruptIndexError, FileIndex, OptionError, write_file_index
from arrowidx.index.container import MAGIC, UnsupportedVersionError, write_container

from .golden_support import golden_cases, index_bytes, load_table

SAMPLES = [
    "i32_mixed_2k__bitmap__version-1",
    "i32_mixed_2k__bitmap",
    "str_lowcard_10k__bitmap__index-block-size-256b_version-2",
    "i32_lowcard_10k__bloom-filter__fpp-0.01_items-10000",
    "multi_4k__empty_index_flag",
]


def _case(case_id: str) -> dict:
    return next(c for c in golden_cases() if c["id"] == case_id)


def _probe(index: FileIndex, schema: pa.Schema) -> None:
    """Ask each indexed column a few questions (forces every lazy decode)."""
    for column in index.columns:
        if schema.get_field_index(column) < 0:
            continue
        typ = schema.field(column).type
        f = pc.field(column)
        sample = pa.scalar("x" if pa.types.is_string(typ) else 1).cast(typ) if not pa.types.is_boolean(typ) else pa.scalar(True)
        for expr in (f == sample, ~(f == sample), f.is_null(), f.isin(pa.array([sample.as_py()], typ))):
            result = index.evaluate(expr)
            result.remain  # noqa: B018 - materialise the bitmap


@pytest.mark.parametrize("case_id", SAMPLES)
def test_truncated_at_every_offset(case_id):
    case = _case(case_id)
    data = index_bytes(case)
    schema = load_table(case["dataset"]).schema
    for cut in range(len(data)):
        with pytest.raises(CorruptIndexError) as info:
            _probe(FileIndex(data[:cut], schema), schema)
        assert "<bytes>" in str(info.value)


def test_wrong_magic_names_source_and_offset(tmp_path):
    data = bytearray(index_bytes(_case(SAMPLES[0])))
    data[0] ^= 0xFF
    path = tmp_path / "part-0.parquet.index"
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptIndexError, match=r"part-0\.parquet\.index at byte 0: not a Paimon file-index container"):
        FileIndex(path, load_table(_case(SAMPLES[0])["dataset"]).schema)


def test_newer_container_version_is_a_clear_error():
    data = bytearray(index_bytes(_case(SAMPLES[0])))
    data[8:12] = (2).to_bytes(4, "big")
    with pytest.raises(UnsupportedVersionError, match="version 2"):
        FileIndex(bytes(data), pa.schema([("c", pa.int32())]))


@pytest.mark.parametrize("field_offset,value", [(12, -1), (12, 2**31 - 1), (16, 2**31 - 1), (16, -5)])
def test_absurd_header_numbers(field_offset, value):
    data = bytearray(index_bytes(_case(SAMPLES[0])))
    data[field_offset : field_offset + 4] = value.to_bytes(4, "big", signed=True)
    with pytest.raises(CorruptIndexError):
        FileIndex(bytes(data), pa.schema([("c", pa.int32())]))


def _rewrap(case_id: str, mutate) -> tuple[bytes, pa.Schema]:
    """Re-pack a single-index golden container with its index bytes mutated."""
    case = _case(case_id)
    data = index_bytes(case)
    (layout,) = case["containerLayout"]
    body = bytearray(data[layout["start"] : layout["start"] + layout["length"]])
    body = mutate(body)
    return write_container({layout["column"]: {layout["indexType"]: bytes(body)}}), load_table(case["dataset"]).schema


@pytest.mark.parametrize("case_id", SAMPLES[:4])
def test_huge_counts_inside_index(case_id):
    def mutate(body):
        body[5:9] = (2**31 - 1).to_bytes(4, "big")  # bitmap value count / bloom bits
        body[0:4] = body[0:4] if body[0] in (1, 2) else (2**31 - 1).to_bytes(4, "big")
        return body

    data, schema = _rewrap(case_id, mutate)
    tracemalloc.start()
    try:
        _probe(FileIndex(data, schema), schema)
    except ArrowIdxError:
        pass
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 * len(data) + (8 << 20), f"allocated {peak} bytes for a {len(data)}-byte input"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case_id=st.sampled_from(SAMPLES[:4]), flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=4))
def test_random_corruption_raises_only_arrowidx_errors(case_id, flips):
    def mutate(body):
        for pos, xor in flips:
            body[pos % len(body)] ^= xor
        return body

    data, schema = _rewrap(case_id, mutate)
    try:
        _probe(FileIndex(data, schema), schema)
    except ArrowIdxError:
        pass


def test_unknown_index_type_reads_as_remain():
    table = pa.table({"c": pa.array([1, 2, 3], pa.int32())})
    data = write_container({"c": {"some-future-index": b"\x00\x01\x02"}})
    index = FileIndex(data, table.schema)
    assert index.columns == {"c": ["some-future-index"]}
    assert index.evaluate(pc.field("c") == 7).kind == "remain"


@pytest.mark.parametrize(
    "options,match",
    [
        ({"file-index.bitmap.columns": "c", "file-index.bitmap.c.verison": "1"}, "verison"),
        ({"file-index.bitmaps.columns": "c"}, "unknown option"),
        ({"file-index.bitmap.columns": "c", "file-index.bitmap.c.version": "3"}, "1 or 2"),
        ({"file-index.bitmap.columns": "c", "file-index.bitmap.c.index-block-size": "lots"}, "not a size"),
        ({"file-index.bloom-filter.columns": "c", "file-index.bloom-filter.c.fpp": "2"}, r"\(0, 1\)"),
        ({"file-index.bloom-filter.columns": "c", "file-index.bloom-filter.c.items": "-3"}, "items"),
        ({"file-index.bloom-filter.columns": "nope"}, "not a column"),
        ({"file-index.bitmap.d.version": "1"}, "not listed"),
    ],
)
def test_wrong_options_are_option_errors(options, match):
    table = pa.table({"c": pa.array([1, 2, 3], pa.int32())})
    with pytest.raises(OptionError, match=match):
        write_file_index(table, options)


def test_magic_constant():
    assert MAGIC == 1493475289347502
