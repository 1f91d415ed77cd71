"""``arrowidx.paimon.rewrite_file_index`` on copies of Java-written tables (no Java needed here;
``integration/test_paimon_rewrite_java.py`` has Java read what is committed).

The reference for every read is the rows the writer wrote: Java's full read of the table
(``<table>.expected.csv``, as in ``test_paimon_shapes.py``) or, for pypaimon's table, the rows
``tests/paimon_tables/pypaimon-2.1/make.py`` wrote, filtered with ``Table.filter``: the full read
and each filter's rows must equal them before and after the rewrite, the new snapshot's
plan must use the new indexes, and the old snapshot must read as before."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

pytest.importorskip("fastavro")

from arrowidx import paimon
from arrowidx.errors import OptionError, UnsupportedTableError
from arrowidx.paimon.javalayout import next_index_name
from arrowidx.paimon.metadata import partition_stats, read_avro_file

from .test_paimon_shapes import expected as java_rows

HERE = Path(__file__).resolve().parent
SHAPES = HERE / "paimon_tables" / "shapes-0.9.0" / "db.db"
MORE = HERE / "paimon_tables" / "more-0.9.0" / "db.db"
PYPAIMON = HERE / "paimon_tables" / "pypaimon-2.1" / "db.db"


def _copy(src: Path, tmp_path: Path) -> str:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    return str(dst)


def _pypaimon_rows(schema: pa.Schema) -> pa.Table:
    """The rows ``tests/paimon_tables/pypaimon-2.1/make.py`` wrote (three commits of 200)."""
    ids = range(600)
    return pa.table(
        {
            "dt": [f"2026-01-0{1 + i % 2}" for i in ids],
            "id": pa.array([(i * 7919) % 1_000_003 for i in ids], pa.int64()),
            "name": [f"n{i}" for i in ids],
            "status": [None if i % 7 == 0 else ("rare" if i % 100 == 42 else ("new", "paid", "sent")[i % 3]) for i in ids],
            "amount": pa.array([i % 50 for i in ids], pa.int32()),
        }
    ).select(schema.names).cast(schema)


def _sorted(t):
    return t.sort_by([(c, "ascending") for c in t.column_names if t.schema.field(c).type.id not in (8,)])


def _index_types(table) -> dict[str, set]:
    """``{data file: {(column, index type)}}`` of a table's current snapshot."""
    out = {}
    for plan in table.plan(None).files:
        index, _ = table._file_index(plan.file, plan.path)
        out[plan.file.name] = set() if index is None else {(c, t) for c, ts in index.columns.items() for t in ts}
    return out


FILTERS = [pc.field("status") == "rare", pc.field("id") == 1234, pc.field("full_name") == "n46208", pc.field("p") == "x"]


def test_rewrite_evolved_partitioned_table(tmp_path):
    """Partitioned (NULL and escaped values), renamed + added column, INSERT OVERWRITE: a new
    bloom filter on `status`, rows unchanged, old snapshot unchanged, pruning uses it."""
    path = _copy(SHAPES / "evolve", tmp_path)
    before = paimon.open_table(path)
    old_id = before.snapshot_id
    full = java_rows("evolve", before.schema)
    expected = {str(f): full.filter(f) for f in FILTERS}
    assert all(expected[str(f)].num_rows for f in FILTERS)  # every filter selects rows
    assert _sorted(before.to_table()).equals(_sorted(full))
    assert not any(("status", "bloom-filter") in t for t in _index_types(before).values())

    report = paimon.rewrite_file_index(path, {"file-index.bloom-filter.columns": "id,full_name,status"})
    assert report.committed and report.schema_committed and report.snapshot_id == old_id + 1
    assert "snapshot" in str(report) and "committed" in str(report)
    after = paimon.open_table(path)
    assert after.snapshot_id == old_id + 1 and after.table_schema.id == report.schema_id
    assert after.to_table().num_rows == full.num_rows
    assert _sorted(after.to_table()).equals(_sorted(full))
    for f in FILTERS:
        assert _sorted(after.to_table(filter=f)).equals(_sorted(expected[str(f)])), f
    plan = after.explain(pc.field("full_name") == "n46208")
    assert plan.files_read == 1 and any(p.reason == "index" for p in plan.files)
    # files written before the rename are indexed under the old column name
    types = _index_types(after)
    old_schema_files = [p.file.name for p in after.plan(None).files if p.file.schema_id == 0]
    assert old_schema_files and all(("name", "bloom-filter") in types[n] and ("status", "bloom-filter") in types[n] for n in old_schema_files)
    # the old snapshot reads as before, with its old indexes
    old = paimon.open_table(path, snapshot=old_id)
    assert _sorted(old.to_table()).equals(_sorted(full))
    assert not any(("status", "bloom-filter") in t for t in _index_types(old).values())

    again = paimon.rewrite_file_index(path, {"file-index.bloom-filter.columns": "id,full_name,status"})
    assert not again.committed and not again.schema_committed and again.snapshot_id == old_id + 1
    assert len(again.unchanged) == again.files and "nothing committed" in str(again)


def test_rewrite_a_table_pypaimon_wrote(tmp_path):
    """A table written by pypaimon 2.1 (no file index; manifest lists with its
    ``_TOTAL_BUCKETS`` and ``_EXTRA_FILES`` fields, filled as pypaimon fills them): indexed,
    the same rows, the needle read from its one file. (pypaimon, pypaimon-rust and Java
    read it in integration/test_paimon_rewrite_pypaimon.py.)"""
    path = _copy(PYPAIMON / "t", tmp_path)
    before = paimon.open_table(path)
    full = _pypaimon_rows(before.schema)
    needle = pc.field("id") == (345 * 7919) % 1_000_003
    rare = full.filter(pc.field("status") == "rare")
    assert _sorted(before.to_table()).equals(_sorted(full))
    assert before.explain(needle).files_read == 6
    options = {"file-index.bloom-filter.columns": "id,name", "file-index.bloom-filter.id.items": "100",
               "file-index.bitmap.columns": "status"}  # fmt: skip
    report = paimon.rewrite_file_index(path, options)
    assert report.committed and len(report.rewritten) == report.files == 6, report
    after = paimon.open_table(path)
    assert _sorted(after.to_table()).equals(_sorted(full))
    assert _sorted(after.to_table(filter=pc.field("status") == "rare")).equals(_sorted(rare))
    assert after.to_table(filter=needle).equals(full.filter(needle)) and after.explain(needle).files_read == 1
    snapshot = after._snapshot
    lists = [read_avro_file(pafs.LocalFileSystem(), os.path.join(path, "manifest", snapshot[k])) for k in ("baseManifestList", "deltaManifestList")]
    delta = lists[1].records
    assert [f["name"] for f in lists[1].schema["fields"]][-2:] == ["_TOTAL_BUCKETS", "_EXTRA_FILES"]
    assert len(delta) == 1 and delta[0]["_TOTAL_BUCKETS"] is None and delta[0]["_EXTRA_FILES"] is None  # bucket -1
    assert not paimon.rewrite_file_index(path, options).committed


def test_switch_index_type_drops_the_old_one(tmp_path):
    """Pull request 9085: a column moved from bitmap to bloom-filter keeps no stale bitmap,
    whether its index was in a file or is now embedded (and the other way round)."""
    path = _copy(SHAPES / "evolve", tmp_path)
    before = paimon.open_table(path)
    full = java_rows("evolve", before.schema)
    expected = full.filter(pc.field("status") == "rare")
    paimon.rewrite_file_index(path, {"file-index.bitmap.columns": None, "file-index.bloom-filter.columns": "status",
                                     "file-index.bloom-filter.id.items": None, "file-index.bloom-filter.full_name.items": None,
                                     "file-index.bloom-filter.status.items": "600", "file-index.in-manifest-threshold": "64kb"})  # fmt: skip
    after = paimon.open_table(path)
    for name, types in _index_types(after).items():
        assert types <= {("status", "bloom-filter")}, (name, types)
    files = after.plan(None).files
    assert all(p.file.embedded_index and not [e for e in p.file.extra_files if e.endswith(".index")] for p in files)
    assert _sorted(after.to_table(filter=pc.field("status") == "rare")).equals(_sorted(expected))
    # and back to a file, then to no index at all
    paimon.rewrite_file_index(path, {"file-index.in-manifest-threshold": "1 b"})
    files = paimon.open_table(path).plan(None).files
    assert all(p.file.embedded_index is None and len([e for e in p.file.extra_files if e.endswith(".index")]) == 1 for p in files)
    paimon.rewrite_file_index(path, {"file-index.bloom-filter.columns": None, "file-index.bloom-filter.status.items": None})
    final = paimon.open_table(path)
    assert all(p.file.embedded_index is None and not p.file.extra_files for p in final.plan(None).files)
    assert _sorted(final.to_table()).equals(_sorted(full))


def test_deletion_vector_table_keeps_its_vectors(tmp_path):
    """A primary-key table with deletion vectors (and level-0 files): the index manifest is
    carried over, deleted rows stay deleted."""
    path = _copy(MORE / "dv_level0", tmp_path)
    before = paimon.open_table(path)
    full = java_rows("dv_level0", before.schema)  # Java's read: deleted rows and level-0 files left out
    column = next(n for n in before.schema.names if n not in before.primary_keys)
    report = paimon.rewrite_file_index(path, {"file-index.bitmap.columns": column})
    assert report.committed
    after = paimon.open_table(path)
    assert after._snapshot.get("indexManifest") == before._snapshot.get("indexManifest")
    assert after.deletion_ranges == before.deletion_ranges
    assert _sorted(after.to_table()).equals(_sorted(full))
    for value in (full.column(column)[0], full.column(column)[len(full) // 2]):
        f = pc.field(column) == value
        assert _sorted(after.to_table(filter=f)).equals(_sorted(full.filter(f))), f


def test_partitions_and_dry_run(tmp_path):
    path = _copy(SHAPES / "evolve", tmp_path)
    listing = sorted(str(p) for p in Path(path).rglob("*"))
    options = {"file-index.bloom-filter.columns": "id,full_name,status"}
    dry = paimon.rewrite_file_index(path, options, dry_run=True)
    assert dry.dry_run and dry.rewritten and sorted(str(p) for p in Path(path).rglob("*")) == listing
    assert "nothing written" in str(dry)
    report = paimon.rewrite_file_index(path, options, partitions={"p": "x"})
    table = paimon.open_table(path)
    in_x = {p.file.name for p in table.plan(None).files if table.partition_values(p.file)["p"] == "x"}
    assert set(report.rewritten) == in_x and report.files == len(in_x)
    rest = paimon.rewrite_file_index(path, partitions=[{"p": "y z/%"}, {"p": None}])
    assert set(rest.rewritten).isdisjoint(in_x) and len(rest.rewritten) + len(in_x) == len(table.files)


def test_refusals(tmp_path):
    path = _copy(SHAPES / "evolve", tmp_path)
    with pytest.raises(OptionError, match="did you mean 'file-index.bloom-filter.columns'"):
        paimon.rewrite_file_index(path, {"file-index.bloom-filer.columns": "id"})
    with pytest.raises(OptionError, match="did you mean 'status'"):
        paimon.rewrite_file_index(path, {"file-index.bitmap.columns": "statsu"})
    with pytest.raises(OptionError, match="only file-index"):
        paimon.rewrite_file_index(path, {"bucket": "4"})
    with pytest.raises(OptionError, match="storage_options"):
        paimon.rewrite_file_index(path, storage_options={"region": "x"})
    with pytest.raises(UnsupportedTableError, match="Paimon 0.9.*range-bitmap"):
        paimon.rewrite_file_index(path, {"file-index.range-bitmap.columns": "id"})
    with pytest.raises(OptionError, match="partition key"):
        paimon.rewrite_file_index(path, partitions={"status": "x"})
    assert read_schema_ids(path) == [0, 1]  # nothing was committed by a refused call


def read_schema_ids(path: str) -> list[int]:
    return sorted(int(p.name[7:]) for p in (Path(path) / "schema").glob("schema-*"))


def test_partition_statistics_as_java_wrote_them():
    """The manifest-list partition statistics computed from a manifest's entries equal the ones
    Java wrote (string partitions with NULL, escaped and long values; INT partitions)."""
    table = str(SHAPES / "evolve")
    schema = paimon.open_table(table).table_schema
    types = [schema.field(k).type for k in schema.partition_keys]
    snap = paimon.open_table(table)._snapshot
    checked = 0
    import pyarrow.fs as pafs

    fs = pafs.LocalFileSystem()
    for name in (snap["baseManifestList"], snap["deltaManifestList"]):
        for meta in read_avro_file(fs, f"{table}/manifest/{name}").records:
            entries = read_avro_file(fs, f"{table}/manifest/{meta['_FILE_NAME']}").records
            low, high, nulls = partition_stats([e["_PARTITION"] for e in entries], types)
            stats = meta["_PARTITION_STATS"]
            assert (low, high, nulls) == (stats["_MIN_VALUES"], stats["_MAX_VALUES"], stats["_NULL_COUNTS"])
            checked += 1
    assert checked >= 2


def test_index_file_names_follow_java():
    assert next_index_name("data-1-0.parquet.index") == "data-1-0.parquet-1.index"
    assert next_index_name("data-1-0.parquet-1.index") == "data-1-0.parquet-2.index"
    assert next_index_name("data-1-0.parquet-9.index") == "data-1-0.parquet-10.index"


CRASH = """
import sys
from arrowidx import paimon
paimon.rewrite_file_index(sys.argv[1], {"file-index.bloom-filter.columns": "id,full_name,status"})
"""


@pytest.mark.parametrize("point", ["paimon-schema-committed", "paimon-index-written", "paimon-manifests-written",
                                   "paimon-before-commit", "paimon-committed", "paimon-latest-written"])  # fmt: skip
def test_killed_at_each_write_point(tmp_path, point):
    """SIGKILLed at a write point, the table reads as the old or the new snapshot, and the
    next run completes the rewrite."""
    path = _copy(SHAPES / "evolve", tmp_path)
    before = paimon.open_table(path)
    full = _sorted(java_rows("evolve", before.schema))
    env = dict(os.environ, ARROWIDX_FAULTS=f"{point}=kill", PYTHONPATH=str(HERE.parent / "src"))
    done = subprocess.run([sys.executable, "-c", CRASH, path], env=env, capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr.decode()[-500:]
    mid = paimon.open_table(path)
    assert mid.snapshot_id in (before.snapshot_id, before.snapshot_id + 1)
    assert _sorted(mid.to_table()).equals(full)
    report = paimon.rewrite_file_index(path, {"file-index.bloom-filter.columns": "id,full_name,status"})
    final = paimon.open_table(path)
    assert report.committed == (mid.snapshot_id == before.snapshot_id)
    assert final.snapshot_id == before.snapshot_id + 1
    assert _sorted(final.to_table()).equals(full)
    assert final.explain(pc.field("status") == "rare").files_skipped > 0


def test_another_writer_commits_meanwhile(tmp_path, monkeypatch):
    """A commit landing while the files are indexed: the rewrite plans again on it, reuses
    its work, and a file that commit removed is skipped, not added back."""
    from arrowidx.paimon import rewrite as rw
    from arrowidx.paimon.commit import DELETE, ManifestLists, commit_snapshot

    path = _copy(SHAPES / "evolve", tmp_path)
    before = paimon.open_table(path)
    gone = before.plan(None).files[0].file
    calls = []
    real = rw.run_local(1)

    def runner(fs, tasks, write):
        calls.append(len(tasks))
        out = real(fs, tasks, write)
        if len(calls) == 1:  # another writer removes one file (as a compaction would)
            snap = paimon.open_table(path)._snapshot
            lists = ManifestLists(read_avro_file(fs, f"{path}/manifest/{snap['baseManifestList']}"),
                                  read_avro_file(fs, f"{path}/manifest/{snap['deltaManifestList']}"))  # fmt: skip
            entry_file = read_avro_file(fs, f"{path}/manifest/{gone.manifest}")
            rec = next(r for r in entry_file.records if r["_FILE"]["_FILE_NAME"] == gone.name)
            schema = paimon.open_table(path).table_schema
            commit_snapshot(fs, path, snap, lists, [{**rec, "_KIND": DELETE}], entry_file, schema.id,
                            [schema.field(k).type for k in schema.partition_keys], None)  # fmt: skip
        return out

    report = rw.rewrite(path, {"file-index.bloom-filter.columns": "id,full_name,status"}, partitions=None, filesystem=None,
                        storage_options=None, dry_run=False, runner=runner)  # fmt: skip
    assert report.committed and report.attempts == 2 and len(calls) == 1  # nothing indexed twice
    assert report.skipped == [gone.name] and gone.name not in report.rewritten
    after = paimon.open_table(path)
    assert after.snapshot_id == before.snapshot_id + 2
    assert gone.name not in {f.name for f in after.files}
    java = java_rows("evolve", before.schema)
    gone_ids = pq.read_table(before.file_path(gone), columns=["id"]).column("id")
    assert after.count_rows() == java.num_rows - gone.rows == java.num_rows - len(gone_ids)
    assert _sorted(after.to_table()).equals(_sorted(java.filter(~pc.field("id").isin(gone_ids))))


def test_cli(tmp_path, capsys):
    from arrowidx.cli import main

    path = _copy(SHAPES / "evolve", tmp_path)
    assert main(["paimon", "rewrite-index", path, "--bloom-filter", "status", "--bloom-filter", "id,full_name", "--dry-run"]) == 0
    assert "dry run" in capsys.readouterr().out
    assert main(["paimon", "rewrite-index", path, "--bloom-filter", "statu"]) == 2
    assert "did you mean 'status'" in capsys.readouterr().err
    assert main(["paimon", "rewrite-index", path, "--range-bitmap", "id"]) == 1
    assert main(["paimon", "rewrite-index", path, "--bitmap", "p", "--quiet"]) == 0
    assert "committed" in capsys.readouterr().out
