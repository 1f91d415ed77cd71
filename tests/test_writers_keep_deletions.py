"""Issue 38, part 2: a writer naming some files of a dataset updates only their entries; a
committed deletion leaves the manifest only with its data file (or on an explicit
``on_stale_deletions="read-full"``). The reference is the lake's rows in memory minus the
rows deleted, counted by ``Table.filter``."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.cli import main
from arrowidx.errors import OptionError, StaleDeletionError
from arrowidx.lake.commit import load_manifest

LOST = pc.field("status") == "LOST"


@pytest.fixture
def lake(tmp_path):
    """Five files; the LOST rows (one in seven) deleted in every file."""
    root = str(tmp_path / "lake")
    os.makedirs(root)
    tables = []
    for i in range(5):
        n = 700
        t = pa.table({
            "id": pa.array(np.arange(i * n, (i + 1) * n)),
            "status": pa.array(np.where(np.arange(n) % 7 == 3, "LOST", "ok")),
        })  # fmt: skip
        pq.write_table(t, os.path.join(root, f"part-{i}.parquet"), row_group_size=200)
        tables.append(t)
    arrowidx.build(root, {"file-index.bitmap.columns": "status", "file-index.bloom-filter.columns": "id"}, progress=False)
    deleted = arrowidx.delete(root, LOST, progress=False).rows_deleted
    everything = pa.concat_tables(tables)
    assert deleted == everything.filter(LOST).num_rows == 500
    return root, everything.filter(~LOST)


def _assert_deletions_hold(root: str, alive: pa.Table) -> None:
    data = arrowidx.dataset(root)
    assert data.count_rows(LOST) == 0
    assert data.count_rows() == alive.num_rows
    assert sorted(data.to_table(columns=["id"]).column("id").to_pylist()) == sorted(alive.column("id").to_pylist())
    manifest = load_manifest(data.store, root)
    assert sorted(manifest.files) == [f"part-{i}.parquet" for i in range(5)]
    assert all(e.deletion is not None for e in manifest.files.values())


def test_python_build_of_one_file_keeps_every_deletion(lake):
    root, alive = lake
    report = arrowidx.build([os.path.join(root, "part-1.parquet")], progress=False)
    assert report.removed == []
    _assert_deletions_hold(root, alive)
    arrowidx.build(os.path.join(root, "part-2.parquet"), {"file-index.bloom-filter.columns": "id"}, progress=False)
    _assert_deletions_hold(root, alive)


def test_cli_build_of_one_file_keeps_every_deletion(lake, capsys):
    root, alive = lake
    assert main(["build", os.path.join(root, "part-0.parquet"), "--bloom-filter", "id"]) == 0
    assert "removed" not in capsys.readouterr().out.replace("0 removed", "")
    _assert_deletions_hold(root, alive)


def test_a_build_of_some_files_cannot_change_the_options_of_the_others(lake, capsys):
    root, alive = lake
    before = load_manifest(arrowidx.dataset(root).store, root)
    with pytest.raises(OptionError, match="Build the whole dataset"):
        arrowidx.build([os.path.join(root, "part-1.parquet")], {"file-index.bloom-filter.columns": "status"}, progress=False)
    assert main(["build", os.path.join(root, "part-1.parquet"), "--bsi", "id"]) == 2
    assert "Build the whole dataset" in capsys.readouterr().err
    assert load_manifest(arrowidx.dataset(root).store, root).version == before.version
    _assert_deletions_hold(root, alive)


def test_a_changed_file_named_alone_refuses_to_drop_its_deletions(lake):
    root, alive = lake
    path = os.path.join(root, "part-3.parquet")
    pq.write_table(pq.read_table(path).slice(1), path, row_group_size=200)  # other content
    with pytest.raises(StaleDeletionError):
        arrowidx.build([path], progress=False)
    others = load_manifest(arrowidx.dataset(root).store, root).files
    assert others["part-3.parquet"].deletion is not None  # still committed, nothing dropped


def test_a_full_build_removes_only_entries_whose_file_is_gone(lake):
    root, alive = lake
    os.remove(os.path.join(root, "part-4.parquet"))
    report = arrowidx.build(root, progress=False)
    assert report.removed == ["part-4.parquet"]
    manifest = load_manifest(arrowidx.dataset(root).store, root)
    assert sorted(manifest.files) == [f"part-{i}.parquet" for i in range(4)]
    assert all(e.deletion is not None for e in manifest.files.values())
    assert arrowidx.dataset(root).count_rows(LOST) == 0
