"""``arrowidx.paimon.delete`` on copies of Java-written tables with deletion vectors (no Java
needed here; ``integration/test_paimon_delete_java.py`` has Java read what is committed and
compares with Java's own DELETE).

The reference is the rows Java wrote (``bench/paimon_writer/JavaDelete.java create``: a
generator reproduced below) minus the rows the filter selects in memory: ``Table.filter``
for a ``pc.Expression``, DuckDB for SQL text, Polars' ``DataFrame.filter`` for a Polars
expression."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("fastavro")

from arrowidx import paimon
from arrowidx.cli import main as cli
from arrowidx.deletion import read_deletion_vectors
from arrowidx.errors import MissingFilterError, OptionError, UnsupportedTableError
from arrowidx.paimon import delete_rows
from arrowidx.paimon.metadata import read_avro_file
from arrowidx.sql import WhereError

HERE = Path(__file__).resolve().parent
DV09 = HERE / "paimon_tables" / "dv-0.9.0" / "db.db"
DVMASTER = HERE / "paimon_tables" / "dv-master" / "db.db"
TABLES = {"append_dv": DV09, "bucketed_dv": DV09, "pk_dv": DV09, "append_dv64": DVMASTER, "pk_dv64": DVMASTER}
STATUS = ["new", "paid", "shipped", "returned"]


def written(rows: int = 4000) -> pa.Table:
    """The rows ``JavaDelete create`` wrote (its generator), with their number ``i``."""
    i = np.arange(rows, dtype=np.int64)
    status = [("rare" if k % 100 == 42 else None if k % 7 == 3 else STATUS[k % 4]) for k in range(rows)]
    return pa.table({
        "id": pa.array((i * 1_000_003) % 2_147_483_647, pa.int64()),
        "name": pa.array([f"name-{k % 100_000}" for k in range(rows)]),
        "status": pa.array(status, pa.string()),
        "amount": pa.array(i % 10_000, pa.int32()),
        "price": pa.array((i % 1000) / 10.0),
        "part": pa.array(np.where(i % 2 == 0, "a", "b")),
        "i": pa.array(i),
    })  # fmt: skip


def _copy(name: str, tmp_path: Path) -> str:
    dst = tmp_path / name
    shutil.copytree(TABLES[name] / name, dst)
    for root, dirs, files in os.walk(dst):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    return str(dst)


def _rows(path: str, filter=None) -> pa.Table:
    t = paimon.open_table(path).to_table(filter=filter)
    return t.sort_by("id")


def _keep(reference: pa.Table, selected_i) -> pa.Table:
    """``reference`` without the rows whose ``i`` is in ``selected_i``, sorted by id, without ``i``."""
    keep = pc.invert(pc.is_in(reference.column("i"), pa.array(sorted(selected_i), pa.int64())))
    return reference.filter(keep).drop_columns(["i"]).sort_by("id")


def duckdb_selected(reference: pa.Table, sql: str) -> set[int]:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.register("t", reference)
    return {r[0] for r in con.execute(f"SELECT i FROM t WHERE {sql}").fetchall()}


# ----------------------------------------------------------------------------------------
# What is deleted: exactly the rows the filter selects, in each language
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(TABLES))
def test_sql_delete_removes_exactly_the_selected_rows(name, tmp_path):
    path = _copy(name, tmp_path)
    ref = written()
    sql = "status = 'rare' OR (amount BETWEEN 100 AND 140 AND price > 12.5) OR name LIKE 'name-39_'"
    selected = duckdb_selected(ref, sql)
    report = paimon.delete(path, sql)
    assert report.committed and report.rows_deleted == len(selected) == sum(report.rows_by_file.values())
    assert _rows(path).equals(_keep(ref, selected))
    # a second delete merges into the vectors the first one wrote
    sql2 = "status IS NULL AND amount < 700 AND amount % 3 = 1"  # (a residual: evaluated on the rows read)
    selected |= duckdb_selected(ref, sql2)
    report = paimon.delete(path, sql2)
    assert report.committed and report.attempts == 1
    assert _rows(path).equals(_keep(ref, selected))
    # and filtered reads see the deletions
    assert _rows(path, "status = 'rare'").num_rows == 0


def test_expression_and_polars_delete(tmp_path):
    pl = pytest.importorskip("polars")
    path = _copy("append_dv", tmp_path)
    ref = written()
    expr = (pc.field("amount") < 50) & (pc.field("status") != "new")  # NULL status: not selected
    selected = set(ref.filter(expr).column("i").to_pylist())
    report = paimon.delete(path, expr)
    assert report.rows_deleted == len(selected)
    assert _rows(path).equals(_keep(ref, selected))
    pexpr = (pl.col("price") * 2 > 190) & pl.col("name").str.ends_with("7")
    selected |= set(pl.from_arrow(ref).filter(pexpr).get_column("i").to_list())
    paimon.delete(path, pexpr)
    assert _rows(path).equals(_keep(ref, selected))


def test_true_must_be_explicit(tmp_path):
    path = _copy("append_dv", tmp_path)
    before = paimon.open_table(path).snapshot_id
    for bad in (None, "", "   "):
        with pytest.raises(MissingFilterError, match="needs a condition"):
            paimon.delete(path, bad)
    with pytest.raises(OptionError, match="takes SQL text"):
        paimon.delete(path, 42)
    assert paimon.open_table(path).snapshot_id == before
    report = paimon.delete(path, "TRUE")
    assert report.rows_deleted == 4000 and paimon.open_table(path).count_rows() == 0
    assert paimon.delete(path, pc.scalar(True)).committed is False  # nothing left


def test_invalid_filters_fail_whether_or_not_an_index_decides(tmp_path):
    path = _copy("append_dv", tmp_path)
    before = paimon.open_table(path).snapshot_id
    with pytest.raises(WhereError, match="unknown column 'stauts'"):
        paimon.delete(path, "stauts = 'rare'")
    # part = 'zzz' rules out every file by partition: the bad comparison still fails
    with pytest.raises(pa.ArrowNotImplementedError):
        paimon.delete(path, (pc.field("part") == "zzz") & (pc.field("amount") == pc.scalar(b"x")))
    assert paimon.open_table(path).snapshot_id == before
    report = paimon.delete(path, "part = 'zzz'")
    assert not report.committed and report.rows_deleted == 0 and report.files_read == 0


def test_table_without_deletion_vectors_is_refused_with_how_to_enable(tmp_path):
    path = str(tmp_path / "evolve")
    shutil.copytree(HERE / "paimon_tables" / "shapes-0.9.0" / "db.db" / "evolve", path)
    with pytest.raises(UnsupportedTableError, match=r"'deletion-vectors.enabled' = 'true'"):
        paimon.delete(path, "id = 1")


def test_dry_run_and_confirm_write_nothing(tmp_path):
    path = _copy("pk_dv", tmp_path)
    files = sorted(p for p in Path(path).rglob("*") if p.is_file())
    report = paimon.delete(path, "status = 'rare'", dry_run=True)
    assert report.dry_run and report.rows_deleted == 40 and not report.committed
    seen = []
    report = paimon.delete(path, "status = 'rare'", confirm=lambda r: seen.append(r.rows_deleted) or False)
    assert seen == [40] and report.dry_run and not report.committed
    assert sorted(p for p in Path(path).rglob("*") if p.is_file()) == files
    assert "would delete 40 row(s)" in str(report)


# ----------------------------------------------------------------------------------------
# The layout: Java's index files, the index manifest, the snapshot
# ----------------------------------------------------------------------------------------
def _index_records(path: str) -> list[dict]:
    snap = paimon.open_table(path)._snapshot
    return read_avro_file(paimon.open_table(path).fs, f"{path}/manifest/{snap['indexManifest']}").records


def test_unaware_layout_rewrites_touched_index_files(tmp_path):
    """Append tables (bucket -1): a changed vector goes into a new index file; the old file
    that held it leaves the manifest, its other vectors written again (Java's
    AppendDeleteFileMaintainer)."""
    path = _copy("append_dv", tmp_path)
    paimon.delete(path, "amount IN (0, 1, 1000, 1001, 2000, 2001, 3000, 3001)")  # one row of each of the 8 files
    first = {r["_FILE_NAME"]: r for r in _index_records(path)}
    assert len(first) == 2 and {r["_BUCKET"] for r in first.values()} == {0}  # one per partition
    assert all(len(r["_DELETIONS_VECTORS_RANGES"]) == 4 for r in first.values())
    paimon.delete(path, "amount = 2")  # one file of partition a
    second = {r["_FILE_NAME"]: r for r in _index_records(path)}
    kept = set(first) & set(second)
    assert len(kept) == 1 and first[kept.pop()]["_PARTITION"] != second[next(n for n in second if n not in first)]["_PARTITION"]
    new = [r for n, r in second.items() if n not in first]
    assert sorted(len(r["_DELETIONS_VECTORS_RANGES"]) for r in new) == [1, 3]  # the changed vector; the other three
    changed = next(r for r in new if len(r["_DELETIONS_VECTORS_RANGES"]) == 1)["_DELETIONS_VECTORS_RANGES"][0]
    assert changed["f0"] in {x["f0"] for r in first.values() for x in r["_DELETIONS_VECTORS_RANGES"]}
    assert paimon.open_table(path).count_rows() == 4000 - 9
    assert paimon.open_table(path)._snapshot["commitKind"] == "COMPACT"  # Paimon 0.9's


def test_bucketed_layout_one_file_per_bucket(tmp_path):
    """Bucketed tables: the bucket's whole set of vectors in one new file replacing the old."""
    path = _copy("pk_dv", tmp_path)
    paimon.delete(path, "amount < 1000")
    first = _index_records(path)
    assert sorted(r["_BUCKET"] for r in first) == [0, 1]
    paimon.delete(path, "amount BETWEEN 1000 AND 1500")
    second = _index_records(path)
    assert sorted(r["_BUCKET"] for r in second) == [0, 1]
    assert not {r["_FILE_NAME"] for r in first} & {r["_FILE_NAME"] for r in second}
    for r in second:  # each file holds every vector of its bucket, cardinalities recorded
        blob = (Path(path) / "index" / r["_FILE_NAME"]).read_bytes()
        ranges = {x["f0"]: (x["f1"], x["f2"]) for x in r["_DELETIONS_VECTORS_RANGES"]}
        vectors = read_deletion_vectors(blob, ranges=ranges)
        assert len(blob) == r["_FILE_SIZE"] and len(vectors) == r["_ROW_COUNT"]


@pytest.mark.parametrize("name", ["append_dv64", "pk_dv64"])
def test_64_bit_vectors_where_the_table_says_so(name, tmp_path):
    path = _copy(name, tmp_path)
    paimon.delete(path, "status = 'rare'")
    table = paimon.open_table(path)
    for name_, rng in table.deletion_ranges.items():
        dv = read_deletion_vectors(Path(rng.index_file).read_bytes(), ranges={name_: (rng.offset, rng.length, rng.cardinality)})[name_]
        assert dv.bitmap64 and rng.cardinality == dv.cardinality
    assert table._snapshot["commitKind"] == ("OVERWRITE" if name.startswith("append") else "COMPACT")  # Paimon >= 1.3


def test_primary_key_level0_versions_of_deleted_keys(tmp_path):
    """dv_level0 (0.9.0): keys 500..599 have newer versions in level-0 files (write-only, not
    yet compacted; batch reads do not see them). Deleting such a key deletes those too, as
    Java's retract record would; other level-0 rows stay."""
    src = HERE / "paimon_tables" / "more-0.9.0" / "db.db" / "dv_level0"
    path = str(tmp_path / "dv_level0")
    shutil.copytree(src, path)
    before = _rows(path)
    report = paimon.delete(path, "id IN (500, 501, 1500)")
    assert report.rows_deleted == 3 and report.superseded == 2
    assert _rows(path).equals(before.filter(pc.invert(pc.is_in(before.column("id"), pa.array([500, 501, 1500], pa.int32())))))
    table = paimon.open_table(path)
    level0 = [f for f in table.files if f.level == 0]
    import pyarrow.parquet as pq

    marked = set()
    for f in level0:
        rng = table.deletion_ranges.get(f.name)
        if rng is None:
            continue
        dv = read_deletion_vectors(Path(rng.index_file).read_bytes(), ranges={f.name: (rng.offset, rng.length)})[f.name]
        ids = pq.read_table(table.file_path(f), columns=["id"]).column("id").to_numpy()
        marked |= set(ids[dv.positions()].tolist())
    assert marked == {500, 501}


@pytest.mark.parametrize("option, message", [
    (("merge-engine", "partial-update"), "supports deduplicate primary-key tables"),
    (("changelog-producer", "lookup"), "readers of the table's changelog would not see it"),
    (("bucket", "-2"), "postpone"),
    (("deletion-vectors.enabled", "false"), r"'deletion-vectors.enabled' = 'true'"),
])  # fmt: skip
def test_refused_primary_key_tables(tmp_path, option, message):
    """Tables this cannot delete from as Java does are refused, saying why (the option set
    in a copy's schema), before anything is written."""
    import json

    path = _copy("pk_dv", tmp_path)
    schema = Path(path) / "schema" / "schema-0"
    doc = json.loads(schema.read_text())
    doc["options"][option[0]] = option[1]
    schema.write_text(json.dumps(doc))
    before = sorted(p.name for p in Path(path).rglob("*"))
    with pytest.raises(UnsupportedTableError, match=message):
        paimon.delete(path, "id = 1")
    assert sorted(p.name for p in Path(path).rglob("*")) == before


# ----------------------------------------------------------------------------------------
# Concurrency and crashes
# ----------------------------------------------------------------------------------------
def test_another_delete_commits_meanwhile(tmp_path):
    """A commit landing while the rows are found: the delete plans again on it, keeps what
    it found in unchanged files, and both deletes hold."""
    path = _copy("append_dv", tmp_path)
    ref = written()
    calls = []
    real = delete_rows.run_local(1)

    def runner(fs, tasks, where, schema):
        calls.append(len(tasks))
        out = real(fs, tasks, where, schema)
        if len(calls) == 1:
            paimon.delete(path, "amount < 30")  # another writer, same files
        return out

    report = delete_rows.run_delete(path, "status = 'rare'", filesystem=None, storage_options=None, dry_run=False,
                                    confirm=None, runner=runner)  # fmt: skip
    assert report.committed and report.attempts == 2 and calls == [4]  # read once (the bitmaps rule out partition b)
    selected = duckdb_selected(ref, "status = 'rare'") | duckdb_selected(ref, "amount < 30")
    assert _rows(path).equals(_keep(ref, selected))
    assert paimon.open_table(path).snapshot_id == 6


def test_file_compacted_away_meanwhile_is_read_on_its_successor(tmp_path):
    """Another writer replaces a data file by a successor (a compaction: same rows, new
    name) while the delete runs: the delete plans again and deletes from the successor."""
    from arrowidx.paimon.commit import ADD, DELETE, ManifestLists, commit_snapshot

    path = _copy("append_dv", tmp_path)
    ref = written()
    table = paimon.open_table(path)
    old = next(f for f in table.files if table.partition_values(f)["part"] == "a")  # holds 'rare' rows
    calls = []
    real = delete_rows.run_local(1)

    def runner(fs, tasks, where, schema):
        calls.append(sorted(t.name for t in tasks))
        out = real(fs, tasks, where, schema)
        if len(calls) == 1:
            snap = paimon.open_table(path)._snapshot
            succ = f"data-{uuid.uuid4()}-0.parquet"
            src = table.file_path(old)
            shutil.copyfile(src, os.path.join(os.path.dirname(src), succ))
            lists = ManifestLists(read_avro_file(fs, f"{path}/manifest/{snap['baseManifestList']}"),
                                  read_avro_file(fs, f"{path}/manifest/{snap['deltaManifestList']}"))  # fmt: skip
            entry_file = read_avro_file(fs, f"{path}/manifest/{old.manifest}")
            rec = next(r for r in entry_file.records if r["_FILE"]["_FILE_NAME"] == old.name)
            new = {**rec, "_KIND": ADD, "_FILE": {**rec["_FILE"], "_FILE_NAME": succ, "_EXTRA_FILES": [], "_EMBEDDED_FILE_INDEX": None}}
            commit_snapshot(fs, path, snap, lists, [{**rec, "_KIND": DELETE}, new], entry_file, 0, ["STRING"], None)
        return out

    report = delete_rows.run_delete(path, "status = 'rare'", filesystem=None, storage_options=None, dry_run=False,
                                    confirm=None, runner=runner)  # fmt: skip
    assert report.attempts == 2 and len(calls) == 2 and len(calls[1]) == 1 and calls[1][0] not in calls[0]
    after = paimon.open_table(path)
    assert old.name not in {f.name for f in after.files} and calls[1][0] in report.rows_by_file
    assert _rows(path).equals(_keep(ref, duckdb_selected(ref, "status = 'rare'")))


CRASH = """
import sys
from arrowidx import paimon
paimon.delete(sys.argv[1], "status = 'rare' OR amount < 40")
"""


@pytest.mark.parametrize("point", ["paimon-dv-written", "paimon-manifests-written", "paimon-before-commit",
                                   "paimon-committed", "paimon-latest-written"])  # fmt: skip
def test_killed_at_each_write_point(tmp_path, point):
    """SIGKILLed at a write point, the table reads as the old or the new snapshot, and the
    next delete completes."""
    path = _copy("append_dv", tmp_path)
    ref = written()
    before = paimon.open_table(path).snapshot_id
    env = dict(os.environ, ARROWIDX_FAULTS=f"{point}=kill", PYTHONPATH=str(HERE.parent / "src"))
    done = subprocess.run([sys.executable, "-c", CRASH, path], env=env, capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr.decode()[-500:]
    mid = paimon.open_table(path)
    selected = duckdb_selected(ref, "status = 'rare' OR amount < 40")
    if mid.snapshot_id == before:
        assert _rows(path).equals(_keep(ref, set()))
    else:
        assert mid.snapshot_id == before + 1 and _rows(path).equals(_keep(ref, selected))
    report = paimon.delete(path, "status = 'rare' OR amount < 40")
    assert report.committed == (mid.snapshot_id == before)
    assert _rows(path).equals(_keep(ref, selected))


# ----------------------------------------------------------------------------------------
# Differential: random deletes on every table, against the rows in memory
# ----------------------------------------------------------------------------------------
def random_filter(rng: random.Random, ref: pa.Table):
    """(SQL text or a pc.Expression, the set of ``i`` it selects in memory)."""
    ids = ref.column("id").to_pylist()
    atoms = [
        (lambda v: (f"id = {v}", pc.field("id") == v))(rng.choice(ids)),
        (lambda v: (f"id < {v}", pc.field("id") < v))(rng.choice(ids)),
        (lambda vs: (f"id IN ({', '.join(map(str, vs))})", pc.field("id").isin(vs)))(rng.sample(ids, 5)),
        (lambda a: (f"amount BETWEEN {a} AND {a + 300}", (pc.field("amount") >= a) & (pc.field("amount") <= a + 300)))(rng.randrange(4000)),
        (lambda s: (f"status = '{s}'", pc.field("status") == s))(rng.choice(STATUS + ["rare"])),
        ("status IS NULL", pc.field("status").is_null()),
        (lambda s: (f"status <> '{s}'", pc.field("status") != s))(rng.choice(STATUS)),
        (lambda p: (f"price > {p}", pc.field("price") > p))(rng.choice([10.5, 50.0, 99.9])),
        (lambda p: (f"part = '{p}'", pc.field("part") == p))(rng.choice("ab")),
    ]
    parts = rng.sample(atoms, rng.randint(1, 3))
    sql, expr = parts[0]
    for s, e in parts[1:]:
        if rng.random() < 0.5:
            sql, expr = f"({sql}) AND ({s})", expr & e
        else:
            sql, expr = f"({sql}) OR ({s})", expr | e
    if rng.random() < 0.2:
        sql, expr = f"NOT ({sql})", ~expr
    if rng.random() < 0.5:
        return sql, duckdb_selected(ref, sql)
    return expr, set(ref.filter(expr).column("i").to_pylist())


@pytest.mark.parametrize("seed", range(6))
def test_differential_random_deletes(seed, tmp_path):
    rng = random.Random(seed)
    name = sorted(TABLES)[seed % len(TABLES)]
    path = _copy(name, tmp_path)
    ref = written()
    deleted: set[int] = set()
    for _ in range(3):
        where, selected = random_filter(rng, ref)
        report = paimon.delete(path, where)
        assert report.rows_deleted == len(selected - deleted), (name, where)
        deleted |= selected
        assert _rows(path).equals(_keep(ref, deleted)), (name, where)
        probe, probe_selected = random_filter(rng, ref)
        live = ref.filter(pc.invert(pc.is_in(ref.column("i"), pa.array(sorted(deleted), pa.int64()))))
        expected = live.filter(pc.is_in(live.column("i"), pa.array(sorted(probe_selected), pa.int64())))
        assert _rows(path, probe).equals(expected.drop_columns(["i"]).sort_by("id")), (name, where, probe)


# ----------------------------------------------------------------------------------------
# The command line
# ----------------------------------------------------------------------------------------
def test_cli_dry_run_confirmation_and_delete(tmp_path, capsys, monkeypatch):
    path = _copy("append_dv", tmp_path)
    assert cli(["paimon", "delete", path, "--where", "status = 'rare'", "--dry-run"]) == 0
    assert "would delete 40 row(s)" in capsys.readouterr().out
    monkeypatch.setattr(sys, "stdin", open(os.devnull))
    assert cli(["paimon", "delete", path, "--where", "status = 'rare'"]) == 2
    assert "pass --yes" in capsys.readouterr().err
    assert paimon.open_table(path).count_rows() == 4000
    assert cli(["paimon", "delete", path, "--where", "status = 'rare'", "--yes"]) == 0
    assert "deleted 40 row(s)" in capsys.readouterr().out
    assert cli(["paimon", "delete", path, "--where", "stauts = 1", "--yes"]) == 2
    assert "--where: unknown column 'stauts'" in capsys.readouterr().err
    assert cli(["paimon", "delete", path, "--where", "status = 'rare'", "--yes", "--json"]) == 0
    assert '"rows_deleted": 0' in capsys.readouterr().out
