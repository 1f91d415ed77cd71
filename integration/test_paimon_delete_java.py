"""Java Paimon reads what ``arrowidx.paimon.delete`` commits, and Java's own DELETE agrees.

Tables written by Java Paimon (``tests/paimon_tables/dv-*``: append, bucketed append and
primary-key tables, 32- and 64-bit vectors; ``more-0.9.0/dv_level0``: level-0 files not yet
compacted; ``shared/paimon-tables``: Java's own primary-key tables) are copied twice: arrowidx
deletes from one, Java's DELETE (``bench/paimon_writer/JavaDelete.java``: Java's deletion-vector
maintainers and commit, as Spark's ``DeleteFromPaimonTableCommand`` drives them; on primary-key
tables the retract rows Spark writes) the same rows from the other. Java's ``ReadBuilder`` then
reads both copies the same, for the full table and for filters, and each data file's deletion
vector has the same bytes. Then Java keeps writing: appends and compactions after the delete
keep the deleted rows deleted; a Java writer appending or compacting while arrowidx deletes
loses nothing and brings nothing back.

Paimon 0.9.0 comes from PyPI (the ``pypaimon==0.2.0`` sdist); master needs ``$PAIMON_MASTER``
(see docs/benchmarks.md). Skipped with the reason when Java or a Paimon version is missing.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("fastavro")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "paimon_writer"))
import javahelpers  # noqa: E402
from paimon_java_support import copy_table, java_version, shared_tables  # noqa: E402
from tests.test_paimon_delete import random_filter, written  # noqa: E402 - the generator JavaDelete writes with

from arrowidx import paimon  # noqa: E402

TABLES = ROOT / "tests" / "paimon_tables"
COMPACT = ["compaction.min.file-num=2"]  # (the tables' partitions hold 4 files: Java's default waits for 5)


@pytest.fixture(scope="module", params=["0.9.0", "master"])
def version(request):
    return java_version(request.param)


class JavaDeletes:
    """Java's DELETE in one JVM kept running (``JavaDelete serve``)."""

    def __init__(self, version: str):
        self.proc = subprocess.Popen(javahelpers.command(version, "JavaDelete", "serve"), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        assert self.proc.stdout.readline().strip() == "ready"

    def delete(self, warehouse: Path, table: str, terms: list[str]) -> int:
        self.proc.stdin.write(" ".join([str(warehouse), f"db.{table}", *terms]) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line.startswith("java\t"):
            raise RuntimeError(f"JavaDelete serve stopped: {line!r} {self.proc.stderr.read()[-2000:] if self.proc.poll() is not None else ''}")
        return int(line.split("\t")[1])

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.fixture(scope="module")
def java_deletes(version):
    java = JavaDeletes(version)
    yield java
    java.close()


def _vectors(path: str) -> dict[str, bytes]:
    """Each data file's deletion-vector record, as stored."""
    table = paimon.open_table(path)
    out = {}
    bitmap64 = table.options.get("deletion-vectors.bitmap64") == "true"
    for name, rng in table.deletion_ranges.items():
        with open(rng.index_file, "rb") as f:
            f.seek(rng.offset)
            out[name] = f.read(rng.length + (0 if bitmap64 else 8))
    return out


# (source dir, table, [(SQL, Java's terms)] deleted in turn, reads compared)
DELETES = [
    ("status = 'rare' AND amount < 2500", ["status:eq:rare", "amount:lt:2500"]),
    ("amount >= 100 AND amount < 160", ["amount:ge:100", "amount:lt:160"]),
    ("status IS NULL AND part = 'b' AND price > 90", ["status:isnull", "part:eq:b", "price:gt:90"]),
]
READS = ["rare:status:eq:rare", "nulls:status:isnull", "paid:status:eq:paid", "a:part:eq:a", "amount:amount:eq:1042"]
CASES = {
    "0.9.0": [("dv-0.9.0", "append_dv"), ("dv-0.9.0", "bucketed_dv"), ("dv-0.9.0", "pk_dv")],
    "master": [("dv-master", "append_dv64"), ("dv-master", "pk_dv64"), ("fresh", "append_dv"), ("fresh", "pk_dv")],
}


def _source(version: str, kind: str, tmp_path: Path, table: str) -> Path:
    if kind != "fresh":
        return TABLES / kind
    warehouse = tmp_path / "fresh"  # master, 32-bit vectors: written here by Java master
    if not (warehouse / "db.db" / table).exists():
        javahelpers.run(version, "JavaDelete", "create", str(warehouse), f"db.{table}", "pk" if table.startswith("pk") else "append",
                        "4000", "4", "file-index.bloom-filter.columns=id", "file-index.bloom-filter.id.items=1000",
                        "file-index.bitmap.columns=status")  # fmt: skip
    return warehouse


def test_java_reads_the_delete_as_its_own(version, java_deletes, tmp_path):
    """After each delete, Java reads arrowidx's copy exactly as the copy Java deleted from
    itself (full table and filters), the vectors are byte-identical, and the snapshot before
    the delete still reads as before."""
    for kind, table in CASES[version]:
        source = _source(version, kind, tmp_path, table)
        ours, theirs = tmp_path / f"{kind}-{table}-arrowidx", tmp_path / f"{kind}-{table}-java"
        path = copy_table(source, ours, table)
        copy_table(source, theirs, table)
        start = paimon.open_table(path).snapshot_id
        original = javahelpers.read_table(version, str(ours), f"db.{table}", "latest", [])["full"]
        for sql, terms in DELETES:
            report = paimon.delete(path, sql)
            java_rows = java_deletes.delete(theirs, table, terms)
            assert report.committed and report.rows_deleted > 0, (table, sql)
            assert report.rows_deleted == java_rows, (table, sql)
        mine = javahelpers.read_table(version, str(ours), f"db.{table}", "latest", READS)
        java = javahelpers.read_table(version, str(theirs), f"db.{table}", "latest", READS)
        assert mine["full"] == java["full"], (version, table)
        assert mine["full"][0] == paimon.open_table(path).count_rows() < original[0]
        for q in READS:
            name = q.split(":")[0]
            assert mine[(name, True)]["digest"] == java[(name, True)]["digest"], (table, q)
            assert mine[(name, False)]["digest"] == java[(name, False)]["digest"], (table, q)
        assert _vectors(path) == _vectors(str(theirs / "db.db" / table)), (version, table)
        assert javahelpers.read_table(version, str(ours), f"db.{table}", str(start), [])["full"] == original


def test_deleted_rows_stay_deleted_through_java_writes_and_compactions(version, tmp_path):
    """Java appends and compacts after the delete (a primary-key table: upserts of other keys
    and a full compaction of every bucket): the deleted rows never come back."""
    for kind, table in CASES[version][:2]:
        warehouse = tmp_path / table
        path = copy_table(_source(version, kind, tmp_path, table), warehouse, table)
        report = paimon.delete(path, "status = 'rare' OR amount < 30")
        assert report.committed
        live = paimon.open_table(path).count_rows()
        out = javahelpers.run(version, "PaimonCheck", str(warehouse), "append", f"db.{table}", "2", "300", "10000000")
        assert "appended 600" in out
        assert "compacted" in javahelpers.run(version, "JavaDelete", "compact", str(warehouse), f"db.{table}", "-", *COMPACT)
        after = javahelpers.read_table(version, str(warehouse), f"db.{table}", "latest", ["rare:status:eq:rare", "z:id:eq:0"])  # (id 0: amount 0, deleted)
        assert after["full"][0] == live + 600, table
        assert after[("rare", True)]["rows"] == 0 and after[("z", True)]["rows"] == 0, table
        assert paimon.open_table(path).count_rows() == live + 600


def test_level0_versions_stay_deleted_after_java_compacts_them(tmp_path):
    """dv_level0 (0.9.0): keys 500..599 have versions in level-0 files batch reads do not see.
    Deleting such a key deletes those versions too: when Java compacts the level-0 files the
    key stays deleted, as after Java's own DELETE; other level-0 rows appear as Java wrote them."""
    version = java_version("0.9.0")
    results = []
    for who in ("arrowidx", "java"):
        warehouse = tmp_path / who
        path = copy_table(TABLES / "more-0.9.0", warehouse, "dv_level0")
        if who == "arrowidx":
            report = paimon.delete(path, "id IN (500, 501, 1500)")
            assert report.rows_deleted == 3 and report.superseded == 2
        else:
            javahelpers.run(version, "JavaDelete", "delete", str(warehouse), "db.dv_level0", "id:in:500|501|1500")
        javahelpers.run(version, "JavaDelete", "compact", str(warehouse), "db.dv_level0")
        results.append(javahelpers.read_table(version, str(warehouse), "db.dv_level0", "latest", ["k500:id:eq:500", "k502:id:eq:502"]))
    mine, java = results
    assert mine["full"] == java["full"]
    assert mine[("k500", True)]["rows"] == 0 and mine[("k502", True)]["rows"] == 1


def test_java_appends_while_arrowidx_deletes(version, tmp_path, monkeypatch):
    """A Java writer commits appends while arrowidx deletes: every commit lands (arrowidx plans
    again on the new snapshots), every appended row is there, the deleted ones are not."""
    kind, table = CASES[version][0]
    warehouse = tmp_path / "w"
    path = copy_table(_source(version, kind, tmp_path, table), warehouse, table)
    before = paimon.open_table(path).count_rows()
    java = subprocess.Popen(javahelpers.command(version, "PaimonCheck", str(warehouse), "append", f"db.{table}", "4", "500", "10000000"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert java.stdout.readline().startswith("committed 1")
        monkeypatch.setenv("ARROWIDX_FAULTS", "paimon-manifests-written=sleep:1.5")
        report = paimon.delete(path, "status = 'rare'")
        monkeypatch.delenv("ARROWIDX_FAULTS")
        out, err = java.communicate(timeout=300)
    finally:
        if java.poll() is None:
            java.kill()
    assert java.returncode == 0, err[-2000:]
    assert report.committed and report.attempts >= 2 and report.rows_deleted == 40, report
    full = javahelpers.read_table(version, str(warehouse), f"db.{table}", "latest", ["rare:status:eq:rare"])
    assert full["full"][0] == before - 40 + 2000 == paimon.open_table(path).count_rows()
    assert full[("rare", True)]["rows"] == 0


def test_java_compacts_while_arrowidx_deletes(version, tmp_path, monkeypatch):
    """Java compacts the files arrowidx is deleting from and commits first: arrowidx plans again,
    reads the compacted files (the successors) and deletes there."""
    kind, table = CASES[version][0]
    warehouse = tmp_path / "w"
    path = copy_table(_source(version, kind, tmp_path, table), warehouse, table)
    javahelpers.run(version, "JavaDelete", "delete", str(warehouse), f"db.{table}", "amount:lt:10")  # vectors to compact
    before = {f.name for f in paimon.open_table(path).files}
    go = tmp_path / "go"
    monkeypatch.setenv("ARROWIDX_FAULTS", f"paimon-dv-written=wait:{go}")
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(report=paimon.delete(path, "status = 'rare'")))
    worker.start()
    try:
        out = javahelpers.run(version, "JavaDelete", "compact", str(warehouse), f"db.{table}", "-", *COMPACT)
    finally:
        go.touch()
        worker.join(120)
    monkeypatch.delenv("ARROWIDX_FAULTS")
    assert out.startswith("compacted"), out
    report = result["report"]
    assert report.committed and report.attempts == 2 and report.rows_deleted == 40, report
    live = {f.name for f in paimon.open_table(path).files}
    assert set(report.rows_by_file) <= live and set(report.rows_by_file) - before  # (some) from the successors
    full = javahelpers.read_table(version, str(warehouse), f"db.{table}", "latest", ["rare:status:eq:rare", "a0:amount:eq:5"])
    assert full["full"][0] == 4000 - 10 - 40 == paimon.open_table(path).count_rows()
    assert full[("rare", True)]["rows"] == 0 and full[("a0", True)]["rows"] == 0


def test_arrowidx_commits_while_java_compacts(tmp_path):
    """arrowidx commits while a Java (master) compaction of the same files is between its plan
    and its commit: Java's conflict check refuses the compaction (the files' vectors changed),
    so no deleted row comes back. (Paimon 0.9.0 has no such check: its compaction would undo
    a delete committed meanwhile, Java's own DELETE's too.)"""
    version = java_version("master")
    kind, table = CASES[version][0]
    warehouse = tmp_path / "w"
    path = copy_table(_source(version, kind, tmp_path, table), warehouse, table)
    javahelpers.run(version, "JavaDelete", "delete", str(warehouse), f"db.{table}", "amount:lt:10")
    go = tmp_path / "go"
    java = subprocess.Popen(javahelpers.command(version, "JavaDelete", "compact", str(warehouse), f"db.{table}", str(go), *COMPACT),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert java.stdout.readline().strip() == "ready"
        report = paimon.delete(path, "status = 'rare'")
        go.touch()
        out, err = java.communicate(timeout=300)
    finally:
        if java.poll() is None:
            java.kill()
    assert report.committed and report.rows_deleted == 40
    assert out.startswith("conflict"), (out, err[-2000:])
    full = javahelpers.read_table(version, str(warehouse), f"db.{table}", "latest", ["rare:status:eq:rare"])
    assert full["full"][0] == 4000 - 10 - 40 and full[("rare", True)]["rows"] == 0


def test_javas_own_primary_key_tables(version, tmp_path):
    """shared/paimon-tables: Java's pk_dv (and master's pk_dv64), deletion vectors from
    Java's own compactions already there: Java reads arrowidx's delete as its own."""
    shared = shared_tables()
    if shared is None:
        pytest.skip("shared/paimon-tables not found")
    names = ["pk_dv"] + (["pk_dv64"] if version == "master" else [])
    java = JavaDeletes(version)
    try:
        for table in names:
            src = shared / f"paimon-{version}"
            ours, theirs = tmp_path / f"{table}-a", tmp_path / f"{table}-j"
            path = copy_table(src, ours, table)
            copy_table(src, theirs, table)
            paimon.delete(path, "name = 'updated2' OR id < 40")
            java.delete(theirs, table, ["name:eq:updated2"])
            java.delete(theirs, table, ["id:lt:40"])
            mine = javahelpers.read_table(version, str(ours), f"db.{table}", "latest", ["u:name:eq:updated2"])
            theirs_read = javahelpers.read_table(version, str(theirs), f"db.{table}", "latest", ["u:name:eq:updated2"])
            assert mine["full"] == theirs_read["full"] and mine[("u", True)]["rows"] == 0, table
            assert mine["full"][0] == paimon.open_table(path).count_rows()
    finally:
        java.close()


@pytest.mark.parametrize("seed", range(3))
def test_differential_random_tables(version, tmp_path, seed):
    """Random tables written by Java (kind, rows, files, vectors, indexes), random deletes (SQL
    and Expressions), against the rows written minus the ones selected in memory: Java's full
    read and its reads of single values count the same rows as the model, arrowidx reads them."""
    rng = random.Random(seed * 31 + (version == "master"))
    kind = rng.choice(["append", "flat", "bucketed", "pk"])
    rows, files = rng.randrange(300, 3000), rng.randint(1, 5)
    options = []
    if rng.random() < 0.7:
        options += ["file-index.bloom-filter.columns=id", f"file-index.bloom-filter.id.items={rows}", "file-index.bitmap.columns=status"]
    if version == "master" and rng.random() < 0.5:
        options.append("deletion-vectors.bitmap64=true")
    warehouse = tmp_path / "w"
    javahelpers.run(version, "JavaDelete", "create", str(warehouse), "db.t", kind, str(rows), str(files), *options)
    path = str(warehouse / "db.db" / "t")
    ref = written(rows)
    deleted: set[int] = set()
    for _ in range(rng.randint(1, 3)):
        where, selected = random_filter(rng, ref)
        report = paimon.delete(path, where)
        assert report.rows_deleted == len(selected - deleted), (kind, where)
        deleted |= selected
    live = ref.filter(pc.invert(pc.is_in(ref.column("i"), pa.array(sorted(deleted), pa.int64()))))
    assert paimon.open_table(path).to_table().sort_by("id").equals(live.drop_columns(["i"]).sort_by("id"))
    probes = {"rare": "status:eq:rare", "nulls": "status:isnull", "paid": "status:eq:paid", "b": "part:eq:b"}
    java = javahelpers.read_table(version, str(warehouse), "db.t", "latest", [f"{k}:{v}" for k, v in probes.items()])
    assert java["full"][0] == live.num_rows, (kind, rows, files, options)
    expected = {"rare": pc.field("status") == "rare", "nulls": pc.field("status").is_null(),
                "paid": pc.field("status") == "paid", "b": pc.field("part") == "b"}  # fmt: skip
    for name, expr in expected.items():
        assert java[(name, True)]["rows"] == live.filter(expr).num_rows, (kind, name)
