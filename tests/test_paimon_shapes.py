"""More table shapes, written by Java Paimon 0.9.0 with bench/paimon_writer/WriteShapes.java
(``run.sh tests/paimon_tables/shapes-0.9.0 shapes``): two partition keys with NULL values and
an escaped value, many primitive types, rename + add column with old files whose indexes
name the old column, INSERT OVERWRITE (DELETE entries), and primary-key tables without
deletion vectors (merge-on-read, deduplicate and first-row). References: Java's full read
(``<table>.expected.csv``), filtered with pyarrow.compute.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pytest

paimon = pytest.importorskip("arrowidx.paimon")
pytest.importorskip("fastavro")

ROOT = Path(__file__).parent / "paimon_tables" / "shapes-0.9.0"
TABLES = ["evolve", "pk_deduplicate", "pk_first_row"]


def expected(name: str, schema: pa.Schema) -> pa.Table:
    read_as = pa.schema([pa.field(f.name, pa.int32() if f.type == pa.date32() else f.type) for f in schema])
    opts = pacsv.ConvertOptions(column_types=read_as, strings_can_be_null=True, quoted_strings_can_be_null=False)
    return pacsv.read_csv(ROOT / f"{name}.expected.csv", convert_options=opts).cast(schema)


def sort(t: pa.Table) -> pa.Table:
    return t.sort_by([(c, "ascending") for c in t.column_names])


FILTERS = {
    "evolve": [
        pc.field("id") == 1234,
        pc.field("full_name") == "n46208",
        pc.field("status") == "rare",
        pc.field("p").is_null(),
        pc.field("p") == "y z/%",
        (pc.field("q") == 1) & (pc.field("p") == "x"),
        pc.field("q").is_null(),
        pc.field("extra") > 400,
        pc.field("extra").is_null(),
        pc.field("flag") == True,  # noqa: E712
        pc.field("small") < -200,
        pc.field("f") >= 240.0,
        pc.field("dt") == pa.scalar(18005, pa.int32()).cast(pa.date32()),
        pc.field("dec") > pa.scalar(50, pa.decimal128(10, 2)),
        pc.field("status") == "overwritten",
        ~(pc.field("status") == "new"),
        (pc.field("id") < 100) | (pc.field("status") == "rare"),
    ],
    "pk_deduplicate": [pc.field("name") == "v1", pc.field("id") == 950, pc.field("p") == "b", pc.field("amount") > 20000],
    "pk_first_row": [pc.field("name") == "v1", pc.field("name") == "v0", pc.field("id") == 1005, pc.field("p") == "a"],
}


@pytest.mark.parametrize("name", TABLES)
def test_full_read_equals_java(name):
    t = paimon.open_table(ROOT / "db.db" / name)
    got = t.to_table()
    assert sort(got).equals(sort(expected(name, t.schema)))
    assert t.count_rows() == got.num_rows


@pytest.mark.parametrize("name,i", [(n, i) for n in TABLES for i in range(len(FILTERS[n]))])
def test_filters_equal_java_rows(name, i, row_takes):
    t = paimon.open_table(ROOT / "db.db" / name)
    expr = FILTERS[name][i]
    want = expected(name, t.schema).filter(expr)
    assert sort(t.to_table(filter=expr)).equals(sort(want))
    assert t.count_rows(expr) == want.num_rows


def test_pruning_on_shapes():
    t = paimon.open_table(ROOT / "db.db" / "evolve")
    # old files' bloom filters are on "name": a needle on the renamed column still skips them
    plan = t.explain(pc.field("full_name") == "n46208")
    assert plan.files_read < len(plan.files)
    assert "index" in {p.reason for p in plan.files if p.skipped}
    assert t.explain(pc.field("p").is_null()).files_read == 9  # NULL partition: 3 commits x 3 q
    assert {p.reason for p in t.explain(pc.field("p") == "y z/%").files if p.skipped} == {"partition"}
    assert t.explain(pc.field("status") == "rare").files_read <= 9  # bitmap: only commit 2's files


def test_overwrite_removed_files():
    t = paimon.open_table(ROOT / "db.db" / "evolve")
    older = paimon.open_table(ROOT / "db.db" / "evolve", snapshot=t.snapshot_id - 1)
    assert len(older.files) - 3 + 1 == len(t.files)
    assert t.to_table(filter=(pc.field("p") == "x") & (pc.field("q") == 0)).num_rows == 100


def test_data_file_found_by_listing_when_path_differs(tmp_path):
    """A partition directory not named as computed (e.g. another escaping): files are found
    by name; their index files are then not found and the files are simply read."""
    import shutil

    d = tmp_path / "evolve"
    shutil.copytree(ROOT / "db.db" / "evolve", d)
    (d / "p=x").rename(d / "p=x-moved")
    t = paimon.open_table(d)
    expr = pc.field("id") == 1000050
    assert t.to_table(filter=expr).column("full_name").to_pylist() == ["over50"]
    assert sort(t.to_table()).equals(sort(expected("evolve", t.schema)))
