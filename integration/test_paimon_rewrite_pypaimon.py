"""pypaimon writes, arrowidx indexes, everyone reads.

A table written by pypaimon (the newest release, which writes no file index) is rewritten by
``arrowidx.paimon.rewrite_file_index``; then pypaimon, pypaimon-rust, arrowidx and Java Paimon
(master, when ``$PAIMON_MASTER`` has a build; Paimon 0.9.0 cannot read pypaimon 2.1's tables
at all, indexed or not) read the same rows as pypaimon read before, for the whole table and
for a needle, and pypaimon-rust and Java prune with the new bloom filter: with every data
file that does not hold the needle deleted, pypaimon-rust still answers the needle on the
rewritten table (it never opens them) and fails on the same table without the index (the
ids are scattered, so that no file's min/max statistics rule the needle out). Java's reader
returns only the rows the new bitmap selects (a needle shows nothing for Java: Parquet's
dictionary filter skips the files without it, with or without the index).

pypaimon and pypaimon-rust pin pyarrow < 20 and polars < 2, so they live in their own
virtualenv, ``build/pypaimon-venv`` (``make clean`` removes it), made by ``make interop``
(``bench/paimon_writer/setup_interop.py``; ``make test`` runs it first) and reused while its
pins stay the same. Skipped, naming ``make interop``, when it is not there: no test
downloads anything. The engines write what they read as Arrow IPC files, compared here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("fastavro")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "paimon_writer"))
import javahelpers  # noqa: E402
import setup_interop  # noqa: E402

from arrowidx import paimon  # noqa: E402

PINS = setup_interop.PINS
VENV = setup_interop.VENV
ROWS, COMMITS = 20_000, 4
NEEDLE_ROW = 12_345


def _id(i: int) -> int:
    return (i * 7919) % 1_000_003  # scattered: every file's min/max spans nearly all ids


NEEDLE = _id(NEEDLE_ROW)
OPTIONS = {
    "file-index.bloom-filter.columns": "id,name",
    "file-index.bloom-filter.id.items": str(ROWS // COMMITS),
    "file-index.bloom-filter.name.items": str(ROWS // COMMITS),
    "file-index.bitmap.columns": "status",
}

# Run in the pypaimon virtualenv: jobs from a JSON file, one JSON line of result per job.
ENGINE_SCRIPT = r"""
import json, sys
import pyarrow as pa

def write(warehouse, rows, commits):
    from pypaimon import CatalogFactory, Schema
    catalog = CatalogFactory.create({"warehouse": "file://" + warehouse})
    catalog.create_database("db", True)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()),
                        ("status", pa.string()), ("amount", pa.int32())])
    catalog.create_table("db.t", Schema.from_pyarrow_schema(schema, partition_keys=["dt"], options={"bucket": "-1"}), False)
    table = catalog.get_table("db.t")
    per = rows // commits
    for c in range(commits):  # one file per partition per commit
        ids = range(c * per, (c + 1) * per)
        data = pa.table({
            "dt": ["2026-01-0%d" % (1 + i % 2) for i in ids],
            "id": pa.array([(i * 7919) % 1_000_003 for i in ids], pa.int64()),
            "name": ["n%d" % i for i in ids],
            "status": [None if i % 7 == 0 else ("rare" if i % 100 == 42 else ("new", "paid", "sent")[i % 3]) for i in ids],
            "amount": pa.array([i % 1000 for i in ids], pa.int32()),
        }, schema=schema)
        builder = table.new_batch_write_builder()
        writer, commit = builder.new_write(), builder.new_commit()
        writer.write_arrow(data)
        commit.commit(writer.prepare_commit())
        writer.close()
        commit.close()
    return {"rows": rows}

def read(engine, warehouse, needle, out):
    if engine == "pypaimon":
        from pypaimon import CatalogFactory
        table = CatalogFactory.create({"warehouse": "file://" + warehouse}).get_table("db.t")
        rb = table.new_read_builder()
        if needle is not None:
            rb = rb.with_filter(rb.new_predicate_builder().equal("id", needle))
        result = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    else:
        import pypaimon_rust.datafusion as pr
        table = pr.PaimonCatalog({"warehouse": "file://" + warehouse}).get_table("db.t")
        rb = table.new_read_builder()
        if needle is not None:
            rb = rb.with_filter({"method": "equal", "field": "id", "literals": [needle]})
        batches = list(rb.new_read().read_arrow(rb.new_scan().plan().splits()))
        result = pa.Table.from_batches(batches) if batches else None
    if result is not None:
        with pa.OSFile(out, "wb") as sink, pa.ipc.new_file(sink, result.schema) as w:
            w.write_table(result)
    return {"rows": 0 if result is None else result.num_rows}

for job in json.load(open(sys.argv[1])):
    try:
        done = write(**job["args"]) if job["op"] == "write" else read(**job["args"])
        print(json.dumps({"ok": True, **done}), flush=True)
    except Exception as e:
        print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"[:500]}), flush=True)
"""


@pytest.fixture(scope="session")
def pypaimon_python() -> Path:
    """The interpreter of ``build/pypaimon-venv`` holding :data:`PINS` (``make interop``)."""
    python = setup_interop.pypaimon_python()
    if python is None:
        pytest.skip(f"{VENV} with {' '.join(PINS)} is not there: run `{setup_interop.MAKE_STEP}` (downloads them from PyPI)")
    return python


def _engines(python: Path, work: Path, jobs: list[dict]) -> list[dict]:
    spec = work / f"jobs-{len(list(work.glob('jobs-*')))}.json"
    spec.write_text(json.dumps(jobs))
    done = subprocess.run([str(python), "-c", ENGINE_SCRIPT, str(spec)], capture_output=True, text=True, timeout=600)
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(jobs), f"pypaimon engines failed ({done.returncode}): {done.stderr[-2000:]}"
    return results


def _read_job(engine: str, warehouse: Path, out: Path, needle: int | None = None) -> dict:
    return {"op": "read", "args": {"engine": engine, "warehouse": str(warehouse), "needle": needle, "out": str(out)}}


def _arrow(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def _rows(table: pa.Table) -> list[dict]:
    """The rows in one order, columns by name (engines order rows and columns their way)."""
    table = table.select(["dt", "id", "name", "status", "amount"])
    return table.sort_by([("id", "ascending")]).to_pylist()


def _holes(src: Path, dst: Path) -> int:
    """Copy the warehouse ``src`` to ``dst`` and delete, there, every data file without the
    needle (an engine that opens one fails). Returns how many files are left."""
    shutil.copytree(src, dst)
    path = dst / "db.db" / "t"
    table = paimon.open_table(str(path))
    kept = 0
    for f in table.files:
        data = Path(table.file_path(f))
        if NEEDLE in pq.read_table(data, columns=["id"]).column("id").to_pylist():
            kept += 1
        else:
            data.unlink()
    return kept


def _java(warehouse: Path, queries: list[str]) -> dict | None:
    try:
        javahelpers.compiled("master")
    except javahelpers.JavaUnavailable:
        return None
    return javahelpers.read_table("master", str(warehouse), "db.t", "latest", queries)


@pytest.fixture(scope="module")
def rewritten(pypaimon_python, tmp_path_factory) -> dict:
    """pypaimon writes the table and reads it (pypaimon-rust and Java too); arrowidx rewrites
    it; the engines read it again, and pypaimon-rust reads the needle from copies of the table
    with and without the index that lack every data file without the needle."""
    work = tmp_path_factory.mktemp("pypaimon")
    warehouse, unindexed = work / "warehouse", work / "unindexed"
    before = [
        {"op": "write", "args": {"warehouse": str(warehouse), "rows": ROWS, "commits": COMMITS}},
        _read_job("pypaimon", warehouse, work / "pypaimon-before.arrow"),
        _read_job("rust", warehouse, work / "rust-before.arrow"),
    ]
    results = _engines(pypaimon_python, work, before)
    assert all(r["ok"] for r in results), results
    queries = [f"needle:id:eq:{NEEDLE}", "rare:status:eq:rare"]
    java_before = _java(warehouse, queries)
    shutil.copytree(warehouse, unindexed)
    path = warehouse / "db.db" / "t"
    reports = [paimon.rewrite_file_index(str(path), OPTIONS), paimon.rewrite_file_index(str(path), OPTIONS)]
    holes = {"indexed": _holes(warehouse, work / "holes"), "unindexed": _holes(unindexed, work / "holes-unindexed")}
    after = [
        _read_job("pypaimon", warehouse, work / "pypaimon-after.arrow"),
        _read_job("pypaimon", warehouse, work / "pypaimon-needle.arrow", NEEDLE),
        _read_job("rust", warehouse, work / "rust-after.arrow"),
        _read_job("rust", warehouse, work / "rust-needle.arrow", NEEDLE),
        _read_job("rust", work / "holes", work / "rust-holes.arrow", NEEDLE),
        _read_job("rust", work / "holes-unindexed", work / "rust-holes-unindexed.arrow", NEEDLE),
    ]
    results = _engines(pypaimon_python, work, after)
    return {"work": work, "path": path, "reports": reports, "holes": holes, "after": results,
            "java": (java_before, _java(warehouse, queries) if java_before is not None else None)}  # fmt: skip


def test_pypaimon_and_pypaimon_rust_read_the_same_and_rust_prunes(rewritten):
    work = rewritten["work"]
    truth = _arrow(work / "pypaimon-before.arrow")  # what pypaimon read before the rewrite
    assert truth.num_rows == ROWS
    assert _rows(_arrow(work / "rust-before.arrow")) == _rows(truth)
    expected_needle = _rows(truth.filter(pc.field("id") == NEEDLE))
    assert len(expected_needle) == 1
    report, again = rewritten["reports"]
    assert report.committed and report.files == 2 * COMMITS and len(report.rewritten) == report.files, report
    assert not again.committed  # idempotent

    # arrowidx reads the new snapshot with the new indexes: the needle's file only
    table = paimon.open_table(str(rewritten["path"]))
    assert _rows(table.to_table()) == _rows(truth)
    assert _rows(table.to_table(filter=pc.field("id") == NEEDLE)) == expected_needle
    assert table.explain(pc.field("id") == NEEDLE).files_read == 1

    results = rewritten["after"]
    assert all(r["ok"] for r in results[:5]), results
    assert _rows(_arrow(work / "pypaimon-after.arrow")) == _rows(truth)
    assert _rows(_arrow(work / "pypaimon-needle.arrow").filter(pc.field("id") == NEEDLE)) == expected_needle
    assert _rows(_arrow(work / "rust-after.arrow")) == _rows(truth)
    assert _rows(_arrow(work / "rust-needle.arrow")) == expected_needle
    # pypaimon-rust prunes with the new bloom filter: it never opens the files without the
    # needle (deleted from the copies), which it must open in the table without the index
    assert rewritten["holes"] == {"indexed": 1, "unindexed": 1}
    assert _rows(_arrow(work / "rust-holes.arrow")) == expected_needle
    assert not results[5]["ok"], results[5]


def test_java_reads_the_same_and_uses_the_new_bitmap(rewritten):
    java_before, java_after = rewritten["java"]
    if java_before is None:
        pytest.skip("Paimon master is not available (PAIMON_MASTER, see docs/benchmarks.md); Paimon 0.9.0 cannot read pypaimon 2.1 tables")
    assert java_after["full"] == java_before["full"] and java_after["full"][0] == ROWS
    for name in ("needle", "rare"):
        for enabled in (True, False):
            after, before = java_after[(name, enabled)], java_before[(name, enabled)]
            assert (after["rows"], after["digest"]) == (before["rows"], before["digest"]), (name, enabled)
    assert java_after[("needle", True)]["rows"] == 1
    # Java uses the new bitmap: its reader returns only the rows the bitmap selects (the needle
    # shows nothing here: Parquet's dictionary filter already skips the files without it)
    on, off = java_after[("rare", True)], java_after[("rare", False)]
    assert on["rows"] == off["rows"] > 0 and on["reader_rows"] < off["reader_rows"], (on, off)
