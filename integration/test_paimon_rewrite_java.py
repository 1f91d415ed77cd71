"""Java Paimon reads what ``arrowidx.paimon.rewrite_file_index`` commits, and uses it.

Tables written by Java Paimon (``shared/paimon-tables``: 0.9.0 and master; the project's
``tests/paimon_tables``: partitioned with an evolved schema, 0.9.0) are copied, read by Java
(``bench/paimon_writer/PaimonCheck.java``: the full table and each filter's rows, as SHA-256 of
the sorted rows, and what its planner keeps with ``file-index.read.enabled`` true and false),
rewritten by arrowidx, and read by Java again: the new snapshot and the old one give exactly
the rows Java gave before, and on a needle Java's planner reads fewer rows with the new
indexes than without. On master, Java's own rewrite (``FileIndexProcessor``) of a second
copy gives byte-identical index files and manifest fields. A Java writer appending while
arrowidx rewrites loses no row.

Paimon 0.9.0 comes from PyPI (the ``pypaimon==0.2.0`` sdist); master needs ``$PAIMON_MASTER``
(see docs/benchmarks.md). Skipped with the reason when Java or a Paimon version is missing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastavro")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "paimon_writer"))
import javahelpers  # noqa: E402
from paimon_java_support import copy_table, java_version, shared_tables  # noqa: E402

from arrowidx import paimon  # noqa: E402

SHARED = shared_tables()
SHAPES = ROOT / "tests" / "paimon_tables" / "shapes-0.9.0"


@pytest.fixture(scope="module", params=["0.9.0", "master"])
def version(request):
    return java_version(request.param)


def _read(version: str, warehouse: Path, table: str, snapshot: str, queries: list[str]) -> dict:
    return javahelpers.read_table(version, str(warehouse), f"db.{table}", snapshot, queries)


# (source, table, options, the column of a needle the new index prunes on, other queries)
CASES = {
    "0.9.0": [
        ("0.9.0", "append_idx", {"file-index.bitmap.columns": "status,name", "file-index.bloom-filter.columns": "id,name,amount"},
         "name", ["pending:status:eq:pending", "nulls:status:isnull"]),
        ("0.9.0", "pk_dv", {"file-index.bloom-filter.columns": "name,id"}, "name", ["upd:name:eq:updated2"]),
        ("shapes", "evolve", {"file-index.bloom-filter.columns": "id,full_name,small", "file-index.bloom-filter.small.items": "600"},
         "full_name", ["rare:status:eq:rare", "x:p:eq:x"]),
    ],
    "master": [
        ("master", "append_idx", {"file-index.bitmap.columns": "status,name", "file-index.bloom-filter.columns": "id,name,amount"},
         "name", ["pending:status:eq:pending"]),
        ("master", "pk_dv", {"file-index.bloom-filter.columns": "name,id"}, "name", ["upd:name:eq:updated2"]),
        ("master", "pk_dv64", {"file-index.bitmap.columns": "name", "file-index.in-manifest-threshold": "64kb"}, "name", []),
    ],
}  # fmt: skip


def _needle(path: str, column: str) -> str:
    """A value of ``column`` that the fewest rows of the table hold (a needle)."""
    import pyarrow.compute as pc

    counts = pc.value_counts(paimon.open_table(path).to_table(columns=[column]).column(column).drop_null())
    pairs = list(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist()))
    fewest = min(n for _, n in pairs)
    once = sorted(v for v, n in pairs if n == fewest)
    return f"needle:{column}:eq:{once[len(once) // 2]}"


def _source(name: str) -> Path:
    if name == "shapes":
        return SHAPES
    if SHARED is None:
        pytest.skip("shared/paimon-tables not found")
    return SHARED / f"paimon-{name}"


def test_java_reads_the_rewritten_table(version, tmp_path):
    for source, table, options, column, queries in CASES[version]:
        warehouse = tmp_path / f"{source}-{table}"
        path = copy_table(_source(source), warehouse, table)
        needle = _needle(path, column)
        old = paimon.open_table(path).snapshot_id
        qs = [needle, *queries]
        before = _read(version, warehouse, table, "latest", qs)
        report = paimon.rewrite_file_index(path, options)
        assert report.committed, report
        after = _read(version, warehouse, table, "latest", qs)
        at_old = _read(version, warehouse, table, str(old), qs)
        assert after["full"] == before["full"] == at_old["full"], (table, "full read")
        assert after["full"][0] == paimon.open_table(path).count_rows()
        for q in qs:
            name = q.split(":")[0]
            for enabled in (True, False):
                assert after[(name, enabled)]["digest"] == before[(name, enabled)]["digest"], (table, q, enabled)
                assert at_old[(name, enabled)]["digest"] == before[(name, enabled)]["digest"], (table, q, enabled)
        name = needle.split(":")[0]
        on, off = after[(name, True)], after[(name, False)]
        assert on["rows"] == off["rows"] >= 1, (table, needle)
        if table.startswith("pk_"):
            continue  # the planner's pruning is checked on append tables (every name is in 100+ rows here)
        assert on["reader_rows"] < off["reader_rows"] or on["splits"] < off["splits"], (table, version, on, off)


def test_same_bytes_as_javas_own_rewrite(tmp_path):
    """Java master's FileIndexProcessor and arrowidx rewrite two copies of a table with the
    same options: the same index files (names and bytes) and manifest index fields."""
    version = java_version("master")
    options = {"file-index.bloom-filter.columns": "id,name,status", "file-index.in-manifest-threshold": "500b"}
    # Java's default size, given (without `items` arrowidx sizes each filter for its file's rows)
    options |= {f"file-index.bloom-filter.{c}.items": "1000000" for c in ("id", "name", "status")}
    states = []
    for who in ("java", "arrowidx"):
        warehouse = tmp_path / who
        path = copy_table(_source("master"), warehouse, "append_idx")
        if who == "java":
            javahelpers.run(version, "JavaRewrite", "rewrite", str(warehouse), "db.append_idx", *[f"{k}={v}" for k, v in options.items()])
        else:
            paimon.rewrite_file_index(path, options)
        table = paimon.open_table(path)
        state = {}
        for f in table.files:
            folder = Path(table.file_path(f)).parent
            files = {e: (folder / e).read_bytes() for e in f.extra_files if e.endswith(".index")}
            state[f.name] = (tuple(f.extra_files), f.embedded_index, files)
        states.append((table.snapshot_id, state))
    assert states[0][0] == states[1][0]
    assert states[0][1] == states[1][1]


def test_java_writer_appends_while_arrowidx_rewrites(tmp_path, monkeypatch):
    """A Java writer commits appends while arrowidx rewrites: both commits land (arrowidx plans
    again on the new snapshot), every appended row is there, Java reads it all.

    The order is fixed, not left to timing: the writer's second commit waits for the rewrite
    to have written its manifests (the fault hook ``paimon-manifests-written`` creates
    ``go-2``), and the rewrite commits only after that append landed (the hook waits for
    ``committed-2``): its first attempt conflicts, its second (the files exist) commits;
    then the writer's last two appends follow."""
    version = java_version("0.9.0")
    warehouse = tmp_path / "w"
    gate = tmp_path / "gate"
    gate.mkdir()
    path = copy_table(_source("0.9.0"), warehouse, "append_idx")
    rows_before = paimon.open_table(path).count_rows()
    java = subprocess.Popen(javahelpers.command(version, "PaimonCheck", str(warehouse), "append", "db.append_idx", "4", "500", "10000000",
                                                str(gate)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert java.stdout.readline().startswith("committed 1")  # the writer is running
        monkeypatch.setenv("ARROWIDX_FAULTS", f"paimon-manifests-written=touch:{gate / 'go-2'},"
                                              f"paimon-manifests-written=wait:{gate / 'committed-2'}")  # fmt: skip
        report = paimon.rewrite_file_index(path, {"file-index.bloom-filter.columns": "id,name,status"})
        monkeypatch.delenv("ARROWIDX_FAULTS")
        assert (gate / "committed-2").exists() and not (gate / "go-3").exists()
        for k in (3, 4):
            (gate / f"go-{k}").touch()
        out, err = java.communicate(timeout=300)
    finally:
        if java.poll() is None:
            java.kill()
    assert java.returncode == 0, err[-2000:]
    assert "appended 2000" in out
    assert report.committed and report.attempts == 2, report
    table = paimon.open_table(path)
    kinds = [(paimon.open_table(path, snapshot=i)._snapshot["commitKind"]) for i in range(5, table.snapshot_id + 1)]
    assert kinds == ["APPEND", "APPEND", "COMPACT", "APPEND", "APPEND"], kinds  # the order the gates set
    assert table.count_rows() == rows_before + 2000
    full = _read(version, warehouse, "append_idx", "latest", [])["full"]
    assert full[0] == rows_before + 2000

