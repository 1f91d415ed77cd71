"""Requests of a delete on S3 (issue 51): counted by a proxy in front of the moto server
(``bench/s3_proxy.py``), each operation in a new process as a user's would be. Every delete
of a run stays within 20 requests (not only the first: each commit adds to the file table's
segments), reads at most ``MAX_SEGMENTS`` segments and writes one, lists no data file, and
leaves the rows ``Table.filter`` gives on the files' rows minus the deleted ids; a needle
after the deletes stays within 12. A crash at each write point of a delete leaves the
previous version readable, a file replaced in place is read as it is now, and a ``LATEST``
naming a lost version is still refused when its ETag is not read."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx import facts
from arrowidx.errors import CommitUnsupportedError, MissingManifestError
from arrowidx.lake import filetable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "bench"))
from s3_proxy import CountingProxy  # noqa: E402
from s3_support import ACCESS_KEY, REGION, SECRET_KEY  # noqa: E402

SRC = str(HERE.parent / "src")
FILES, ROWS = 40, 50
OPTIONS = {"file-index.bloom-filter.columns": "id"}
DELETE_AT_MOST, NEEDLE_AT_MOST = 20, 12

CHILD = textwrap.dedent("""
    import json, sys
    import pyarrow.compute as pc
    import arrowidx
    what, uri, value = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if what == "delete":
        print(json.dumps(arrowidx.delete(uri, pc.field("id") == value, progress=False).rows_deleted))
    else:
        print(json.dumps(arrowidx.dataset(uri).to_table(filter=pc.field("id") == value).column("id").to_pylist()))
""")


def _body(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


@pytest.fixture(scope="module")
def proxy(s3):
    counting = CountingProxy(s3.endpoint)
    yield counting
    counting.stop()


@pytest.fixture
def lake(s3, request):
    bucket = f"dreq-{os.getpid()}-{zlib.crc32(request.node.name.encode()):08x}"
    s3.create_bucket(bucket)
    client = s3.client()
    ids = np.random.default_rng(7).permutation(FILES * ROWS).astype(np.int64)
    tables = {}
    for i in range(FILES):
        name = f"part-{i:03d}.parquet"
        tables[name] = pa.table({"id": ids[i * ROWS : (i + 1) * ROWS], "tag": [f"t{i % 3}"] * ROWS})
        client.put_object(Bucket=bucket, Key=f"lake/{name}", Body=_body(tables[name]))
    uri = f"s3://{bucket}/lake"
    arrowidx.build(uri, OPTIONS, storage_options=s3.storage_options(), progress=False)
    return uri, bucket, tables, ids


def run(proxy: CountingProxy, what: str, uri: str, value: int, faults: str = "") -> tuple[object, list, int]:
    """``what`` (delete or needle) in a new process through the proxy: its answer, the
    requests it made (kind, path, bytes) and its exit code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k not in ("ARROWIDX_SINGLE_WRITER", "ARROWIDX_FAULTS")}
    env.update({"AWS_ENDPOINT_URL": proxy.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_REGION": REGION, "AWS_ALLOW_HTTP": "true", "PYTHONPATH": SRC})  # fmt: skip
    if faults:
        env["ARROWIDX_FAULTS"] = faults
    before = proxy.snapshot()
    done = subprocess.run([sys.executable, "-c", CHILD, what, uri, str(value)], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    log = proxy.log_since(before)
    if done.returncode == 0:
        return json.loads(done.stdout.strip().splitlines()[-1]), log, 0
    assert done.returncode == -9 or not faults, done.stderr[-2000:]
    return None, log, done.returncode


def truth(s3, bucket: str, tables: dict, deleted: set[int]) -> pa.Table:
    """Every row of the bucket's data files (``pq.read_table`` of each object as it is now,
    checked against the rows the test wrote), minus ``deleted`` (``Table.filter``)."""
    client = s3.client()
    read = {name: pq.read_table(io.BytesIO(client.get_object(Bucket=bucket, Key=f"lake/{name}")["Body"].read()))
            for name in sorted(tables)}  # fmt: skip
    assert all(read[name].equals(tables[name]) for name in tables)
    rows = pa.concat_tables(read.values())
    return rows.filter(~pc.field("id").isin(sorted(deleted))).sort_by("id") if deleted else rows.sort_by("id")


def read_all(s3, uri: str) -> pa.Table:
    facts.clear()
    return arrowidx.dataset(uri, storage_options=s3.storage_options()).to_table().sort_by("id")


def _kinds(log: list) -> str:
    return "\n".join(f"{kind:9} {path}" for kind, path, _ in log)


def test_every_delete_of_a_run_stays_within_its_requests_and_a_needle_after_them(s3, proxy, lake):
    uri, bucket, tables, ids = lake
    # six deletes in a row, the fifth in a file a previous one changed (its old vector is read and merged)
    values = [int(ids[f * ROWS + 3]) for f in (1, 5, 9, 13)] + [int(ids[5 * ROWS + 30]), int(ids[20 * ROWS])]
    deleted: set[int] = set()
    for n, value in enumerate(values, 1):
        rows, log, _ = run(proxy, "delete", uri, value)
        assert rows == 1
        deleted.add(value)
        assert read_all(s3, uri).equals(truth(s3, bucket, tables, deleted)), f"delete {n}: the rows left are not right"
        where = f"delete {n} made {len(log)} requests:\n{_kinds(log)}"
        assert len(log) <= DELETE_AT_MOST, where
        segment_gets = [p for k, p, _ in log if k.startswith("GET") and "/segments/" in p]
        segment_puts = [p for k, p, _ in log if k == "PUT" and "/segments/" in p]
        assert len(segment_gets) <= filetable.MAX_SEGMENTS and len(segment_puts) == 1, where
        assert not [p for k, p, _ in log if k == "LIST" and "prefix=lake%2F&" in p + "&"], where  # no listing of the data files
        assert len([p for k, p, _ in log if "put-if-absent-probe" in p]) == 1, where  # (the build left the probe)
        assert not [p for k, p, _ in log if k.startswith("GET") and p.endswith("/LATEST")], where  # its ETag says what it holds
    for value in (values[2], int(ids[30 * ROWS + 4])):
        found, log, _ = run(proxy, "needle", uri, value)
        assert found == ([] if value in deleted else [value])
        assert len(log) <= NEEDLE_AT_MOST, f"a needle after {len(values)} deletes made {len(log)} requests:\n{_kinds(log)}"
        assert len([p for k, p, _ in log if "/segments/" in p]) <= filetable.MAX_SEGMENTS


@pytest.mark.parametrize("fault", ["deletion-written=kill", "segment-written=kill", "before-commit=kill",
                                   "committed=kill", "latest-written=kill"])  # fmt: skip
def test_a_crash_at_each_write_point_of_a_delete_leaves_a_readable_version(s3, proxy, lake, fault):
    uri, bucket, tables, ids = lake
    first, second, third = (int(ids[at]) for at in (2 * ROWS + 1, 3 * ROWS + 1, 2 * ROWS + 9))  # the third in the first's file
    assert run(proxy, "delete", uri, first)[0] == 1
    _, _, code = run(proxy, "delete", uri, second, faults=fault)
    assert code == -9, f"the kill point {fault} was not reached"
    committed = fault.startswith(("committed", "latest"))
    deleted = {first, second} if committed else {first}
    assert read_all(s3, uri).equals(truth(s3, bucket, tables, deleted))  # the previous version, or the new one once created
    assert run(proxy, "delete", uri, third)[0] == 1  # the next delete commits on top (never undoing one)
    assert read_all(s3, uri).equals(truth(s3, bucket, tables, deleted | {third}))


def test_a_file_replaced_in_place_is_deleted_from_as_it_is_now(s3, proxy, lake):
    uri, bucket, tables, ids = lake
    needle = int(ids[7 * ROWS + 2])  # in part-007, which the index keeps for it
    replaced = pa.table({"id": pa.array([needle, needle, 10**6], pa.int64()), "tag": ["n"] * 3})
    s3.client().put_object(Bucket=bucket, Key="lake/part-007.parquet", Body=_body(replaced))  # no build since
    rows, log, _ = run(proxy, "delete", uri, needle)
    assert rows == 2  # both rows of the new content (the conditional read failed: planned again from a listing)
    tables = {**tables, "part-007.parquet": replaced}
    assert read_all(s3, uri).equals(truth(s3, bucket, tables, {needle}))


def test_a_latest_naming_a_lost_version_is_refused_though_its_etag_is_not_read(s3, proxy, lake):
    uri, bucket, tables, ids = lake
    assert run(proxy, "delete", uri, int(ids[4]))[0] == 1
    assert run(proxy, "delete", uri, int(ids[ROWS + 4]))[0] == 1
    client = s3.client()
    side = "_lake.arrowidx"
    client.delete_object(Bucket=bucket, Key=f"{side}/manifest-00000003.json")  # lost; LATEST still names 3
    facts.clear()
    with pytest.raises(MissingManifestError, match="version 3"):
        arrowidx.dataset(uri, storage_options=s3.storage_options()).to_table()


def test_a_kept_probe_does_not_vouch_for_a_server_that_ignores_the_condition(s3, lake, monkeypatch):
    import obstore

    uri, bucket, tables, ids = lake  # built: the probe is kept in the index folder
    assert "_lake.arrowidx/put-if-absent-probe" in s3.keys(bucket, "_lake.arrowidx/")
    real_put = obstore.put

    def put_ignoring_mode(store, path, data, **kwargs):  # what a server ignoring If-None-Match does
        kwargs.pop("mode", None)
        return real_put(store, path, data, **kwargs)

    monkeypatch.setattr(obstore, "put", put_ignoring_mode)
    before = s3.keys(bucket, "_lake.arrowidx/")
    with pytest.raises(CommitUnsupportedError, match="conditional_put"):
        arrowidx.delete(uri, pc.field("id") == int(ids[0]), progress=False,
                        storage_options={**s3.storage_options(), "user_agent": "a-store-of-its-own"})  # fmt: skip
    assert set(s3.keys(bucket, "_lake.arrowidx/")) == set(before) - {"_lake.arrowidx/put-if-absent-probe"}
    monkeypatch.setattr(obstore, "put", real_put)
    assert read_all(s3, uri).equals(truth(s3, bucket, tables, set()))
