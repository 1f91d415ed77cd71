"""pypaimon and pypaimon-rust read what ``arrowidx.paimon.delete`` commits.

* a table pypaimon writes (append, partitioned, ``deletion-vectors.enabled``): arrowidx
  deletes twice; pypaimon and pypaimon-rust then read the rows they read before the deletes
  minus the deleted ones (selected in memory with ``Table.filter``);
* Java master's tables with 64-bit vectors (``tests/paimon_tables/dv-master``): the same with
  pypaimon-rust (pypaimon 2.1 reads 32-bit vectors only: it refuses the table whoever
  deleted from it).

The engines run in their own virtualenv (``build/pypaimon-venv``, made by the fixture of
``test_paimon_rewrite_pypaimon.py``: their pins clash with ours); skipped with the reason
when it cannot be installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("fastavro")

import test_paimon_rewrite_pypaimon  # noqa: E402

pypaimon_python = test_paimon_rewrite_pypaimon.pypaimon_python  # its virtualenv fixture, shared

from arrowidx import paimon  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ROWS, COMMITS = 4000, 4

SCRIPT = r"""
import json, sys
import pyarrow as pa

def write(warehouse):
    from pypaimon import CatalogFactory, Schema
    catalog = CatalogFactory.create({"warehouse": "file://" + warehouse})
    catalog.create_database("db", True)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()),
                        ("status", pa.string()), ("amount", pa.int32())])
    options = {"bucket": "-1", "deletion-vectors.enabled": "true"}
    catalog.create_table("db.t", Schema.from_pyarrow_schema(schema, partition_keys=["dt"], options=options), False)
    table = catalog.get_table("db.t")
    per = %(rows)d // %(commits)d
    for c in range(%(commits)d):
        ids = range(c * per, (c + 1) * per)
        data = pa.table({
            "dt": ["2026-01-0%%d" %% (1 + i %% 2) for i in ids],
            "id": pa.array([(i * 7919) %% 1_000_003 for i in ids], pa.int64()),
            "name": ["n%%d" %% i for i in ids],
            "status": [None if i %% 7 == 0 else ("rare" if i %% 100 == 42 else ("new", "paid", "sent")[i %% 3]) for i in ids],
            "amount": pa.array([i %% 1000 for i in ids], pa.int32()),
        }, schema=schema)
        builder = table.new_batch_write_builder()
        writer, commit = builder.new_write(), builder.new_commit()
        writer.write_arrow(data)
        commit.commit(writer.prepare_commit())
        writer.close()
        commit.close()
    return {}

def read(engine, warehouse, table, out):
    if engine == "pypaimon":
        from pypaimon import CatalogFactory
        t = CatalogFactory.create({"warehouse": "file://" + warehouse}).get_table(table)
        rb = t.new_read_builder()
        result = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    else:
        import pypaimon_rust.datafusion as pr
        t = pr.PaimonCatalog({"warehouse": "file://" + warehouse}).get_table(table)
        rb = t.new_read_builder()
        result = pa.Table.from_batches(list(rb.new_read().read_arrow(rb.new_scan().plan().splits())))
    with pa.OSFile(out, "wb") as sink, pa.ipc.new_file(sink, result.schema) as w:
        w.write_table(result)
    return {"rows": result.num_rows}

for job in json.load(open(sys.argv[1])):
    try:
        done = write(**job["args"]) if job["op"] == "write" else read(**job["args"])
        print(json.dumps({"ok": True, **done}), flush=True)
    except Exception as e:
        print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"[:500]}), flush=True)
""".replace("%(rows)d", str(ROWS)).replace("%(commits)d", str(COMMITS)).replace("%%", "%")


def _run(python: Path, work: Path, jobs: list[dict]) -> list[dict]:
    spec = work / f"jobs-{len(list(work.glob('jobs-*')))}.json"
    spec.write_text(json.dumps(jobs))
    done = subprocess.run([str(python), "-c", SCRIPT, str(spec)], capture_output=True, text=True, timeout=600)
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(jobs), f"pypaimon engines failed ({done.returncode}): {done.stderr[-2000:]}"
    return results


def _read(engine: str, warehouse: Path, table: str, out: Path) -> dict:
    return {"op": "read", "args": {"engine": engine, "warehouse": str(warehouse), "table": table, "out": str(out)}}


def _arrow(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def _without(table: pa.Table, expr: pc.Expression) -> pa.Table:
    """``table`` without the rows ``Table.filter(expr)`` selects."""
    table = table.append_column("__i", pa.array(range(table.num_rows), pa.int64()))
    gone = table.filter(expr).column("__i")
    return table.filter(pc.invert(pc.is_in(table.column("__i"), gone))).drop_columns(["__i"])


def _sorted(table: pa.Table, columns: list[str]) -> list[dict]:
    return table.select(columns).sort_by([("id", "ascending")]).to_pylist()


def test_pypaimon_written_table(request, tmp_path):
    pypaimon_venv = request.getfixturevalue("pypaimon_python")
    warehouse = tmp_path / "w"
    results = _run(pypaimon_venv, tmp_path, [
        {"op": "write", "args": {"warehouse": str(warehouse)}},
        _read("pypaimon", warehouse, "db.t", tmp_path / "before.arrow"),
    ])  # fmt: skip
    assert all(r["ok"] for r in results), results
    truth = _arrow(tmp_path / "before.arrow")
    assert truth.num_rows == ROWS
    path = str(warehouse / "db.db" / "t")
    deletes = [pc.field("status") == "rare", (pc.field("amount") < 25) | pc.field("status").is_null() & (pc.field("dt") == "2026-01-02")]
    keep = truth
    for expr in deletes:
        report = paimon.delete(path, expr)
        assert report.committed and report.rows_deleted == keep.filter(expr).num_rows > 0
        keep = _without(keep, expr)
    results = _run(pypaimon_venv, tmp_path, [_read(e, warehouse, "db.t", tmp_path / f"{e}.arrow") for e in ("pypaimon", "rust")])
    assert all(r["ok"] for r in results), results
    columns = ["dt", "id", "name", "status", "amount"]
    for engine in ("pypaimon", "rust"):
        assert _sorted(_arrow(tmp_path / f"{engine}.arrow"), columns) == _sorted(keep, columns), engine
    assert _sorted(paimon.open_table(path).to_table(), columns) == _sorted(keep, columns)


def test_pypaimon_rust_reads_64_bit_vectors(request, tmp_path):
    pypaimon_venv = request.getfixturevalue("pypaimon_python")
    columns = ["id", "name", "status", "amount", "price", "part"]
    for table in ("append_dv64", "pk_dv64"):
        warehouse = tmp_path / table
        shutil.copytree(ROOT / "tests" / "paimon_tables" / "dv-master", warehouse)
        before = _run(pypaimon_venv, tmp_path, [_read("rust", warehouse, f"db.{table}", tmp_path / f"{table}-before.arrow")])
        assert before[0]["ok"], before
        truth = _arrow(tmp_path / f"{table}-before.arrow")
        expr = (pc.field("status") == "rare") | (pc.field("amount") < 100)
        report = paimon.delete(str(warehouse / "db.db" / table), expr)
        keep = _without(truth, expr)
        assert report.rows_deleted == truth.num_rows - keep.num_rows > 0
        after = _run(pypaimon_venv, tmp_path, [_read("rust", warehouse, f"db.{table}", tmp_path / f"{table}-after.arrow")])
        assert after[0]["ok"], after
        assert _sorted(_arrow(tmp_path / f"{table}-after.arrow"), columns) == _sorted(keep, columns), table
