"""Reads on S3 plan from the manifest (issue 51): no listing of the data files, the lake
index decides a needle's files, and data files are read with ``If-Match`` on the ETag the
manifest recorded, so a file replaced in place between planning and reading is read as it
is now. Reference: ``Table.filter`` on the rows put into the bucket (moto)."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx import facts
from arrowidx.lake import plan as plan_module
from arrowidx.objectstore import ObjectStore

sys.path.insert(0, str(Path(__file__).resolve().parent))

FILES, ROWS = 24, 50
OPTIONS = {"file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "tag"}


def _body(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _file(i: int, ids: np.ndarray) -> pa.Table:
    return pa.table({"id": ids, "tag": [f"t{i % 3}"] * len(ids)})


@pytest.fixture
def lake(s3, request):
    bucket = f"lix-{os.getpid()}-{request.node.name[:20].replace('_', '-').lower()}"
    s3.create_bucket(bucket)
    client = s3.client()
    ids = np.random.default_rng(3).permutation(FILES * ROWS)
    tables = {}
    for i in range(FILES):
        tables[f"f{i:02d}.parquet"] = _file(i, ids[i * ROWS : (i + 1) * ROWS])
        client.put_object(Bucket=bucket, Key=f"lake/f{i:02d}.parquet", Body=_body(tables[f"f{i:02d}.parquet"]))
    uri = f"s3://{bucket}/lake"
    arrowidx.build(uri, OPTIONS, storage_options=s3.storage_options(), progress=False)
    return uri, client, bucket, tables, ids


def _rows(tables: dict) -> pa.Table:
    return pa.concat_tables(tables.values())


def test_a_needle_lists_no_data_files_and_asks_only_its_files_index(s3, lake, monkeypatch):
    uri, _, _, tables, ids = lake
    listed, asked = [], []
    real_list, real_decide = ObjectStore.list, plan_module.Planner.decide
    monkeypatch.setattr(ObjectStore, "list", lambda self, folder, **kw: listed.append(folder) or real_list(self, folder, **kw))
    monkeypatch.setattr(plan_module.Planner, "decide", lambda self, rel, e, b=None: asked.append(rel) or real_decide(self, rel, e, b))
    facts.clear()
    data = arrowidx.dataset(uri, storage_options=s3.storage_options())
    for needle in ids[:5].tolist():
        asked.clear()
        expr = pc.field("id") == needle
        assert data.to_table(filter=expr).equals(_rows(tables).filter(expr))
        assert len(asked) == 1, asked
    expr = pc.field("id").isin(ids[100:110].tolist())
    assert data.to_table(filter=expr).sort_by("id").equals(_rows(tables).filter(expr).sort_by("id"))
    # only index folders are listed (the sidecar, and where a lake indexed before keeps them), never the data's
    assert all(folder.rstrip("/").endswith(("/_arrowidx", ".arrowidx")) for folder in listed), f"listed {listed}"


def test_a_file_replaced_in_place_between_planning_and_reading_is_read_as_it_is_now(s3, lake, monkeypatch):
    uri, client, bucket, tables, ids = lake
    facts.clear()
    data = arrowidx.dataset(uri, storage_options=s3.storage_options())
    needle = int(ids[5 * ROWS + 7])  # in f05
    replaced = _file(5, np.array([needle, needle, 10**6], np.int64))  # the needle twice now, another size and ETag
    real_route = plan_module.Planner.route

    def route_then_replace(self, expr):
        planned = real_route(self, expr)
        client.put_object(Bucket=bucket, Key="lake/f05.parquet", Body=_body(replaced))  # after planning, before reading
        monkeypatch.setattr(plan_module.Planner, "route", real_route)
        return planned

    monkeypatch.setattr(plan_module.Planner, "route", route_then_replace)
    expr = pc.field("id") == needle
    got = data.to_table(filter=expr)
    tables = {**tables, "f05.parquet": replaced}
    assert got.equals(_rows(tables).filter(expr)), got  # the new content's two rows, not the indexed one
    # and the same (replaced before this query) through Polars' reader and a streaming read
    pl = pytest.importorskip("polars")
    frame = arrowidx.polars.scan(uri, storage_options=s3.storage_options()).filter(pl.col("id") == needle).collect()
    assert sorted(frame["id"].to_list()) == [needle, needle]
    batches = list(arrowidx.dataset(uri, storage_options=s3.storage_options()).to_batches(filter=expr))
    assert sum(b.num_rows for b in batches) == 2


def test_a_file_removed_from_the_bucket_is_not_read_and_refresh_lists(s3, lake):
    uri, client, bucket, tables, ids = lake
    facts.clear()
    data = arrowidx.dataset(uri, storage_options=s3.storage_options())
    gone = int(ids[2 * ROWS + 1])  # in f02
    client.delete_object(Bucket=bucket, Key="lake/f02.parquet")
    expr = pc.field("id").isin([gone, int(ids[3 * ROWS])])
    left = {k: v for k, v in tables.items() if k != "f02.parquet"}
    assert data.to_table(filter=expr).equals(_rows(left).filter(expr))
    extra = _file(99, np.array([10**7], np.int64))  # added without a build: not in the manifest
    client.put_object(Bucket=bucket, Key="lake/g99.parquet", Body=_body(extra))
    expr = pc.field("id") == 10**7
    assert arrowidx.dataset(uri, storage_options=s3.storage_options()).to_table(filter=expr).num_rows == 0
    data = arrowidx.dataset(uri, storage_options=s3.storage_options())
    data.refresh(listing=True)  # an explicit refresh lists: the new file is read in full
    assert data.to_table(filter=expr).num_rows == 1
