"""Every adapter plans through the one planner (issue 50): the same filter over the same lake
gets the same per-file decisions through ``arrowidx.dataset`` (its explain and its read),
``arrowidx.polars.scan``, the ``arrowidx`` Spark data source's driver planning and
``arrowidx.spark.read``'s planning; a Paimon table's plan decides each file with the same
per-file decision and is read through the same plan by ``open_table`` and
``arrowidx.polars.scan_paimon``. The rows each returns are checked against ``Table.filter``
and Polars' own ``DataFrame.filter`` (the plan may only make a read faster)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

import arrowidx
from arrowidx import facts
from arrowidx.lake import plan as plan_module
from arrowidx.lake.plans import FilePlan
from arrowidx.polars import plan as polars_plan

from .conftest import tables_equal
from .test_lake import OPTIONS, write_lake

#: (pyarrow filter, the same filter for Polars)
FILTERS = [
    (pc.field("id") == 20_017, pl.col("id") == 20_017),  # a needle: one file's bloom filter keeps it
    (pc.field("status") == "lost", pl.col("status") == "lost"),  # a bitmap: rows of every file
    (pc.field("id").isin([3, 40_005, 10**9]), pl.col("id").is_in([3, 40_005, 10**9])),
    ((pc.field("status") == "paid") & (pc.field("id") < 30_000), (pl.col("status") == "paid") & (pl.col("id") < 30_000)),
]


DELETED_IDS = list(range(0, 60_000, 7))
DELETED = pc.field("id").isin(DELETED_IDS)


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("one-planner") / "lake")
    write_lake(root, files=6, rows=600, row_group_size=64)
    arrowidx.build(root, OPTIONS, progress=False)
    arrowidx.delete(root, DELETED, progress=False)  # deletions in every file
    return root


class Decisions:
    """Records what the one planner's per-file decision answered (whichever adapter asked),
    and the files the lake index ruled out before any was asked."""

    def __init__(self, monkeypatch):
        self.decided: dict[str, tuple] = {}
        real_decide = plan_module.Planner.decide

        def decide(planner, rel, expr, bound=None):
            plan = real_decide(planner, rel, expr, bound)
            if expr is not None:
                self.decided[rel] = _decision(plan)
            return plan

        real_ruled = plan_module.Planner.lake_index_rules_out

        def lake_index_rules_out(planner, expr):  # files the lake index decides (issue 51)
            found = real_ruled(planner, expr)
            if found is not None:
                for member, ruled in zip(found[0].members, found[1]):
                    if ruled:
                        self.decided[member.path] = ("skip", None, (plan_module.LAKE_INDEX,))
            return found

        monkeypatch.setattr(plan_module.Planner, "decide", decide)
        monkeypatch.setattr(plan_module.Planner, "lake_index_rules_out", lake_index_rules_out)

    def take(self) -> dict[str, tuple]:
        out, self.decided = self.decided, {}
        return out


def _decision(plan: FilePlan) -> tuple:
    """What a file's index (or its freshness) decided: skip, a bitmap of n rows, or remain,
    and by which index types."""
    answer = plan.result
    kind = plan.status if plan.status in ("stale", "no index", "fallback") else ("skip" if not answer.remain else answer.kind)
    return kind, len(answer.bitmap) if answer.kind == "bitmap" else None, tuple(plan.index_types)


def _expected(root: str, expr: pc.Expression) -> pa.Table:
    return ds.dataset(root, format="parquet").to_table().filter(expr & ~DELETED)


@pytest.mark.parametrize("expr, polars_expr", FILTERS, ids=[str(e) for e, _ in FILTERS])
def test_the_same_filter_gets_the_same_plan_through_every_adapter(lake, monkeypatch, expr, polars_expr):
    from arrowidx.spark import source as spark_source
    from arrowidx.spark.translate import arrow_to_spark_schema

    facts.clear()
    data = arrowidx.dataset(lake)
    recorded = Decisions(monkeypatch)
    plans = data.explain(expr).files
    explained = recorded.take()
    assert set(explained) == {p.path for p in plans}

    got = data.to_table(filter=expr)  # the read's own route through the planner
    by_dataset = recorded.take()
    assert tables_equal(got, _expected(lake, expr))

    # Polars' policy stops asking indexes that keep every row group (polars.plan.FUTILE_FILES):
    # told to ask them all, its decisions compare one to one
    monkeypatch.setattr(polars_plan, "FUTILE_FILES", 10**9)
    frame = arrowidx.polars.scan(lake).filter(polars_expr).collect()
    by_polars = recorded.take()
    reference = pl.from_arrow(ds.dataset(lake, format="parquet").to_table()).filter(polars_expr & ~pl.col("id").is_in(DELETED_IDS))
    assert sorted(frame["id"].to_list()) == sorted(reference["id"].to_list())

    schema = arrow_to_spark_schema(data.schema)
    reader = spark_source._Reader(lake, schema, {"filter": spark_source.encode_filter(expr)})
    partitions = reader.partitions()  # the data source's planning on the driver
    by_spark_source = recorded.take()
    spark_data = spark_source.planning_dataset(lake)
    spark_data.plan(expr, statistics=expr)  # what arrowidx.spark.read plans with, before it picks readers
    by_spark_read = recorded.take()

    assert by_dataset, "the read asked no file's index"
    for name, decided in [("dataset read", by_dataset), ("polars", by_polars), ("spark source", by_spark_source),
                          ("spark read", by_spark_read)]:  # fmt: skip
        assert decided == {rel: explained[rel] for rel in decided}, name
        assert set(decided) == set(explained), f"{name} decided {sorted(decided)} of {sorted(explained)}"
    read = {rel for p in partitions for rel in p.paths}
    kept = {p.path for p in plans if not p.skipped}
    assert read <= kept, "the Spark source reads a file the plan skipped"


PAIMON = Path(__file__).resolve().parents[1].parent.parent / "shared" / "paimon-tables"
if not PAIMON.exists():
    PAIMON = Path("/work/shared/paimon-tables")


def test_paimon_tables_plan_with_the_planners_decision_and_share_its_plan(tmp_path, monkeypatch):
    from arrowidx import paimon
    from arrowidx.polars import scan_paimon

    table_dir = tmp_path / "append_idx"
    shutil.copytree(PAIMON / "paimon-master" / "db.db" / "append_idx", table_dir)
    for p in table_dir.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    expr, polars_expr = pc.field("status") == "pending", pl.col("status") == "pending"
    asked: list[str] = []
    real = plan_module.decide_with_index

    def decide_with_index(plan, index, node):
        asked.append(plan.path)
        return real(plan, index, node)

    from arrowidx.paimon import table as table_module

    monkeypatch.setattr(table_module, "decide_with_index", decide_with_index)
    table = paimon.open_table(table_dir)
    explained = table.explain(expr)
    assert type(explained) is arrowidx.lake.Explain and all(type(p) is FilePlan for p in explained.files)
    assert sorted(asked) == sorted(p.path for p in explained.files)  # every file decided by the one decision
    assert explained.files_read < len(explained.files)
    want = table.to_table().filter(expr)
    assert tables_equal(table.to_table(filter=expr), want)
    got = scan_paimon(table).filter(polars_expr).collect()
    assert got.height == want.num_rows
