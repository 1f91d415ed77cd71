"""Conditional reads on a real S3 server (moto): an object is read with ``If-Match`` on the
ETag a listing or a manifest recorded, so an object replaced since is
``ObjectChangedError`` (never its new bytes taken for the old), whole or by ranges.

Reference: the bytes put into the bucket with boto3."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arrowidx.objectstore import open_store
from arrowidx.storage import ObjectChangedError

sys.path.insert(0, str(Path(__file__).resolve().parent))


def test_if_match_reads_the_listed_object_and_refuses_a_replaced_one(s3):
    bucket = f"cond-{os.getpid()}"
    s3.create_bucket(bucket)
    client = s3.client()
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"x": list(range(1000))}), sink)
    first = sink.getvalue().to_pybytes()
    client.put_object(Bucket=bucket, Key="lake/part-0.parquet", Body=first)
    store, root = open_store(f"s3://{bucket}/lake", s3.storage_options())
    (info,) = store.list(root)
    assert info.stamp is not None
    assert store.get_if_same(info.path, info) == first
    with store.open_if_same(info.path, info) as f:
        assert pq.read_table(f).num_rows == 1000  # ranged reads, each with If-Match
    reader = store.open_if_same(info.path, info)
    client.put_object(Bucket=bucket, Key="lake/part-0.parquet", Body=first[:-8] + b"PAR1PAR1"[: 8])  # same size
    with pytest.raises(ObjectChangedError, match="part-0.parquet"):
        store.get_if_same(info.path, info)
    with pytest.raises(ObjectChangedError):
        reader.read_at(100, 0)
    client.delete_object(Bucket=bucket, Key="lake/part-0.parquet")
    with pytest.raises(FileNotFoundError):
        store.get_if_same(info.path, info)
