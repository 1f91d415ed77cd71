"""Table shapes beyond ``shared/paimon-tables``, written by Java Paimon 0.9.0 with
bench/paimon_writer/WriteShapes.java. References: Java's full read of each table
(``<table>.expected.csv``: timestamps as epoch nanoseconds, binaries as hex, dates as days),
filtered with pyarrow.compute.

``shapes-0.9.0`` (``run.sh tests/paimon_tables/shapes-0.9.0 shapes``): two partition keys
with NULL values and an escaped value, many primitive types, rename + add column with old
files whose indexes name the old column, INSERT OVERWRITE (DELETE entries), and primary-key
tables without deletion vectors (merge-on-read, deduplicate and first-row).

``more-0.9.0`` (``run.sh tests/paimon_tables/more-0.9.0 more``):

* ``types``: every primitive type Paimon writes to Parquet (TINYINT, CHAR, VARCHAR, BINARY,
  VARBINARY, DECIMAL(38,10) and (5,2), TIME, TIMESTAMP(3/6/9), TIMESTAMP WITH LOCAL TIME
  ZONE, DOUBLE), NULLs in each, bloom filters on six of them (VARCHAR's at fpp 0.5) and
  bitmaps on CHAR, TIMESTAMP(9) and the local-time-zone timestamp;
* ``dyn_pk``: a primary-key table in dynamic-bucket mode (hash index files in the index
  manifest), compacted every second sorted run (DELETE entries, files above level 0),
  snapshots expired down to two;
* ``dv_level0``: deletion vectors, a bloom filter at fpp 0.9 and a bitmap, expired
  snapshots, and a last commit written ``write-only``: its files stay at level 0, and Java's
  batch read leaves them out.
"""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pytest

from arrowidx.errors import PaimonTableError

paimon = pytest.importorskip("arrowidx.paimon")
pytest.importorskip("fastavro")

FIXTURES = Path(__file__).parent / "paimon_tables"
ROOT = FIXTURES / "shapes-0.9.0"
MORE = FIXTURES / "more-0.9.0"
TABLES = {
    "evolve": ROOT,
    "pk_deduplicate": ROOT,
    "pk_first_row": ROOT,
    "types": MORE,
    "dyn_pk": MORE,
    "dv_level0": MORE,
}


def _as_read_by_csv(t: pa.DataType) -> pa.DataType:
    """How a column of type ``t`` is written in Java's CSV dump."""
    if pa.types.is_timestamp(t):
        return pa.int64()  # epoch nanoseconds
    if pa.types.is_time(t) or pa.types.is_date(t):
        return pa.int32()  # milliseconds of the day / days
    if pa.types.is_binary(t) or pa.types.is_decimal(t):
        return pa.string()  # hex / plain decimal text
    return t


def _from_csv(column: pa.ChunkedArray, t: pa.DataType) -> pa.ChunkedArray:
    if pa.types.is_timestamp(t):
        return column.cast(pa.timestamp("ns", tz=t.tz)).cast(t)  # exact: Java wrote t's precision
    if pa.types.is_binary(t):
        return pa.chunked_array(
            [pa.array([None if v is None else bytes.fromhex(v) for v in column.to_pylist()], t)]
        )
    return column.cast(t)


def expected(name: str, schema: pa.Schema) -> pa.Table:
    """Java's full read of table ``name``, under ``schema``."""
    read_as = pa.schema([pa.field(f.name, _as_read_by_csv(f.type)) for f in schema])
    opts = pacsv.ConvertOptions(
        column_types=read_as, strings_can_be_null=True, quoted_strings_can_be_null=False
    )
    raw = pacsv.read_csv(TABLES[name] / f"{name}.expected.csv", convert_options=opts)
    return pa.table([_from_csv(raw.column(f.name), f.type) for f in schema], schema=schema)


def sort(t: pa.Table) -> pa.Table:
    return t.sort_by([(c, "ascending") for c in t.column_names])


def ns(value: int, unit: str, tz: str | None = None) -> pa.Scalar:
    """A timestamp of type ``timestamp(unit, tz)`` from epoch nanoseconds."""
    return pa.scalar(value, pa.timestamp("ns", tz=tz)).cast(pa.timestamp(unit, tz=tz))


# row id 1 of the types table (commit 0), as Java wrote it (see WriteShapes.more)
ID1_TS3 = 1_600_000_001_000_000_000
ID1_TS6 = 1_600_000_001_000_003_000
ID1_TS9 = 1_600_000_001_000_003_001
ID1_LTZ = 1_600_003_601_000_003_000

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
    "pk_deduplicate": [
        pc.field("name") == "v1",
        pc.field("id") == 950,
        pc.field("p") == "b",
        pc.field("amount") > 20000,
    ],
    "pk_first_row": [
        pc.field("name") == "v1",
        pc.field("name") == "v0",
        pc.field("id") == 1005,
        pc.field("p") == "a",
    ],
    "types": [
        pc.field("t") == 5,
        pc.field("t") < -95,
        pc.field("t").is_null(),
        pc.field("c") == "c7",
        pc.field("c").isin(["c1", "c29", "nope"]),
        pc.field("vc") == "v7919",
        pc.field("vc") == "absent",
        pc.field("b") == bytes.fromhex("01000000"),
        pc.field("vb") == bytes.fromhex("1f00"),
        pc.field("d38") > pa.scalar(Decimal("100.5"), pa.decimal128(38, 10)),
        pc.field("d5") == pa.scalar(Decimal("-1.99"), pa.decimal128(5, 2)),
        pc.field("tm") == pa.scalar(datetime.time(0, 1, 0, 1000), pa.time32("ms")),
        pc.field("ts3") == ns(ID1_TS3, "ms"),
        pc.field("ts6") == ns(ID1_TS6, "us"),
        pc.field("ts6") >= ns(ID1_TS6 + 2_000 * 1_000_000_000, "us"),
        pc.field("ts9") == ns(ID1_TS9, "ns"),
        # the bitmap keys on microseconds: the same key as row 1's, but no row
        pc.field("ts9") == ns(ID1_TS9 - 1, "ns"),
        pc.field("ts9").isin(pa.array([ID1_TS9 + 1, ID1_TS9], pa.timestamp("ns"))),
        pc.field("ltz") == ns(ID1_LTZ, "us", "UTC"),
        pc.field("dbl") >= 100.0,
        (pc.field("c") == "c7") & (pc.field("t") > 0),
    ],
    "dyn_pk": [
        pc.field("name") == "v3",
        pc.field("id") == 350,
        pc.field("amount") > 30000,
        pc.field("id") == 985,
    ],
    "dv_level0": [
        pc.field("name") == "u5",
        pc.field("status") == "rare",
        pc.field("status") == "unseen",  # only in the level-0 files
        pc.field("id") == 550,  # updated by the level-0 files: Java reads the older row
        pc.field("name") == "n1950",  # deleted
    ],
}


@pytest.mark.parametrize("name", TABLES)
def test_full_read_equals_java(name):
    t = paimon.open_table(TABLES[name] / "db.db" / name)
    got = t.to_table()
    assert sort(got).equals(sort(expected(name, t.schema)))
    assert t.count_rows() == got.num_rows


@pytest.mark.parametrize("name,i", [(n, i) for n in TABLES for i in range(len(FILTERS[n]))])
def test_filters_equal_java_rows(name, i, row_takes):
    t = paimon.open_table(TABLES[name] / "db.db" / name)
    expr = FILTERS[name][i]
    want = expected(name, t.schema).filter(expr)
    assert sort(t.to_table(filter=expr)).equals(sort(want))
    assert t.count_rows(expr) == want.num_rows


@pytest.mark.parametrize("name", ["evolve", "dv_level0"])
def test_a_table_on_a_filesystem_that_is_not_local_reads_as_java_reads_it(name):
    """Through a pyarrow filesystem other than ``LocalFileSystem`` (here one rooted at the
    warehouse, as an object store's would be) metadata, indexes and footers are read by
    that filesystem (footers on threads): the rows are Java's."""
    import pyarrow.fs as pafs

    fs = pafs.SubTreeFileSystem(str(TABLES[name].resolve()), pafs.LocalFileSystem())
    t = paimon.open_table(f"db.db/{name}", filesystem=fs)
    want = expected(name, t.schema)
    assert sort(t.to_table()).equals(sort(want))
    for expr in FILTERS[name]:
        assert sort(t.to_table(filter=expr)).equals(sort(want.filter(expr))), expr


def test_pruning_on_shapes():
    t = paimon.open_table(ROOT / "db.db" / "evolve")
    # old files' bloom filters are on "name": a needle on the renamed column still skips them
    plan = t.explain(pc.field("full_name") == "n46208")
    assert plan.files_read < len(plan.files)
    assert "index" in {p.reason for p in plan.files if p.skipped}
    assert t.explain(pc.field("p").is_null()).files_read == 9  # NULL partition: 3 commits x 3 q
    assert {p.reason for p in t.explain(pc.field("p") == "y z/%").files if p.skipped} == {
        "partition"
    }
    assert t.explain(pc.field("status") == "rare").files_read <= 9  # bitmap: only commit 2's files


def test_overwrite_removed_files():
    t = paimon.open_table(ROOT / "db.db" / "evolve")
    older = paimon.open_table(ROOT / "db.db" / "evolve", snapshot=t.snapshot_id - 1)
    assert len(older.files) - 3 + 1 == len(t.files)
    assert t.to_table(filter=(pc.field("p") == "x") & (pc.field("q") == 0)).num_rows == 100


def test_a_name_given_to_another_column_later_is_planned_by_its_new_column(tmp_path):
    """Statistics decoded from a manifest entry are kept for every table object of the
    process, per latest schema: after ``status`` is dropped and ``full_name`` renamed to
    ``status`` (a schema, then a snapshot committed under it; written here by hand), a
    filter on ``status`` is planned with the former ``full_name``'s statistics, though a
    table at the earlier snapshot planned ``status`` first. The reference: Java's full read
    of the table (the same files), with ``status`` dropped and ``full_name`` renamed,
    filtered by pyarrow."""
    import shutil

    d = tmp_path / "evolve"
    shutil.copytree(ROOT / "db.db" / "evolve", d)
    schema = json.loads((d / "schema" / "schema-1").read_text())
    schema["id"] = 2
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "status"]
    for f in schema["fields"]:
        if f["name"] == "full_name":
            f["name"] = "status"
    (d / "schema" / "schema-2").write_text(json.dumps(schema))
    latest = int((d / "snapshot" / "LATEST").read_text())
    snapshot = json.loads((d / "snapshot" / f"snapshot-{latest}").read_text())
    snapshot.update(id=latest + 1, schemaId=2)
    (d / "snapshot" / f"snapshot-{latest + 1}").write_text(json.dumps(snapshot))
    (d / "snapshot" / "LATEST").write_text(str(latest + 1))

    before = paimon.open_table(d, snapshot=latest)
    after = paimon.open_table(d)
    assert after.snapshot_id == latest + 1 and after.files[0] is before.files[0]  # the same manifest entries
    java = expected("evolve", before.schema).drop_columns(["status"])
    java = java.rename_columns(["status" if c == "full_name" else c for c in java.column_names])
    java = java.select(after.schema.names).cast(after.schema)
    assert sort(after.to_table()).equals(sort(java))
    name = java.column("status")[0].as_py()
    for value in (name, "rare"):
        before.to_table(filter=pc.field("status") == value)  # statistics of the dropped status, first
        expr = pc.field("status") == value
        assert sort(after.to_table(filter=expr)).equals(sort(java.filter(expr)))
    assert java.filter(pc.field("status") == name).num_rows


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


def test_filters_find_rows():
    """The needles above hit rows (a filter matching nothing would pass the test above
    however the index answered)."""
    t = paimon.open_table(MORE / "db.db" / "types")
    ref = expected("types", t.schema)
    empty = {6, 16}  # "absent", the nanosecond off
    for i, expr in enumerate(FILTERS["types"]):
        assert (ref.filter(expr).num_rows == 0) == (i in empty), str(expr)


JAVA = json.loads((MORE / "java-index-answers.json").read_text())["answers"]


def _literal(value, t: pa.DataType) -> pa.Scalar:
    """A literal in the golden corpus's encoding (timestamps in epoch microseconds, TIME in
    milliseconds of the day) as a scalar of the column's type."""
    if pa.types.is_timestamp(t):
        return pa.scalar(value * 1000, pa.timestamp("ns", tz=t.tz)).cast(t)
    return pa.scalar(value, t)


def _expression(pred: dict, schema: pa.Schema) -> pc.Expression:
    field, t = pc.field(pred["field"]), schema.field(pred["field"]).type
    if pred["op"] == "eq":
        return field == _literal(pred["literal"], t)
    if pred["op"] == "in":
        return field.isin(pa.array([_literal(v, t) for v in pred["literals"]], t))
    assert pred["op"] == "is_null"
    return field.is_null()


@pytest.mark.parametrize("i", range(len(JAVA)), ids=[json.dumps(a["predicate"]) for a in JAVA])
def test_typed_indexes_answer_as_java(i):
    """Per data file, the index answer Apache Paimon's own ``FileIndexPredicate`` gives
    (``bench/paimon_writer/index_answers.py``): where Java's index skips the file, arrowidx
    skips it; where Java's index keeps it, arrowidx's index keeps it; a Java bitmap is arrowidx's
    bitmap, row for row. Timestamps, times and binaries are not decoded from the manifest's
    statistics, so these files are pruned by their indexes alone."""
    t = paimon.open_table(MORE / "db.db" / "types")
    answer = JAVA[i]
    plan = t.explain(_expression(answer["predicate"], t.schema))
    by_name = {p.file.name: p for p in plan.files}
    assert set(by_name) == set(answer["files"])
    for name, java in answer["files"].items():
        ours = by_name[name]
        if java["kind"] == "SKIP" or (java["kind"] == "BITMAP" and java["cardinality"] == 0):
            assert ours.skipped, (name, java)
        else:  # (statistics may still rule the file out)
            assert not (ours.skipped and ours.reason == "index"), (name, java)
        if java["kind"] == "BITMAP" and ours.result.kind == "bitmap":
            assert list(ours.result.bitmap) == java["positions"], name


def test_dynamic_bucket_compacted_table():
    t = paimon.open_table(MORE / "db.db" / "dyn_pk")
    assert len({f.bucket for f in t.files}) > 1  # dynamic mode spread the keys over buckets
    assert any(f.level > 0 for f in t.files)  # compaction ran


def test_level0_files_are_not_read():
    t = paimon.open_table(MORE / "db.db" / "dv_level0")
    plan = t.explain(None)
    level0 = [name for name, why in plan.not_read if why == "level 0 of a deletion-vector table"]
    assert level0 and all(f.level == 0 for f in t.files if f.name in level0)
    assert t.to_table(filter=pc.field("id") == 550).column("name").to_pylist() == ["n550"]


@pytest.mark.parametrize("name", ["dyn_pk", "dv_level0"])
def test_expired_snapshots(name):
    """Snapshots were expired down to the last two: the earliest kept one reads, an
    expired one is a clear error naming it."""
    t = paimon.open_table(MORE / "db.db" / name)
    earliest = int((MORE / "db.db" / name / "snapshot" / "EARLIEST").read_text())
    assert 1 < earliest < t.snapshot_id
    assert paimon.open_table(MORE / "db.db" / name, snapshot=earliest).snapshot_id == earliest
    with pytest.raises(PaimonTableError, match=f"snapshot-{earliest - 1}"):
        paimon.open_table(MORE / "db.db" / name, snapshot=earliest - 1)
