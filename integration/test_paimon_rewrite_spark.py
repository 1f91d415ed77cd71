"""``arrowidx.spark.paimon_rewrite_file_index`` commits what the local function commits, byte
for byte (the executors run the same per-file work from self-contained tasks)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("fastavro")

from arrowidx import paimon  # noqa: E402

SHAPES = Path(__file__).resolve().parents[1] / "tests" / "paimon_tables" / "shapes-0.9.0" / "db.db" / "evolve"


PAIMON_OPTIONS = {"file-index.bloom-filter.columns": "id,full_name,status", "file-index.bitmap.columns": "status,p"}


def _copy(dst: Path) -> str:
    shutil.copytree(SHAPES, dst)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    return str(dst)


def _state(path: str) -> dict:
    table = paimon.open_table(path)
    out = {}
    for f in table.files:
        folder = Path(table.file_path(f)).parent
        out[f.name] = (tuple(f.extra_files), f.embedded_index, {e: (folder / e).read_bytes() for e in f.extra_files})
    return out


def test_spark_rewrite_same_as_local(spark, tmp_path):
    import arrowidx.spark

    options = PAIMON_OPTIONS
    on_spark, local = _copy(tmp_path / "spark"), _copy(tmp_path / "local")
    report = arrowidx.spark.paimon_rewrite_file_index(spark, on_spark, options)
    assert report.committed and report.rewritten
    paimon.rewrite_file_index(local, options)
    assert _state(on_spark) == _state(local)
    again = arrowidx.spark.paimon_rewrite_file_index(spark, on_spark, options)
    assert not again.committed
