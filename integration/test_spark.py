"""arrowidx on a real local Spark: build, write, the ``arrowidx`` data source, the mapInArrow helper.

Expected results always come from Spark's own Parquet reader on the same files, with the
deleted rows removed independently (by filtering on the delete predicate), never from
arrowidx itself. Spark's Parquet *filter pushdown* is switched off for the reference reads:
with it on, parquet-mr's row-group statistics drop NaN rows that Spark's semantics keep
(``amount > 1000`` misses NaN on files written by pyarrow, whose min/max leave NaN out); see
``test_reference_reader_nan_pushdown`` and docs/spark.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import decimal
import math
import os
import posixpath
import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.index import INDEX_TYPES
from arrowidx.lake.commit import load_manifest
from arrowidx.lake.source import open_lake

spark_mod = pytest.importorskip("arrowidx.spark")
from pyspark.sql import functions as F  # noqa: E402
from tests.conftest import index_dir  # noqa: E402

FILES = 6
ROWS = 1_800
ROW_GROUP = 400
STATUSES = ["PAID", "NEW", "SHIPPED", "CANCELLED", "RETURNED", "REFUNDED"]
REGIONS = ["eu-west", "eu-north", "us-east", "us-west", "ap-south", "é-zone"]
T0 = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


def make_table(rng: np.random.Generator, ids: np.ndarray) -> pa.Table:
    """One file's rows: every column type the data source maps, nulls, NaN, -0.0 and 0.0."""
    n = len(ids)

    def nulls(p: float) -> np.ndarray:
        return rng.random(n) < p

    status = rng.choice(STATUSES, n, p=[0.45, 0.3, 0.2, 0.03, 0.015, 0.005])
    amount = rng.gamma(2.0, 30.0, n)
    special = rng.random(n)
    amount[special < 0.02] = np.nan
    amount[(special >= 0.02) & (special < 0.03)] = -0.0
    amount[(special >= 0.03) & (special < 0.04)] = 0.0
    micros = rng.integers(0, 10 * 86_400 * 10**6, n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "user_id": pa.array(rng.integers(0, 50_000, n), pa.int64(), mask=nulls(0.02)),
            "status": pa.array(status, pa.string(), mask=nulls(0.03)),
            "region": pa.array(rng.choice(REGIONS, n), pa.string(), mask=nulls(0.02)),
            "amount": pa.array(amount, pa.float64(), mask=nulls(0.02)),
            "score": pa.array(rng.normal(0, 1, n).astype(np.float32), pa.float32()),
            "small": pa.array(rng.integers(0, 20, n), pa.int32(), mask=nulls(0.02)),
            "tiny": pa.array(rng.integers(-5, 5, n), pa.int8()),
            "flag": pa.array(rng.random(n) < 0.3, pa.bool_(), mask=nulls(0.05)),
            "day": pa.array(rng.integers(19_700, 19_730, n).astype(np.int32), pa.int32()).cast(pa.date32()),
            "ts": pa.array(micros + int(T0.timestamp() * 10**6), pa.timestamp("us", tz="UTC")),
            "ts_ntz": pa.array(micros + int(T0.timestamp() * 10**6), pa.timestamp("us")),
            "price": pa.array([decimal.Decimal(int(c)) / 100 for c in rng.integers(0, 50_000, n)], pa.decimal128(10, 2)),
            "payload": pa.array([bytes([i % 7, i % 3]) for i in range(n)], pa.binary()),
        }
    )


def write_dataset(root: Path, seed: int = 7, files: int = FILES, rows: int = ROWS) -> list[int]:
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    ids = rng.permutation(files * rows * 3)[: files * rows]
    for i in range(files):
        table = make_table(rng, ids[i * rows : (i + 1) * rows])
        pq.write_table(table, root / f"part-{i}.parquet", row_group_size=ROW_GROUP)
    return ids.tolist()


def index_options() -> dict[str, str]:
    options = {
        "file-index.bitmap.columns": "status,region,small,flag,day,tiny",
        "file-index.bloom-filter.columns": "id,amount,ts",
        "file-index.in-manifest-threshold": "600 bytes",
    }
    if "range-bitmap" in INDEX_TYPES:
        options["file-index.range-bitmap.columns"] = "user_id,ts_ntz,score,price"
    else:
        options["file-index.bloom-filter.columns"] += ",user_id,ts_ntz"
    return options


@contextlib.contextmanager
def parquet_pushdown(spark, enabled: bool):
    key = "spark.sql.parquet.filterPushdown"
    before = spark.conf.get(key)
    spark.conf.set(key, str(enabled).lower())
    try:
        yield
    finally:
        spark.conf.set(key, before)


def canon(table: pa.Table) -> list[tuple]:
    """Rows sorted by id, floats by their bits (``-0.0`` is not ``0.0``; NaN equals NaN),
    large types and time zones normalised."""
    table = table.sort_by("id")
    columns = []
    for name in table.column_names:
        col = table.column(name)
        if pa.types.is_large_string(col.type):
            col = col.cast(pa.string())
        if pa.types.is_floating(col.type):
            values = col.to_pylist()
            columns.append([v if v is None else "NaN" if math.isnan(v) else struct.pack(">d", v) for v in values])
        else:
            columns.append(col.to_pylist())
    return list(zip(*columns))


def assert_same(got: pa.Table, expected: pa.Table, what: str) -> None:
    assert got.num_rows == expected.num_rows, f"{what}: {got.num_rows} rows, expected {expected.num_rows}"
    assert got.column_names == expected.column_names, what
    assert canon(got) == canon(expected), what


# ------------------------------------------------------------------------------------------
# fixtures
# ------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def spark_reader_for_every_read(monkeypatch):
    """The lakes here are small, so arrowidx.spark.read would give every selective read to the
    driver or the data source, and by default files with deletions go to the data source;
    Spark's own reader (and its anti-join) is what these tests check, so it reads whatever it
    can serve. ``test_selective_small_reads_go_to_the_driver_or_the_data_source`` checks the
    defaults."""
    from arrowidx.spark import native

    monkeypatch.setattr(native, "PYTHON_MAX_BYTES", -1)
    monkeypatch.setattr(native, "LOCAL_SELECTIVE_MAX_BYTES", -1)
    monkeypatch.setattr(native, "DELETION_BUDGET", 1 << 21)  # Spark's reader, with the anti-join


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    """A dataset indexed by arrowidx.spark.build, with deletions and one stale file."""
    root = tmp_path_factory.mktemp("lake") / "orders"
    all_ids = write_dataset(root)
    report = spark_mod.build(spark, str(root), index_options())
    assert len(report.indexed) == FILES
    rng = np.random.default_rng(3)
    # No deletions in part-5, which is rewritten below: deletions of a rewritten file raise
    # StaleDeletionError (issue 11), a rewritten file without deletions is read in full.
    part5 = pq.read_table(root / "part-5.parquet", columns=["id"]).column("id").to_numpy()
    candidates = np.setdiff1d(np.asarray(all_ids), part5)
    deleted = sorted(rng.choice(candidates, size=len(all_ids) // 20, replace=False).tolist())
    arrowidx.delete(str(root), pc.field("id").isin(deleted), progress=False)
    # A file rewritten after it was indexed: stale, read in full.
    stale = make_table(np.random.default_rng(99), np.arange(10**7, 10**7 + 900, dtype=np.int64))
    pq.write_table(stale, root / "part-5.parquet", row_group_size=ROW_GROUP)
    return {"root": str(root), "deleted": deleted}


def reference(spark, lake, condition: str | None):
    """Spark's own Parquet reader, row-level semantics, deleted rows filtered out by id."""
    with parquet_pushdown(spark, False):
        df = spark.read.parquet(lake["root"])
        if condition is not None:
            df = df.filter(condition)
        return df.filter(~F.col("id").isin(lake["deleted"])).toArrow()


# ------------------------------------------------------------------------------------------
# 1. build
# ------------------------------------------------------------------------------------------


def _unsuffixed(name: str | None) -> str | None:
    """An index file's name without the writer's suffix: ``<data file>.<xxh64>.index``."""
    return None if name is None else re.sub(r"-[0-9a-f]+\.index$", ".index", name)


def test_spark_build_equals_local_build(spark, tmp_path):
    local, distributed = tmp_path / "local", tmp_path / "spark"
    write_dataset(local, seed=11, files=4, rows=1200)
    tiny = make_table(np.random.default_rng(5), np.arange(10**6, 10**6 + 30, dtype=np.int64))
    pq.write_table(tiny, local / "part-4.parquet")  # a small container, embedded in the manifest
    shutil.copytree(local, distributed)
    options = index_options()
    options["file-index.in-manifest-threshold"] = "16 kb"
    arrowidx.build(str(local), options, progress=False)
    report = spark_mod.build(spark, str(distributed), options)
    assert sorted(report.indexed) == [f"part-{i}.parquet" for i in range(5)]

    fs_a, root_a, _ = open_lake(str(local))
    fs_b, root_b, _ = open_lake(str(distributed))
    a, b = load_manifest(fs_a, root_a), load_manifest(fs_b, root_b)
    assert a.version == b.version == 1
    assert a.options == b.options
    assert list(a.files) == list(b.files)
    embedded = files = 0
    for rel in a.files:
        ea, eb = a.files[rel], b.files[rel]
        assert (ea.path, ea.size, ea.rows, ea.deletion) == (eb.path, eb.size, eb.rows, eb.deletion)
        # options, schema, size, checksum, layout, embedded bytes, and the file name up to the
        # writer's own suffix (index files are named <data file>.<xxh64>-<writer>.index)
        assert dataclasses.replace(ea.index, file=_unsuffixed(ea.index.file)) == dataclasses.replace(eb.index, file=_unsuffixed(eb.index.file))
        embedded += ea.index.embedded is not None
        files += ea.index.file is not None
    assert embedded and files, "the threshold should split the containers between both places"
    index_a = sorted(p.relative_to(index_dir(local)) for p in (Path(index_dir(local)) / "index").rglob("*.index"))
    index_b = sorted(p.relative_to(index_dir(distributed)) for p in (Path(index_dir(distributed)) / "index").rglob("*.index"))
    assert [_unsuffixed(str(p)) for p in index_a] == [_unsuffixed(str(p)) for p in index_b] and len(index_a) == files
    index_b = [next(p for p in index_b if _unsuffixed(str(p)) == _unsuffixed(str(q))) for q in index_a]
    for rel_a, rel_b in zip(index_a, index_b):
        assert (Path(index_dir(local)) / rel_a).read_bytes() == (Path(index_dir(distributed)) / rel_b).read_bytes(), rel_a

    again = spark_mod.build(spark, str(distributed), options)  # incremental: nothing to do
    assert again.indexed == [] and len(again.unchanged) == 5 and again.version == 1 and not again.changed  # no-op: no commit


# ------------------------------------------------------------------------------------------
# 3. the data source against spark.read.parquet
# ------------------------------------------------------------------------------------------

BATTERY = [
    None,
    "id = 1234",
    "id IN (5, 77, 1234, 4321, 99999)",
    "id > 8000 AND id <= 9000",
    "status = 'REFUNDED'",
    "status = 'NO-SUCH-STATUS'",
    "status <> 'PAID'",
    "NOT (status IN ('PAID', 'NEW'))",
    "status IN ('PAID', NULL)",
    "NOT (status IN ('REFUNDED', NULL))",
    "status <=> 'RETURNED'",
    "NOT (status <=> 'PAID')",
    "status IS NULL",
    "status IS NOT NULL AND region = 'eu-west'",
    "region LIKE 'eu%'",
    "region LIKE 'é%'",
    "NOT (region LIKE 'us%')",
    "region LIKE '%west'",
    "region LIKE '%u-w%'",
    "region > 'eu-west'",
    "region >= 'é'",
    "status = 'PAID' OR region = 'ap-south'",
    "upper(region) = 'US-EAST'",
    "amount > 150",
    "amount >= 150 AND amount < 200",
    "NOT (amount > 50)",
    "amount = double('NaN')",
    "amount > double('NaN')",
    "amount >= double('NaN')",
    "amount < double('NaN')",
    "amount <= double('NaN')",
    "NOT (amount = double('NaN'))",
    "amount = 0.0",
    "amount = -0.0",
    "amount IN (0.0, double('NaN'))",
    "NOT (amount IN (0.0, 60.5))",
    "amount <=> double('NaN')",
    "score < -1.5",
    "user_id BETWEEN 1000 AND 1500",
    "user_id <=> NULL",
    "small IN (1, 2, 3)",
    "small IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)",
    "tiny = -3",
    "flag",
    "NOT flag",
    "flag IS NULL",
    "day = DATE'2024-01-05'",
    "day >= DATE'2024-01-20'",
    "ts >= TIMESTAMP'2024-01-05 00:00:00'",
    "ts < TIMESTAMP'2024-01-02 12:00:00+00:00'",
    "ts_ntz >= TIMESTAMP_NTZ'2024-01-09 00:00:00'",
    "ts IN (TIMESTAMP'2024-01-03 10:00:00', TIMESTAMP'2024-01-04 00:00:00') OR ts IS NULL",
    "day IN (DATE'2024-01-05', DATE'2024-01-07')",
    "region IN ('eu-west', NULL) AND price IN (123.45, 0.50, 99.99)",
    "price = 123.45",
    "price > 450.00",
    "payload = X'0102'",
    "id % 100 = 7",
]


@pytest.fixture(scope="module")
def battery_reference(spark, lake) -> pa.Table:
    """Every battery condition evaluated by Spark on its own Parquet reader, in one job.

    One boolean column per condition (``Column`` evaluation is exactly what ``filter``
    keeps: the rows where it is TRUE), deleted rows filtered out by id.
    """
    with parquet_pushdown(spark, False):
        df = spark.read.parquet(lake["root"]).filter(~F.col("id").isin(lake["deleted"]))
        flags = [F.expr(c).alias(f"__c{i}") for i, c in enumerate(BATTERY) if c is not None]
        return df.select("*", *flags).toArrow()


@pytest.mark.parametrize("condition", BATTERY)
def test_source_equals_parquet_minus_deletions(spark, lake, battery_reference, condition):
    df = spark.read.format("arrowidx").load(lake["root"])
    data_columns = [c for c in battery_reference.column_names if not c.startswith("__c")]
    expected = battery_reference
    if condition is not None:
        df = df.filter(condition)
        flag = battery_reference.column(f"__c{BATTERY.index(condition)}")
        expected = expected.filter(pc.fill_null(flag, False))
    assert_same(df.toArrow(), expected.select(data_columns), condition or "no filter")


@pytest.mark.parametrize("condition", [c for c in BATTERY if c is not None])
def test_load_filter_equals_parquet_minus_deletions(spark, lake, battery_reference, condition):
    """The filter given at load time (SQL text, arrowidx's own front end) prunes with the
    indexes and selects exactly the rows Spark's SQL selects (functions and arithmetic
    included: evaluated on the rows read)."""
    data_columns = [c for c in battery_reference.column_names if not c.startswith("__c")]
    if condition in DUCKDB_DIFFERS:
        expected = _duckdb_filter(battery_reference.select(data_columns), condition, spark)
    else:
        flag = battery_reference.column(f"__c{BATTERY.index(condition)}")
        expected = battery_reference.filter(pc.fill_null(flag, False)).select(data_columns)
    assert_same(spark_mod.read(spark, lake["root"], condition).toArrow(), expected, condition)


#: Battery conditions whose SQL text means other rows in DuckDB than in Spark SQL: SQL text
#: has DuckDB's meaning everywhere (docs/guide.md, "SQL text"), so their reference is DuckDB
#: in memory, with the session's time zone as DuckDB's TimeZone.
DUCKDB_DIFFERS = {
    # DuckDB applies the offset and keeps a naive TIMESTAMP (12:00), which a zoned column
    # reads in the session's zone (12:00 in Los Angeles); Spark keeps the instant 12:00 UTC.
    "ts < TIMESTAMP'2024-01-02 12:00:00+00:00'": "a TIMESTAMP literal with an offset",
}


def _duckdb_filter(table: pa.Table, condition: str, spark) -> pa.Table:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute(f"SET TimeZone = '{spark.conf.get('spark.sql.session.timeZone')}'")
    con.register("battery", table.append_column("__row", pa.array(np.arange(table.num_rows))))
    rows = con.sql(f"SELECT __row FROM battery WHERE {condition}").to_arrow_table().column(0)
    return table.take(np.sort(rows.to_numpy()))


def test_schema_matches_spark_parquet(spark, lake):
    ours = spark.read.format("arrowidx").load(lake["root"]).schema
    theirs = spark.read.parquet(lake["root"]).schema
    assert [(f.name, f.dataType) for f in ours] == [(f.name, f.dataType) for f in theirs]


def _has_filter(df) -> bool:
    """Whether Spark's physical plan still filters above the scan."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return any(line.lstrip(" +-*()0123456789").startswith("Filter ") for line in plan.splitlines())


def _python_scans(df) -> int:
    """How many scans of Spark's physical plan read through the arrowidx Python data source."""
    return df._jdf.queryExecution().executedPlan().toString().count("BatchScan arrowidx[")


def _read_on_driver(df) -> bool:
    """Whether some of ``df``'s rows were read by the driver (a local relation in the plan)."""
    return "LocalTableScan" in df._jdf.queryExecution().executedPlan().toString()


def _spark_files(df) -> set[str]:
    """The data files Spark's own Parquet reader reads for ``df`` (base names)."""
    return {posixpath.basename(f) for f in df.inputFiles()}


def test_files_pruned_by_the_load_filter(spark, lake):
    # The format spelling: files packed into partitions as Spark's own reader packs them (a
    # task costs more than a small file); maxPartitionBytes=1 gives one partition per file.
    packed = spark.read.format("arrowidx").load(lake["root"]).rdd.getNumPartitions()
    assert packed == spark.read.parquet(lake["root"]).rdd.getNumPartitions() < FILES
    df = spark.read.format("arrowidx").option("maxPartitionBytes", "1").load(lake["root"])
    assert df.rdd.getNumPartitions() == FILES
    # arrowidx.spark.read: the files the indexes keep, read by Spark's own Parquet reader
    needle = spark_mod.read(spark, lake["root"], "id = 1234")
    kept = _spark_files(needle)
    assert 0 < len(kept) < FILES and _python_scans(needle) == 0  # the bloom filters ruled files out
    assert_same(needle.toArrow(), reference(spark, lake, "id = 1234"), "needle")
    as_expression = spark_mod.read(spark, lake["root"], pc.field("id") == 1234)
    assert _spark_files(as_expression) == kept
    assert_same(as_expression.toArrow(), reference(spark, lake, "id = 1234"), "needle as an Expression")
    nothing = spark_mod.read(spark, lake["root"], "status = 'NO-SUCH-STATUS'")
    assert _spark_files(nothing) == {"part-5.parquet"} and nothing.count() == 0  # only the stale file
    # Spark's own .filter() is never pushed into the data source: it stays in Spark's plan.
    assert _has_filter(df.filter("status = 'PAID'"))
    # The stale file is read in full (its index is not trusted): it survives any pruning.
    where = "id >= 10000000 AND status = 'REFUNDED'"
    stale = spark_mod.read(spark, lake["root"], where)
    assert "part-5.parquet" in _spark_files(stale)
    assert_same(stale.toArrow(), reference(spark, lake, where), "stale file")


def test_bad_filter_option_is_refused(spark, lake):
    with pytest.raises(Exception, match="not an encoded pyarrow Expression"):
        spark.read.format("arrowidx").option("filter", "id = 3").load(lake["root"]).count()
    with pytest.raises(Exception, match="WhereError|unknown column|no column"):
        spark_mod.read(spark, lake["root"], "no_such_column = 3").count()


def test_queries_on_one_dataframe_do_not_leak_into_each_other(spark, lake):
    """PySpark keeps the reader of the last scan that pushed filters on a relation and reuses
    it for a later query on the same DataFrame that pushes none: a reader pruned by
    ``.filter()`` made ``df.count()`` return the rows of the earlier query (0 here)."""
    key = "spark.sql.python.filterPushdown.enabled"  # on: Spark asks the reader to push filters
    before = spark.conf.get(key, "false")
    spark.conf.set(key, "true")
    try:
        df = spark.read.format("arrowidx").load(lake["root"])
        total = reference(spark, lake, None).num_rows
        assert df.filter("id = 0").count() == reference(spark, lake, "id = 0").num_rows
        assert df.count() == total
        assert df.filter("(id = 5) OR (id IS NULL)").count() == reference(spark, lake, "(id = 5) OR (id IS NULL)").num_rows
        assert df.filter("status = 'NO-SUCH-STATUS'").count() == 0
        assert len(df.collect()) == total
    finally:
        spark.conf.set(key, before)
    # a load filter belongs to the relation: every query on it means the same rows
    refunded = spark_mod.read(spark, lake["root"], "status = 'REFUNDED'")
    n = reference(spark, lake, "status = 'REFUNDED'").num_rows
    assert refunded.filter("id = 0").count() == reference(spark, lake, "status = 'REFUNDED' AND id = 0").num_rows
    assert refunded.count() == n


def test_user_schema_reads_fewer_columns(spark, lake):
    df = spark.read.format("arrowidx").schema("id long, status string, amount double").load(lake["root"])
    got = df.filter("status = 'RETURNED' AND amount > 20").toArrow()
    expected = reference(spark, lake, "status = 'RETURNED' AND amount > 20").select(["id", "status", "amount"])
    assert_same(got, expected, "user schema")


def test_columns_given_at_load_time(spark, lake):
    """``columns=`` reads only those columns (the filter may use others), in that order, as
    the types Spark's own reader gives them; unknown names are refused with their names."""
    where = "status = 'RETURNED' AND amount > 20"
    df = spark_mod.read(spark, lake["root"], where, columns=["amount", "id"])
    assert df.columns == ["amount", "id"]
    parquet = spark.read.parquet(lake["root"]).schema
    assert [f.dataType for f in df.schema] == [parquet["amount"].dataType, parquet["id"].dataType]
    expected = reference(spark, lake, where).select(["amount", "id"])
    assert_same(df.toArrow(), expected, "columns")
    assert df.count() == expected.num_rows
    with pytest.raises(arrowidx.ArrowIdxError, match="no column 'nope'"):
        spark_mod.read(spark, lake["root"], where, columns=["id", "nope"])
    with pytest.raises(Exception, match="no column 'nope'"):
        spark.read.format("arrowidx").schema("id long, nope string").load(lake["root"]).count()


def test_planning_sees_deletes_and_files_after_earlier_queries(spark, tmp_path):
    """The planner keeps the dataset it planned on between queries (its indexes stay
    opened); a delete, a new file or a rewritten file since the last query is still seen."""
    rng = np.random.default_rng(4)
    for i in range(3):
        pq.write_table(pa.table({"id": np.arange(i * 1000, i * 1000 + 1000), "k": rng.integers(0, 5, 1000)}),
                       tmp_path / f"part-{i}.parquet", row_group_size=250)  # fmt: skip
    arrowidx.build(tmp_path, {"file-index.bitmap.columns": "k"}, progress=False)
    root = str(tmp_path)

    deleted_below = 0  # ids below this were deleted

    def expected(where: str) -> int:  # pyarrow.dataset on the files as they are now
        import pyarrow.dataset as pads

        assert where == "k = 3"
        return pads.dataset(root).to_table(filter=(pc.field("k") == 3) & (pc.field("id") >= deleted_below)).num_rows

    for _ in range(2):  # the second query is planned on the kept dataset
        assert spark_mod.read(spark, root, "k = 3", columns=["id"]).count() == expected("k = 3")
    arrowidx.delete(tmp_path, pc.field("id") < 500, progress=False)
    deleted_below = 500
    got = spark_mod.read(spark, root, "k = 3", columns=["id"]).toArrow().column("id").to_pylist()
    assert min(got) >= 500 and len(got) == expected("k = 3")
    pq.write_table(pa.table({"id": np.arange(5000, 5010), "k": np.full(10, 3)}), tmp_path / "part-9.parquet")
    assert spark_mod.read(spark, root, "k = 3", columns=["id"]).count() == expected("k = 3")
    (tmp_path / "part-1.parquet").unlink()
    assert spark_mod.read(spark, root, "k = 3", columns=["id"]).count() == expected("k = 3")


def test_reference_reader_nan_pushdown(spark, lake):
    """Why the reference disables Parquet pushdown: with it, Spark's own reader loses NaN rows."""
    condition = "amount = double('NaN')"
    with parquet_pushdown(spark, True):
        pushed = spark.read.parquet(lake["root"]).filter(condition).count()
    with parquet_pushdown(spark, False):
        row_level = spark.read.parquet(lake["root"]).filter(condition).count()
    assert row_level > 0
    ours = spark.read.format("arrowidx").load(lake["root"]).filter(condition).count()
    assert ours == reference(spark, lake, condition).num_rows
    assert pushed <= row_level  # 0 with this Spark and pyarrow-written statistics


# ------------------------------------------------------------------------------------------
# 3b. arrowidx.spark.read: Spark's own Parquet reader, deletion vectors in Spark's plan
# ------------------------------------------------------------------------------------------

UTC = datetime.timezone.utc
EXPRESSIONS = [
    pc.field("amount") > 150.0,  # pyarrow: NaN is not > 150 (Spark SQL: it is)
    ~(pc.field("amount") > 50.0),  # ... so NOT keeps NaN rows
    pc.field("amount") == float("nan"),
    ~(pc.field("amount") == float("nan")),
    pc.field("amount") != 0.0,
    pc.field("amount") <= -0.0,
    pc.field("score") >= 1.5,
    pc.field("status").isin(["PAID", None]),  # a NULL status matches the NULL in the set
    ~pc.field("status").isin(["PAID", "NEW"]),  # pyarrow: is_in is FALSE for NULL, so NOT keeps them
    pc.is_in(pc.field("region"), value_set=pa.array(["eu-west", None]), skip_nulls=True),
    ~pc.is_in(pc.field("region"), value_set=pa.array(["eu-west", None]), skip_nulls=True),
    pc.field("region") >= "é",
    pc.field("ts") < datetime.datetime(2024, 1, 3, tzinfo=UTC),
    pc.field("ts_ntz") >= datetime.datetime(2024, 1, 9),
    pc.field("day") == datetime.date(2024, 1, 5),
    pc.field("price") > decimal.Decimal("450.00"),
    pc.field("payload") == b"\x01\x02",
    pc.equal(pc.field("flag"), True),
    ~pc.field("flag").is_valid(),
    pc.Expression._call("and", [pc.field("small") > 3, pc.field("tiny") < 0]),  # non-Kleene: NULL if either is
    ~pc.Expression._call("or", [pc.field("small") > 15, pc.field("user_id") < 1000]),
    pc.field("user_id") > 10.5,
    pc.field("amount").is_nan() | (pc.field("score") < 0.5),  # is_nan: NULL for NULL rows (Spark's isnan: FALSE)
    ~pc.field("score").is_nan(),
    (pc.field("id") + 1) == 1235,  # no Spark SQL spelling: read through the data source
]


def _without_deleted(lake) -> pa.Table:
    """The data in memory (every file as it is now), minus the deleted rows."""
    table = pa.concat_tables(pq.read_table(p) for p in sorted(Path(lake["root"]).glob("*.parquet")))
    return table.filter(pc.invert(pc.field("id").isin(lake["deleted"])))


def _tagged(frames: list) -> pa.Table:
    """The DataFrames as one Spark job (a union tagged by position), to keep the test quick."""
    out = None
    for i, df in enumerate(frames):
        df = df.withColumn("__q", F.lit(i))
        out = df if out is None else out.unionByName(df)
    return out.toArrow()


def _part(table: pa.Table, i: int) -> pa.Table:
    return table.filter(pc.field("__q") == i).drop_columns(["__q"])


def test_read_expressions_mean_what_pyarrow_means(spark, lake, monkeypatch):
    """A pyarrow Expression goes to Spark's reader as Spark SQL with pyarrow's meaning (NaN,
    NULL in is_in, non-Kleene and/or, typed literals); one with no spelling goes to the data
    source; a small exact index answer is read on the driver. The reference is
    ``Table.filter`` on the data in memory minus deleted rows."""
    from arrowidx.spark import native
    from arrowidx.spark.sparksql import to_spark_sql

    schema = arrowidx.dataset(lake["root"]).schema
    spelled = [to_spark_sql(expr, schema) is not None for expr in EXPRESSIONS]
    assert sum(spelled) == len(EXPRESSIONS) - 2 and not spelled[-1]  # and user_id > 10.5: not an exact literal
    frames = [spark_mod.read(spark, lake["root"], expr) for expr in EXPRESSIONS]  # some on the driver
    with monkeypatch.context() as m:
        m.setattr(native, "LOCAL_MAX_ROWS", -1)  # every one through Spark's reader or the data source
        remote = [spark_mod.read(spark, lake["root"], expr) for expr in EXPRESSIONS]
    for df, native_ok in zip(remote, spelled):  # (some filters leave no file at all)
        assert _python_scans(df) == (0 if native_ok else 1) and (native_ok or not _spark_files(df))
    assert sum(bool(_spark_files(df)) for df in remote) >= len(EXPRESSIONS) - 6
    assert sum(_read_on_driver(df) for df in frames) >= 5
    got, data = _tagged(frames + remote), _without_deleted(lake)
    for i, expr in enumerate(EXPRESSIONS * 2):
        assert_same(_part(got, i), data.filter(expr), str(expr))


def test_read_keeps_rows_parquet_statistics_would_drop(spark, tmp_path):
    """NaN rows of a row group whose statistics (NaN left out by pyarrow) say max = 2: Spark's
    own reader with its Parquet pushdown loses them for ``x > 5``; read() hands Spark the
    filter with float columns out of the pushdown, so the SQL meaning (NaN > 5) holds."""
    x = [1.0, 2.0, float("nan"), 2.5, -0.0, 0.0, None, float("nan"), 7.0, 8.0, 9.0, 0.5]
    for i in range(2):
        table = pa.table({"id": pa.array(range(i * 12, i * 12 + 12), pa.int64()), "x": pa.array(x, pa.float64()),
                          "n": pa.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], pa.int32())})  # fmt: skip
        pq.write_table(table, tmp_path / f"part-{i}.parquet", row_group_size=4)
    arrowidx.build(str(tmp_path), {"file-index.bloom-filter.columns": "id"}, progress=False)
    arrowidx.delete(str(tmp_path), pc.field("id").isin([3, 14]), progress=False)
    root = str(tmp_path)
    with parquet_pushdown(spark, True):
        assert spark.read.parquet(root).filter("x > 5").count() < spark.read.parquet(root).filter("x > 5 OR isnan(x)").count()
        conditions = ["x > 5", "x >= 2.5", "x = 'NaN'", "x <= 0.0", "x = 0.0", "n > 2.5 AND x < 3", "n = 4.0"]
        frames = [spark_mod.read(spark, root, c) for c in conditions] + [spark_mod.read(spark, root, pc.field("x") > 5.0)]
        got = _tagged(frames)
    memory = pa.concat_tables(pq.read_table(tmp_path / f"part-{i}.parquet") for i in range(2))
    memory = memory.filter(pc.invert(pc.field("id").isin([3, 14])))
    with parquet_pushdown(spark, False):
        in_memory = spark.createDataFrame(memory)
        for i, condition in enumerate(conditions):
            assert_same(_part(got, i), in_memory.filter(condition).toArrow(), condition)
    assert _part(got, 0).num_rows == 9  # NaN, NaN, 7, 8, 9 per file, less one deleted NaN
    assert_same(_part(got, len(conditions)), memory.filter(pc.field("x") > 5.0), "x > 5.0 as an Expression")


def test_read_deletion_vectors_every_way(spark, lake, monkeypatch):
    """Deletion vectors through the anti-join in one scan or in one scan per file, through
    the data source (beyond the plan's budget), and on the driver: the same rows."""
    from arrowidx.spark import native

    frames, scans = [], []
    settings = [
        {"LOCAL_MAX_ROWS": -1},  # Spark's reader, one scan with deletions
        {"LOCAL_MAX_ROWS": -1, "GROUP_MAX_FILES": 1},  # one scan per file with deletions
        {"LOCAL_MAX_ROWS": -1, "DELETION_BUDGET": 0},  # files with deletions through the data source
        {},  # the exact answers on the driver
    ]
    conditions = [None, "status <> 'PAID'", "status = 'RETURNED'"]
    for setting in settings:
        with monkeypatch.context() as m:
            for name, value in setting.items():
                m.setattr(native, name, value)
            for where in conditions:
                df = spark_mod.read(spark, lake["root"], where, columns=["id", "status", "amount"])
                frames.append(df)
                scans.append((_python_scans(df), len(_spark_files(df))))
    got = _tagged(frames)
    expected = {where: reference(spark, lake, where).select(["id", "status", "amount"]) for where in conditions}
    for i, where in enumerate(conditions * len(settings)):
        assert_same(_part(got, i), expected[where], f"{settings[i // 3]}: {where}")
    assert scans[0] == scans[3] == (0, FILES)
    assert scans[6] == (1, 1)  # only the stale file (no deletions) left for Spark's reader
    # exact answers on the driver (the stale file, not indexed, by Spark's reader)
    assert scans[9] == (0, FILES) and scans[10] == scans[11] == (0, 1) and _read_on_driver(frames[10])


def test_read_files_of_equal_size(spark, tmp_path):
    """Files are told apart by size in Spark's plan: files of one size go to separate scans."""
    rng = np.random.default_rng(12)
    for i in range(3):
        v = rng.permutation(400).astype(np.int64)
        pq.write_table(pa.table({"v": v, "f": np.full(400, i, np.int64)}), tmp_path / f"part-{i}.parquet",
                       use_dictionary=False, compression="none", write_statistics=False)  # fmt: skip
    sizes = {(tmp_path / f"part-{i}.parquet").stat().st_size for i in range(3)}
    assert len(sizes) == 1
    arrowidx.build(str(tmp_path), {"file-index.bitmap.columns": "f"}, progress=False)
    arrowidx.delete(str(tmp_path), pc.field("v") < 30, progress=False)  # other positions in each file
    got = spark_mod.read(spark, str(tmp_path))
    assert got.count() == 3 * 370 and got.filter("v < 30").count() == 0
    assert spark_mod.read(spark, str(tmp_path), "f = 1 AND v < 40").count() == 10


def test_read_refuses_files_changed_since_planned(spark, lake, monkeypatch):
    """A file whose size is not the one read() planned with would get no deletion vector
    applied: the query fails instead, naming read()."""
    from arrowidx.spark import native

    monkeypatch.setattr(native, "planned_size", lambda data, rel: 7)
    df = spark_mod.read(spark, lake["root"], "id > 5")
    with pytest.raises(Exception, match="changed after arrowidx.spark.read planned"):
        df.count()


def test_read_plans_in_read_itself(spark, lake, monkeypatch):
    """Refusals happen in read() itself (not at the first action); relative paths are made
    absolute on the driver."""
    with pytest.raises(arrowidx.ArrowIdxError, match="no_such_column"):
        spark_mod.read(spark, lake["root"], "no_such_column = 3")
    root = Path(lake["root"])
    monkeypatch.chdir(root.parent)
    assert spark_mod.read(spark, root.name, "status = 'REFUNDED'").count() == reference(spark, lake, "status = 'REFUNDED'").num_rows


def test_unfiltered_load_warns(lake, caplog):
    from arrowidx.spark.source import ArrowIdxDataSource

    with caplog.at_level("WARNING", logger="arrowidx.spark"):
        ArrowIdxDataSource({"path": lake["root"]})
        ArrowIdxDataSource({"path": lake["root"], "where": "id = 3"})
    assert len(caplog.records) == 1
    assert "arrowidx.spark.read(spark, " in caplog.records[0].getMessage()


# ------------------------------------------------------------------------------------------
# 4. the mapInArrow helper on Spark's own Parquet reader
# ------------------------------------------------------------------------------------------


def test_map_in_arrow_drops_deleted_rows(spark, lake):
    with parquet_pushdown(spark, False):
        df = spark.read.parquet(lake["root"])
        selected = df.select("*", "_metadata.file_path", "_metadata.row_index")
        fn = spark_mod.apply_deletions_and_index(lake["root"])
        out = selected.mapInArrow(fn, selected.schema).drop("file_path", "row_index").toArrow()
    assert_same(out, reference(spark, lake, None), "mapInArrow, deletions only")


def test_map_in_arrow_with_index(spark, lake):
    condition = "status = 'REFUNDED'"
    expr = pc.field("status") == "REFUNDED"
    with parquet_pushdown(spark, False):
        df = spark.read.parquet(lake["root"])
        # Without Spark's filter: the bitmap index alone removes every row of the other
        # statuses in the indexed files; the stale file passes untouched.
        only_index = spark_mod.with_deletions_and_index(df, lake["root"], expr).toArrow()
        with_filter = spark_mod.with_deletions_and_index(df.filter(condition), lake["root"], expr).toArrow()
    expected = reference(spark, lake, condition)
    assert_same(with_filter, expected, "mapInArrow with filter")
    stale_ids = pc.greater_equal(only_index.column("id"), 10**7)
    assert_same(only_index.filter(pc.invert(stale_ids)), expected.filter(pc.less(expected.column("id"), 10**7)), "index only")
    stale = reference(spark, lake, "id >= 10000000")
    assert only_index.filter(stale_ids).num_rows == stale.num_rows


# ------------------------------------------------------------------------------------------
# 2. write
# ------------------------------------------------------------------------------------------

WRITE_OPTIONS = {"file-index.bitmap.columns": "status,region", "file-index.bloom-filter.columns": "id"}


def _source_table(seed: int, start: int, rows: int) -> pa.Table:
    return make_table(np.random.default_rng(seed), np.arange(start, start + rows, dtype=np.int64))


def _frame(spark, seed: int, start: int, rows: int, partitions: int):
    """A DataFrame to write, and its rows as Spark holds them (the expected read-back).

    Spark's createDataFrame turns the naive ``ts_ntz`` into a session-time-zone TIMESTAMP,
    so the expectation is Spark's own view of the frame, not the pyarrow table.
    """
    df = spark.createDataFrame(_source_table(seed, start, rows)).repartition(partitions)
    return df, df.toArrow()


def _parquet_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("*.parquet"))


def _read_four_ways(spark, root: Path) -> dict[str, pa.Table]:
    import polars as pl

    with parquet_pushdown(spark, False):
        plain = spark.read.parquet(str(root)).toArrow()
    return {
        "spark arrowidx": spark.read.format("arrowidx").load(str(root)).toArrow(),
        "spark parquet": plain,
        "arrowidx.dataset": arrowidx.dataset(str(root)).to_table(),
        "polars": pl.scan_parquet(str(root / "*.parquet")).collect().to_arrow(),
    }


def test_write_reads_back_everywhere(spark, tmp_path):
    root = tmp_path / "written"
    df, source = _frame(spark, 1, 0, 3000, 3)
    report = spark_mod.write(df, str(root), WRITE_OPTIONS, row_group_size=500)
    assert report.version == 1 and len(report.files) == 3 and report.rows == 3000
    assert _parquet_files(root) == sorted(report.files)
    assert not (Path(index_dir(root)) / "staging").exists()
    for f in report.files:
        assert pq.ParquetFile(root / f).metadata.row_group(0).num_rows == 500
    for name, table in _read_four_ways(spark, root).items():
        assert_same(table, source, name)
    # the written dataset is indexed: a needle read prunes files
    needle = spark_mod.read(spark, str(root), "id = 42")
    assert needle.rdd.getNumPartitions() < 3 and needle.count() == 1

    df, more = _frame(spark, 2, 10_000, 1000, 2)
    report = spark_mod.write(df, str(root), None, mode="append")
    assert report.version == 2 and len(report.files) == 2
    assert len(_parquet_files(root)) == 5
    both = pa.concat_tables([source, more])
    for name, table in _read_four_ways(spark, root).items():
        assert_same(table, both, f"after append: {name}")

    arrowidx.delete(str(root), pc.field("id") < 100, progress=False)
    df, replacement = _frame(spark, 3, 50_000, 800, 2)
    report = spark_mod.write(df, str(root), WRITE_OPTIONS, mode="overwrite")
    assert len(report.replaced) == 5 and _parquet_files(root) == sorted(report.files)
    # the rows deleted from the replaced files stay deleted for their content (tombstones, issue
    # 47: a replaced file restored from a backup keeps them), so their deletion file stays...
    assert len(list((Path(index_dir(root)) / "deletion").glob("*.dv"))) == 1
    for name, table in _read_four_ways(spark, root).items():
        assert_same(table, replacement, f"after overwrite: {name}")
    # ... until vacuum drops the tombstones after its retention, then the version holding them
    assert sum(arrowidx.vacuum(str(root), older_than=0).tombstones_dropped.values()) == 100
    arrowidx.vacuum(str(root), older_than=0)
    assert not list((Path(index_dir(root)) / "deletion").glob("*.dv"))


def test_write_retried_task_leaves_no_orphan(spark, tmp_path):
    root = tmp_path / "retried"
    df, source = _frame(spark, 4, 0, 2000, 2)

    def fail_first_attempt(partition: int, attempt: int) -> None:
        if partition == 0 and attempt == 0:
            raise RuntimeError("injected failure after the task wrote its files")

    report = spark_mod.write(df, str(root), WRITE_OPTIONS, _task_hook=fail_first_attempt)
    assert len(report.files) == 2 and report.orphans_removed >= 2  # the failed attempt's data + index
    assert _parquet_files(root) == sorted(report.files)
    assert not (Path(index_dir(root)) / "staging").exists()
    fs, r, _ = open_lake(str(root))
    assert sorted(load_manifest(fs, r).files) == sorted(report.files)
    for name, table in _read_four_ways(spark, root).items():
        assert_same(table, source, f"after a retried task: {name}")


def test_write_failed_job_commits_nothing(spark, tmp_path):
    root = tmp_path / "failed"
    df, first = _frame(spark, 5, 0, 1000, 2)
    spark_mod.write(df, str(root), WRITE_OPTIONS)
    before = _parquet_files(root)

    def always_fail(partition: int, attempt: int) -> None:
        if partition == 1:
            raise RuntimeError("injected permanent failure")

    with pytest.raises(Exception, match="injected permanent failure"):
        spark_mod.write(_frame(spark, 6, 5000, 1000, 2)[0], str(root), None, _task_hook=always_fail)
    fs, r, _ = open_lake(str(root))
    assert load_manifest(fs, r).version == 1
    assert _parquet_files(root) == before
    assert not (Path(index_dir(root)) / "staging").exists()
    index_files = sorted(p.name for p in (Path(index_dir(root)) / "index").glob("*.index"))
    assert all(name.rsplit(".", 2)[0] in before for name in index_files)  # <data file>.<xxh64>.index
    for name, table in _read_four_ways(spark, root).items():
        assert_same(table, first, f"after a failed write: {name}")


def test_write_append_refuses_unmanaged_files(spark, tmp_path):
    root = tmp_path / "unmanaged"
    root.mkdir()
    pq.write_table(_source_table(7, 0, 10), root / "plain.parquet")
    with pytest.raises(arrowidx.ArrowIdxError, match="arrowidx.spark.build"):
        spark_mod.write(spark.createDataFrame(_source_table(8, 100, 10)), str(root), WRITE_OPTIONS)
    assert os.listdir(root) == ["plain.parquet"]


def test_hive_partition_columns(spark, tmp_path):
    """Hive folders (``dt=.../``) are partition columns in every Spark spelling, as in
    ``arrowidx.dataset(path)``; a filter on them prunes folders; answers equal Spark's own
    Parquet reader on the folders (filter pushdown off), the deleted rows removed by the
    delete's own condition."""
    root = tmp_path / "hive"
    rng = np.random.default_rng(5)
    for i, day in enumerate(["2024-01-01", "2024-01-02", "2024-01-03"]):
        (root / f"dt={day}").mkdir(parents=True)
        ids = np.arange(i * 400, (i + 1) * 400, dtype=np.int64)
        pq.write_table(pa.table({"id": ids, "v": rng.integers(0, 9, 400)}), root / f"dt={day}" / "part-0.parquet")
    arrowidx.build(str(root), {"file-index.bloom-filter.columns": "id"}, progress=False)
    arrowidx.delete(str(root), "id % 7 = 0", progress=False)
    data = arrowidx.dataset(str(root))
    assert "dt" in data.schema.names
    with parquet_pushdown(spark, False):
        theirs = spark.read.parquet(str(root)).filter("NOT (id % 7 = 0)")
        references = {w: theirs.filter(w).toArrow() for w in ["dt = '2024-01-02' AND v > 3", "id = 801", "dt > '2024-01-01'"]}
    for where, reference in references.items():
        assert reference.num_rows, where
        expected = canon(reference.select(["id", "v", "dt"]))
        got = spark_mod.read(spark, str(root), where)
        assert canon(got.toArrow().select(["id", "v", "dt"])) == expected, where
        loaded = spark.read.format("arrowidx").option("where", where).load(str(root))
        assert canon(loaded.toArrow().select(["id", "v", "dt"])) == expected, where
    # one partition per file read: the other folders were pruned before any file was opened
    one_day = spark_mod.read(spark, str(root), "dt = '2024-01-02'", maxPartitionBytes="1")
    assert one_day.count() == 400 - sum(i % 7 == 0 for i in range(400, 800)) > 0  # the ids written, minus the deleted
    assert one_day.rdd.getNumPartitions() == 1


def test_selective_small_reads_go_to_the_driver_or_the_data_source(spark, lake, monkeypatch):
    """By default a read whose indexes ruled out most rows, leaving very little data, is read
    by the driver; a little more goes to the data source (no Spark scan job); a read the
    indexes cannot narrow goes to Spark's reader. All answer as Spark does."""
    from arrowidx.spark import native

    monkeypatch.setattr(native, "LOCAL_SELECTIVE_MAX_BYTES", 32 << 20)
    monkeypatch.setattr(native, "PYTHON_MAX_BYTES", 32 << 20)
    needle = spark_mod.read(spark, lake["root"], "id = 1234")  # a bloom filter: not an exact answer
    assert _read_on_driver(needle) and _python_scans(needle) == 0 and not _spark_files(needle)
    assert_same(needle.toArrow(), reference(spark, lake, "id = 1234"), "needle on the driver")
    monkeypatch.setattr(native, "LOCAL_SELECTIVE_MAX_BYTES", -1)
    needle = spark_mod.read(spark, lake["root"], "id = 1234")
    assert _python_scans(needle) == 1 and not _spark_files(needle) and not _read_on_driver(needle)
    assert_same(needle.toArrow(), reference(spark, lake, "id = 1234"), "needle by the data source")
    monkeypatch.setattr(native, "DELETION_BUDGET", 0)  # the default: files with deletions by the data source
    broad = spark_mod.read(spark, lake["root"], "amount > 10")
    assert _spark_files(broad) == {"part-5.parquet"} and _python_scans(broad) == 1  # part-5 has no deletions
    assert_same(broad.toArrow(), reference(spark, lake, "amount > 10"), "broad")
    monkeypatch.setattr(native, "PYTHON_MAX_BYTES", -1)  # nothing is small enough
    assert _python_scans(spark_mod.read(spark, lake["root"], "id = 1234")) == 1  # (its file has deletions)
