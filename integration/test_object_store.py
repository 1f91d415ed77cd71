"""Lakes on an S3 emulator (moto_server on 127.0.0.1, started here): build, delete, query,
explain, vacuum, the CLI and ``arrowidx.polars.scan`` on ``s3://`` lakes, every answer
compared with the rows in memory minus the deleted ones (``Table.filter``); the commit
protocol with writers ordered by the fault hook, on a store double, and with four
processes deleting at once; errors that say what went wrong."""

from __future__ import annotations

import json
import os
import posixpath
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.errors import (
    AccessDeniedError,
    CommitConflictError,
    CommitUnsupportedError,
    OptionError,
)
from arrowidx.lake.commit import commit_manifest, load_manifest, read_manifest
from arrowidx.lake.layout import physical
from arrowidx.lake.manifest import Manifest
from arrowidx.lake.source import open_lake
from arrowidx.objectstore import ObjectStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3_support import S3Server  # noqa: E402

SRC = str(Path(__file__).resolve().parents[1] / "src")
OPTIONS = {"file-index.bloom-filter.columns": "id,user_id", "file-index.bitmap.columns": "status",
           "file-index.range-bitmap.columns": "amount"}  # fmt: skip
FILES, ROWS = 4, 3000


@pytest.fixture
def aws_env(s3, monkeypatch):
    """Only the standard AWS_* variables name the server (and no single-writer escape hatch)."""
    for name in list(os.environ):
        if name.startswith("AWS_") or name == "ARROWIDX_SINGLE_WRITER":
            monkeypatch.delenv(name)
    for name, value in s3.environment().items():
        monkeypatch.setenv(name, value)
    return s3.environment()


_BUCKETS = iter(range(10**6))


def _table(seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = FILES * ROWS
    amount = rng.normal(100, 40, n)
    amount[rng.choice(n, 30, replace=False)] = np.nan
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "user_id": pa.array(rng.integers(0, 2000, n)),
        "status": pa.array(rng.choice(["new", "paid", "shipped", "lost", "returned"], n, p=[.4, .3, .2, .05, .05])),
        "amount": pa.array(amount, mask=rng.random(n) < 0.01),
    })  # fmt: skip


def _lake(s3: S3Server, seed: int = 1) -> tuple[str, pa.Table]:
    """A new bucket holding a Parquet lake of FILES files; its rows in memory."""
    bucket = f"lake-{os.getpid()}-{next(_BUCKETS)}"
    s3.create_bucket(bucket)
    table = _table(seed)
    fs = pafs.S3FileSystem(endpoint_override=s3.endpoint, access_key="k", secret_key="s", region="us-east-1")
    for i in range(FILES):
        pq.write_table(table.slice(i * ROWS, ROWS), f"{bucket}/lake/part-{i}.parquet", filesystem=fs, row_group_size=500)
    return f"s3://{bucket}/lake", table


def _expected(table: pa.Table, expr, deleted: set[int], columns=None) -> pa.Table:
    live = table.filter(pc.invert(pc.is_in(table["id"], pa.array(sorted(deleted), pa.int64())))) if deleted else table
    out = live.filter(expr) if expr is not None else live
    return out.select(columns) if columns else out


def _same(got: pa.Table, want: pa.Table, what: str) -> None:
    assert got.num_rows == want.num_rows, f"{what}: {got.num_rows} rows, expected {want.num_rows}"
    got, want = _nan_free(got.sort_by("id")), _nan_free(want.sort_by("id").select(got.column_names))
    assert got.equals(want), what


def _nan_free(table: pa.Table) -> pa.Table:
    """NaN as a marker value (Table.equals holds NaN unequal to itself)."""
    for i, field in enumerate(table.schema):
        if pa.types.is_floating(field.type):
            column = table.column(i)
            table = table.set_column(i, field, pc.if_else(pc.is_nan(column), -1e300, column))
    return table


QUERIES = [
    pc.field("id") == 4321,
    pc.field("user_id") == 77,
    pc.field("status") == "lost",
    pc.field("status").isin(["lost", "returned"]) & (pc.field("amount") > 120),
    (pc.field("amount") > 180) | (pc.field("id") < 10),
    pc.field("amount") < 0,
    pc.field("id") == -1,
    None,
]


def test_lake_on_s3_with_only_aws_variables(s3, aws_env):
    """build, delete, query, explain, vacuum and Polars on s3:// with only AWS_* set."""
    uri, table = _lake(s3)
    report = arrowidx.build(uri, OPTIONS, progress=False)
    assert report.version == 1 and len(report.indexed) == FILES
    deleted = {int(i) for i in table.filter(pc.field("status") == "lost")["id"].to_pylist()[:40]} | {4321, 5}
    removed = arrowidx.delete(uri, pc.field("id").isin(sorted(deleted)), progress=False)
    assert removed.rows_deleted == len(deleted) and removed.version == 2
    data = arrowidx.dataset(uri)
    for expr in QUERIES:
        _same(data.to_table(filter=expr), _expected(table, expr, deleted), f"dataset {expr}")
        _same(arrowidx.dataset(uri).to_table(filter=expr, columns=["id", "amount"]),
              _expected(table, expr, deleted, ["id", "amount"]), f"fresh dataset {expr}")  # fmt: skip
    plan = data.explain(pc.field("id") == 4321)
    assert plan.to_dict()["files_skipped"] >= FILES - 1  # the bloom filters rule the other files out
    # a second delete on top, a no-op build, then vacuum: the answers stay
    more = {int(i) for i in table.filter(pc.field("user_id") == 77)["id"].to_pylist()}
    arrowidx.delete(uri, pc.field("user_id") == 77, progress=False)
    deleted |= more
    assert not arrowidx.build(uri, progress=False).changed
    report = arrowidx.vacuum(uri, 0)
    assert report.removed and report.kept_versions == [3]
    for expr in QUERIES:
        _same(arrowidx.dataset(uri).to_table(filter=expr), _expected(table, expr, deleted), f"after vacuum {expr}")

    import polars as pl

    from arrowidx import polars as apl

    frame = pl.from_arrow(_expected(table, None, deleted))
    for pexpr in [pl.col("user_id") == 78, (pl.col("status") == "new") & (pl.col("amount") > 150), pl.col("id") < 30]:
        got = apl.scan(uri).filter(pexpr).collect().sort("id")
        want = frame.filter(pexpr).sort("id")
        assert got.equals(want), f"polars {pexpr}"
    assert apl.scan(uri).select(pl.len()).collect().item() == table.num_rows - len(deleted)


def test_storage_options_and_the_cli(s3, monkeypatch, capsys):
    """No AWS_* variables: everything named by storage_options, or --storage-option."""
    from arrowidx.cli import main

    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.delenv("ARROWIDX_SINGLE_WRITER", raising=False)
    uri, table = _lake(s3, seed=2)
    options = s3.storage_options()
    flags = [x for k, v in {"aws_endpoint": s3.endpoint, "aws_access_key_id": "k", "aws_secret_access_key": "s",
                            "aws_region": "us-east-1", "aws_allow_http": "true"}.items()
             for x in ("--storage-option", f"{k}={v}")]  # fmt: skip
    assert main(["build", uri, "--bloom-filter", "id", "--bitmap", "status", "--quiet", *flags]) == 0
    assert main(["delete", uri, "--where", "id = 17 OR status = 'lost' AND user_id < 100", "--yes", "--quiet", *flags]) == 0
    deleted = set(_expected(table, (pc.field("id") == 17) | ((pc.field("status") == "lost") & (pc.field("user_id") < 100)),
                            set())["id"].to_pylist())  # fmt: skip
    capsys.readouterr()
    assert main(["query", uri, "--where", "status = 'lost'", "--format", "json", *flags]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(_expected(table, pc.field("status") == "lost", deleted)["id"].to_pylist())
    assert main(["explain", uri, "--where", "id = 17", "--json", *flags]) == 0
    assert json.loads(capsys.readouterr().out)["files_skipped"] == FILES - 1
    assert main(["vacuum", uri, "--older-than", "0", "--json", *flags]) == 0
    assert main(["inspect", uri, "--json", *flags]) == 0
    capsys.readouterr()
    # the Python API with storage_options; URI + filesystem, query strings and bad keys refused
    for expr in QUERIES:
        _same(arrowidx.dataset(uri, storage_options=options).to_table(filter=expr),
              _expected(table, expr, deleted), f"storage_options {expr}")  # fmt: skip
    with pytest.raises(arrowidx.ArrowIdxError, match="not both"):
        arrowidx.dataset(uri, filesystem=pafs.LocalFileSystem(), storage_options=options)
    with pytest.raises(OptionError, match="storage_options"):
        arrowidx.dataset(uri + "?endpoint_override=x&secret_key=s", storage_options=options)
    with pytest.raises(OptionError, match="did you mean 'secret_access_key'"):
        arrowidx.dataset(uri, storage_options={**options, "secret_acess_key": "s"})
    assert main(["query", uri + "?secret_key=s", "--where", "id = 1", *flags]) == 2
    assert "storage_options" in capsys.readouterr().err
    # filesystem= keeps working for reads: pyarrow's own S3 filesystem and a path
    fs = pafs.S3FileSystem(endpoint_override=s3.endpoint, access_key="k", secret_key="s", region="us-east-1")
    path = uri[len("s3://") :]
    _same(arrowidx.dataset(path, filesystem=fs).to_table(filter=pc.field("id") == 17), _expected(table, pc.field("id") == 17, deleted), "filesystem=")


def test_the_cli_in_a_new_process_with_aws_variables(s3, aws_env):
    uri, table = _lake(s3, seed=3)
    env = {k: v for k, v in os.environ.items() if k != "ARROWIDX_SINGLE_WRITER"}
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    run = lambda *a: subprocess.run([sys.executable, "-m", "arrowidx.cli", *a], env=env, capture_output=True, text=True, timeout=120)  # noqa: E731
    out = run("build", uri, "--bloom-filter", "id", "--quiet")
    assert out.returncode == 0, out.stderr
    out = run("delete", uri, "--where", "id = 100", "--yes", "--quiet")
    assert out.returncode == 0 and "manifest v2" in out.stdout, out.stderr
    out = run("query", uri, "--where", "id IN (99, 100, 101)", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert sorted(json.loads(line)["id"] for line in out.stdout.splitlines()) == [99, 101]


def _delete_process(uri: str, ident: int, faults: str | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("ARROWIDX_SINGLE_WRITER", "ARROWIDX_FAULTS")}
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    if faults:
        env["ARROWIDX_FAULTS"] = faults
    code = ("import sys, arrowidx, pyarrow.compute as pc; "
            "r = arrowidx.delete(sys.argv[1], pc.field('id') == int(sys.argv[2]), progress=False); "
            "print(r.version, r.rows_deleted)")  # fmt: skip
    return subprocess.Popen([sys.executable, "-c", code, uri, str(ident)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


def _deletion_files(s3: S3Server, uri: str) -> list[str]:
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    side = f"{posixpath.dirname(prefix)}/_{posixpath.basename(prefix)}.arrowidx".lstrip("/")  # the sidecar beside the lake
    return s3.keys(bucket, f"{side}/deletion/")


def test_two_writers_on_one_version_both_land(s3, aws_env, tmp_path):
    """A plans, uploads and pauses before its commit (the fault hook); B commits meanwhile;
    A's put-if-absent is refused, A removes its upload, plans again and commits on top."""
    uri, table = _lake(s3, seed=4)
    arrowidx.build(uri, OPTIONS, progress=False)
    go = tmp_path / "go"
    a = _delete_process(uri, 11, faults=f"before-commit=wait:{go}")
    deadline = time.monotonic() + 60
    while not _deletion_files(s3, uri):  # A uploaded its deletion file and sleeps before its commit
        assert a.poll() is None and time.monotonic() < deadline, a.stderr.read() if a.poll() is not None else "timeout"
        time.sleep(0.05)
    b = _delete_process(uri, 12)
    out_b, err_b = b.communicate(timeout=120)
    go.touch()  # B has committed: A goes on
    out_a, err_a = a.communicate(timeout=120)
    assert b.returncode == 0 and out_b.split() == ["2", "1"], err_b
    assert a.returncode == 0 and out_a.split() == ["3", "1"], err_a  # after a conflict, on top of B's version
    got = arrowidx.dataset(uri).to_table(filter=pc.field("id") < 20)
    _same(got, _expected(table, pc.field("id") < 20, {11, 12}), "both deletes")
    fs, root, _ = open_lake(uri)
    referenced = {physical(fs, f"{root}/{e.deletion.file}").split("/", 1)[1]  # (the key in the bucket, in the sidecar)
                  for v in (2, 3) for e in read_manifest(fs, root, v).files.values() if e.deletion}  # fmt: skip
    assert sorted(_deletion_files(s3, uri)) == sorted(referenced) and len(referenced) == 2  # A's first upload removed


def test_four_processes_delete_at_once_lose_nothing(s3, aws_env):
    """Four processes delete at once, twice, and no delete is lost. What it proves: arrowidx's
    commit protocol (plan, upload, put-if-absent, retry) given an atomic put-if-absent; the
    emulator's PUTs run one at a time (``s3_support``), so not S3's own atomicity."""
    uri, table = _lake(s3, seed=5)
    arrowidx.build(uri, OPTIONS, progress=False)
    deleted: set[int] = set()
    for round_ in range(2):
        ids = [1000 * round_ + 7 + 2900 * k for k in range(4)]  # distinct ids in distinct files
        procs = [_delete_process(uri, i) for i in ids]
        for p in procs:
            out, err = p.communicate(timeout=180)
            assert p.returncode == 0 and out.split()[1] == "1", err
        deleted |= set(ids)
        got = arrowidx.dataset(uri).to_table(filter=pc.field("id").isin(sorted(deleted)))
        assert got.num_rows == 0, f"round {round_}: {sorted(got['id'].to_pylist())} came back"
    assert load_manifest(*open_lake(uri)[:2]).version == 1 + 8
    _same(arrowidx.dataset(uri).to_table(), _expected(table, None, deleted), "all rows")


def test_commit_protocol_on_a_store_double():
    """A store that refuses a put whenever the object exists (obstore's in-memory store):
    of two writers on one version one commits and one gets CommitConflictError; a retried
    create that finds its own bytes counts as created; nothing is overwritten."""
    from obstore.store import MemoryStore

    store = ObjectStore("s3", "double", {}, client=MemoryStore(), fs=pafs.LocalFileSystem())
    first = commit_manifest(store, "double/lake", Manifest(options={"writer": "a"}), 0)
    assert first.version == 1
    with pytest.raises(CommitConflictError):
        commit_manifest(store, "double/lake", Manifest(options={"writer": "b"}), 0)
    assert json.loads(store.get("double/lake/_arrowidx/manifest-00000001.json"))["options"] == {"writer": "a"}
    assert store.create("double/lake/x", b"same") and store.create("double/lake/x", b"same")  # its own retried write
    assert not store.create("double/lake/x", b"other")
    assert store.get("double/lake/x") == b"same"
    second = commit_manifest(store, "double/lake", Manifest(options={"writer": "b"}), 1)
    assert second.version == 2


def test_a_server_ignoring_if_none_match_refuses_before_uploading(s3, aws_env, monkeypatch):
    import obstore

    uri, _ = _lake(s3, seed=6)
    real_put = obstore.put

    def put_ignoring_mode(store, path, data, **kwargs):  # what a server ignoring If-None-Match does
        kwargs.pop("mode", None)
        return real_put(store, path, data, **kwargs)

    own = {"user_agent": "a-new-store"}  # a store of its own: the check is made once per store
    monkeypatch.setattr(obstore, "put", put_ignoring_mode)
    with pytest.raises(CommitUnsupportedError, match="conditional_put"):
        arrowidx.build(uri, OPTIONS, progress=False, storage_options=own)
    with pytest.raises(CommitUnsupportedError, match="conditional_put"):
        arrowidx.build(uri, OPTIONS, progress=False, storage_options={"conditional_put": "disabled"})
    bucket = uri[len("s3://") :].split("/")[0]
    assert not [k for k in s3.keys(bucket) if "arrowidx" in k]  # nothing uploaded, nothing committed


def test_a_wrong_secret_says_access_denied(s3, aws_env, monkeypatch):
    uri, _ = _lake(s3, seed=7)
    arrowidx.build(uri, OPTIONS, progress=False)
    key, secret = s3.user_with_key(f"user-{os.getpid()}")
    s3.authenticate(True)
    try:
        good = {"access_key_id": key, "secret_access_key": secret}
        assert arrowidx.dataset(uri, storage_options=good).to_table(filter=pc.field("id") == 3).num_rows == 1
        with pytest.raises(AccessDeniedError, match=r"denied access.*lake") as caught:
            arrowidx.dataset(uri, storage_options={"access_key_id": key, "secret_access_key": "wrong"})
        assert "SignatureDoesNotMatch" in str(caught.value)
        with pytest.raises(AccessDeniedError):
            arrowidx.delete(uri, pc.field("id") == 3, storage_options={"access_key_id": key, "secret_access_key": "wrong"})
    finally:
        s3.authenticate(False)


def test_an_unreachable_store_is_unavailable_not_corrupt(aws_env):
    from s3_support import free_port

    from arrowidx.errors import StoreUnavailableError

    options = {"endpoint": f"http://127.0.0.1:{free_port()}", "max_retries": "1", "retry_timeout": "2"}
    with pytest.raises(StoreUnavailableError, match="could not be reached"):
        arrowidx.dataset("s3://nobody-listens/lake", storage_options=options)


def test_paimon_rewrite_on_s3(s3, tmp_path):
    """Issue 42 on an object store: a Java-written Paimon table uploaded to the server,
    its file index rewritten with storage_options (the snapshot created put-if-absent),
    then read back: the same rows, and the new bloom filter prunes."""
    from pathlib import Path

    from arrowidx import paimon

    source = Path(__file__).resolve().parents[1] / "tests" / "paimon_tables" / "shapes-0.9.0" / "db.db" / "evolve"
    bucket = f"paimon-{next(_BUCKETS)}"
    s3.create_bucket(bucket)
    client = s3.client()
    for path in source.rglob("*"):
        if path.is_file():
            client.upload_file(str(path), bucket, f"db.db/evolve/{path.relative_to(source)}")
    uri, options = f"s3://{bucket}/db.db/evolve", s3.storage_options()
    local = paimon.open_table(str(source))
    needle = pc.field("status") == "rare"
    opts = {"file-index.bloom-filter.columns": "id,full_name,status"}  # (status is new)
    report = paimon.rewrite_file_index(uri, opts, storage_options=options)
    assert report.committed and report.snapshot_id == local.snapshot_id + 1
    after = paimon.open_table(uri, storage_options=options)
    assert after.snapshot_id == report.snapshot_id
    key = [(c, "ascending") for c in local.schema.names if not pa.types.is_floating(local.schema.field(c).type)]
    assert after.to_table().sort_by(key).equals(local.to_table().sort_by(key))
    assert after.to_table(filter=needle).sort_by(key).equals(local.to_table(filter=needle).sort_by(key))
    assert any(p.reason == "index" for p in after.explain(needle).files)  # the new bloom filter prunes
    again = paimon.rewrite_file_index(uri, opts, storage_options=options)
    assert not again.committed  # idempotent
