"""A misspelt column name (issue 47, item 5) raises arrowidx's ``UnknownColumnError`` naming it,
the closest column and the schema's columns, and it is also the class pyarrow raises for the
same call (``ArrowInvalid``), so existing ``except`` clauses keep working; ``columns="id"`` is
the column ``id``, not its characters (``../shared/repro/16.py``).

References: pyarrow.dataset's own exception for the same call; the rows written."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import arrowidx
import arrowidx.paimon
from arrowidx.errors import UnknownColumnError  # (importable from arrowidx.errors)

TABLE = pa.table({"id": pa.array(range(10), pa.int64()), "status": ["a", "b"] * 5})
PAIMON_TABLE = os.path.join(os.path.dirname(__file__), "paimon_tables", "shapes-0.9.0", "db.db", "evolve")


@pytest.fixture(params=["indexed", "bare"])
def lake(tmp_path, request):
    root = str(tmp_path)
    pq.write_table(TABLE, os.path.join(root, "p.parquet"))
    if request.param == "indexed":
        arrowidx.build(root, {"file-index.bitmap.columns": "status"}, progress=False)
    return root


BAD_FILTER = pc.field("stauts") == "a"


def filter_calls(root):
    data = arrowidx.dataset(root)
    return {
        "to_table": lambda: data.to_table(filter=BAD_FILTER),
        "to_table(columns)": lambda: data.to_table(filter=BAD_FILTER, columns=["id"]),
        "scanner": lambda: data.scanner(filter=BAD_FILTER).to_table(),
        "count_rows": lambda: data.count_rows(filter=BAD_FILTER),
        "to_batches": lambda: list(data.to_batches(filter=BAD_FILTER)),
        "explain": lambda: data.explain(BAD_FILTER),
        "delete": lambda: arrowidx.delete(root, BAD_FILTER, progress=False),
    }


def test_pyarrow_raises_arrow_invalid_for_the_same_calls(lake):
    reference = ds.dataset(lake, format="parquet")
    for call in (lambda: reference.to_table(filter=BAD_FILTER), lambda: reference.to_table(columns=["sttus"])):
        with pytest.raises(pa.ArrowInvalid):
            call()


@pytest.mark.parametrize("call", ["to_table", "to_table(columns)", "scanner", "count_rows", "to_batches", "explain", "delete"])
def test_a_misspelt_filter_field_is_named(lake, call):
    with pytest.raises(UnknownColumnError) as info:
        filter_calls(lake)[call]()
    error = info.value
    assert isinstance(error, pa.ArrowInvalid) and isinstance(error, ValueError) and isinstance(error, arrowidx.ArrowIdxError)
    assert str(error) == f"{lake}: no column 'stauts' in filter= (did you mean 'status'?); the columns are: id, status"
    assert (error.column, error.columns) == ("stauts", ["id", "status"])
    assert arrowidx.dataset(lake).count_rows() == 10  # (the delete deleted nothing)


@pytest.mark.parametrize("call", ["to_table", "scanner", "to_batches"])
def test_a_misspelt_column_is_named_when_called(lake, call):
    data = arrowidx.dataset(lake)
    with pytest.raises(UnknownColumnError) as info:
        getattr(data, call)(columns=["id", "sttus"])  # (to_batches and scanner raise here, not when iterated)
    assert isinstance(info.value, pa.ArrowInvalid)
    assert str(info.value) == f"{lake}: no column 'sttus' in columns= (did you mean 'status'?); the columns are: id, status"
    with pytest.raises(UnknownColumnError, match="no column 'zzz' in columns=; the columns are: id, status"):
        getattr(data, call)(columns=["zzz"])  # nothing close: no suggestion


def test_one_name_is_one_column(lake):
    data = arrowidx.dataset(lake)
    expected = pq.read_table(os.path.join(lake, "p.parquet"), columns=["status"]).filter(pc.field("status") == "b")
    assert data.to_table(filter=pc.field("status") == "b", columns="status").equals(expected)
    assert data.scanner(columns="id").to_table().equals(TABLE.select(["id"]))
    assert pa.Table.from_batches(list(data.to_batches(columns="id"))).equals(TABLE.select(["id"]))
    with pytest.raises(UnknownColumnError, match="no column 'ids' in columns= \\(did you mean 'id'\\?\\)"):
        data.to_table(columns="ids")


def test_paimon_tables_name_the_column():
    table = arrowidx.paimon.open_table(PAIMON_TABLE)
    names = ", ".join(table.schema.names)
    for call in (lambda: table.to_table(filter=pc.field("stats") == "x"), lambda: table.count_rows(filter=pc.field("stats") == "x"),
                 lambda: table.explain(pc.field("stats") == "x"), lambda: list(table.to_batches(filter=pc.field("stats") == "x"))):  # fmt: skip
        with pytest.raises(UnknownColumnError) as info:
            call()
        assert isinstance(info.value, pa.ArrowInvalid)
        assert str(info.value) == f"{table.path}: no column 'stats' in filter= (did you mean 'status'?); the columns are: {names}"
    for call in (lambda: table.to_table(columns=["id", "ful_name"]), lambda: table.scanner(columns=["ful_name"]),
                 lambda: table.to_batches(columns=["ful_name"])):  # fmt: skip
        with pytest.raises(UnknownColumnError) as info:
            call()
        assert str(info.value) == f"{table.path}: no column 'ful_name' in columns= (did you mean 'full_name'?); the columns are: {names}"
    assert table.to_table(columns="id").equals(table.to_table(columns=["id"]))
    assert table.to_table(columns="id").column_names == ["id"]
