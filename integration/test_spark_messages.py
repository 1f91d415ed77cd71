"""Issue 53: a mistake in ``spark.read.format("arrowidx")`` is said in one message in the
user's words (not a traceback of arrowidx's frames with the message at its end), and a
missing dataset is said first and alone (not after the advice about load-time filters)."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowidx


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("messages") / "lake")
    os.makedirs(root)
    pq.write_table(pa.table({"id": np.arange(100), "status": ["a", "b"] * 50}), os.path.join(root, "part-0.parquet"))
    arrowidx.build(root, {"file-index.bitmap.columns": "status"}, progress=False)
    return root


def test_a_bad_where_is_one_message_at_load(spark, small_lake):
    reader = spark.read.format("arrowidx").option("where", "stauts = 'a'")
    with pytest.raises(Exception) as info:
        reader.load(small_lake)  # at load, before any query
    text = str(info.value)
    assert "WhereError: where: unknown column 'stauts'; did you mean 'status'?" in text
    assert "Traceback" not in text and "File " not in text and len(text) < 400, text


def test_a_missing_dataset_is_said_alone(spark, tmp_path, caplog):
    missing = str(tmp_path / "nope")
    with pytest.raises(Exception) as info:
        spark.read.format("arrowidx").load(missing)
    text = str(info.value)
    assert f"load('{missing}'): {missing}: no such dataset directory" in text
    assert "Traceback" not in text and "FileNotFoundError" not in text, text
    # what the Python worker ran, here: the error comes without the advice before it
    from arrowidx.errors import ArrowIdxError
    from arrowidx.spark.source import ArrowIdxDataSource

    with caplog.at_level("WARNING", logger="arrowidx.spark"), pytest.raises(ArrowIdxError, match="no such dataset"):
        ArrowIdxDataSource({"path": missing})
    assert not caplog.records
