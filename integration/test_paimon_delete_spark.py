"""``arrowidx.spark.paimon_delete`` commits what the local delete commits: executors find the
rows from self-contained tasks, the driver merges and commits once, so each data file's
deletion vector has the same bytes as after :func:`arrowidx.paimon.delete`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pytest

pytest.importorskip("fastavro")

from arrowidx import paimon  # noqa: E402

TABLES = Path(__file__).resolve().parents[1] / "tests" / "paimon_tables"


def _copy(src: Path, dst: Path) -> str:
    shutil.copytree(src, dst)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    return str(dst)


def _vectors(path: str) -> dict[str, bytes]:
    table = paimon.open_table(path)
    out = {}
    for name, rng in table.deletion_ranges.items():
        with open(rng.index_file, "rb") as f:
            f.seek(rng.offset)
            out[name] = f.read(rng.length + 8)  # (64-bit ranges hold the whole record: a prefix here)
    return out


@pytest.mark.parametrize("table", ["dv-0.9.0/db.db/append_dv", "dv-0.9.0/db.db/pk_dv", "dv-master/db.db/append_dv64"])
def test_spark_delete_same_as_local(spark, tmp_path, table):
    import polars as pl

    import arrowidx.spark

    on_spark, local = _copy(TABLES / table, tmp_path / "spark"), _copy(TABLES / table, tmp_path / "local")
    for where in ["status = 'rare' OR name LIKE 'name-12_'", pc.field("amount") < 40, pl.col("price").is_between(10, 10.5)]:
        report = arrowidx.spark.paimon_delete(spark, on_spark, where)
        mine = paimon.delete(local, where)
        assert report.committed and report.rows_deleted == mine.rows_deleted > 0
        assert report.rows_by_file == mine.rows_by_file
    assert _vectors(on_spark) == _vectors(local)
    assert paimon.open_table(on_spark).to_table().sort_by("id").equals(paimon.open_table(local).to_table().sort_by("id"))
    dry = arrowidx.spark.paimon_delete(spark, on_spark, "amount < 1000", dry_run=True)
    assert dry.dry_run and not dry.committed and dry.rows_deleted > 0
