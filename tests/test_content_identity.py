"""A data file's identity covers its whole content (issue 47, item 7).

A rewrite that keeps the size, the modification time (``cp -p``, ``rsync -t``), the footer (no
statistics, fixed-width plain data) and the last 64 KiB used to be taken for the same file:
its old index and deletion vector were applied to the new rows. The XXH64 of the whole file,
read only when the change stamp is not the one indexed, tells them apart; a copy of the lake
keeps its indexes and deletions, and a build takes the copy's new stamps.

Expected rows come from ``pyarrow.parquet.read_table(...).filter(...)`` of the files as they are."""

from __future__ import annotations

import json
import os
import shutil

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import arrowidx
import arrowidx.facts
from arrowidx.cli import main
from arrowidx.errors import StaleDeletionError

from .conftest import index_dir

N = 100_000  # 800 KB of int64: the values changed are far from the last 64 KiB
NEEDLE = pc.field("id") == 10_000_003


def write(path, values, filesystem=None):
    pq.write_table(pa.table({"id": pa.array(values, pa.int64())}), path, compression="none", use_dictionary=False,
                   write_statistics=False, filesystem=filesystem)  # fmt: skip


def rewritten() -> list[int]:
    values = list(range(N))
    values[:10] = [10_000_000 + i for i in range(10)]  # the same size, footer and tail
    return values


def rewrite_in_place(path):
    """Another content of the same size, footer and last 64 KiB, with the old modification time."""
    stat = os.stat(path)
    write(path, rewritten())
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert os.path.getsize(path) == stat.st_size


@pytest.fixture
def lake(tmp_path):
    root = str(tmp_path / "lake")
    os.makedirs(root)
    write(os.path.join(root, "a.parquet"), list(range(N)))
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, progress=False)
    return root


def truth(root, expr):
    return pq.read_table(os.path.join(root, "a.parquet")).filter(expr)


def test_a_rewrite_keeping_size_mtime_footer_and_tail_is_seen(lake):
    rewrite_in_place(os.path.join(lake, "a.parquet"))
    arrowidx.facts.clear()  # (as a new process)
    data = arrowidx.dataset(lake)
    assert data.to_table(filter=NEEDLE).equals(truth(lake, NEEDLE))  # the bloom filter of the old rows would skip it
    assert data.to_table(filter=NEEDLE).num_rows == 1
    assert [p.status for p in data.explain(NEEDLE).files] == ["stale"]
    report = arrowidx.build(lake, progress=False)
    assert report.indexed == ["a.parquet"]  # re-indexed, then answered by the new index
    assert arrowidx.dataset(lake).to_table(filter=NEEDLE).equals(truth(lake, NEEDLE))


def test_a_rewrite_does_not_take_the_old_deletions(lake):
    arrowidx.delete(lake, pc.field("id") < 5, progress=False)
    rewrite_in_place(os.path.join(lake, "a.parquet"))
    arrowidx.facts.clear()
    with pytest.raises(StaleDeletionError, match="a.parquet: changed since 5 row\\(s\\) were deleted from it"):
        arrowidx.dataset(lake).to_table(filter=NEEDLE)
    with pytest.raises(StaleDeletionError):
        arrowidx.build(lake, progress=False)
    full = arrowidx.dataset(lake, on_stale_deletions="read-full")
    assert full.to_table(filter=pc.field("id") < 20).equals(truth(lake, pc.field("id") < 20))


def test_a_copied_lake_keeps_its_indexes_and_deletions_and_a_build_takes_its_stamps(lake, tmp_path, capsys):
    arrowidx.delete(lake, pc.field("id") < 5, progress=False)
    copy = str(tmp_path / "copy")
    shutil.copytree(lake, copy)  # new inodes and change times, the same bytes (and mtimes)
    shutil.copytree(index_dir(lake), index_dir(copy))  # with its indexes beside it (docs/guide.md, Layout on disk)
    arrowidx.facts.clear()
    data = arrowidx.dataset(copy)
    expected = truth(copy, pc.field("id") >= 5)
    assert data.to_table().equals(expected)  # the deletions still apply
    assert [p.status for p in data.explain(pc.field("id") == 7).files] == ["remain"]  # (not "stale": the file indexed)
    assert data.to_table(filter=NEEDLE).num_rows == 0
    assert main(["inspect", copy, "--json"]) == 0  # the copy's files are the ones indexed
    assert [f["state"] for f in json.loads(capsys.readouterr().out)["files"]] == ["ok"]
    report = arrowidx.build(copy, progress=False)
    assert (report.indexed, report.unchanged, report.restamped) == ([], ["a.parquet"], ["a.parquet"])
    again = arrowidx.build(copy, progress=False)
    assert not again.changed  # the stamps are the copy's now: nothing to hash, nothing to commit
    assert arrowidx.dataset(copy).to_table().equals(expected)


def test_a_store_without_change_stamps_uses_the_content(tmp_path):
    """fsspec's memory filesystem gives no change stamp: a rewrite is told by its content."""
    memory = fsspec.filesystem("memory")
    root = f"/issue47-{os.getpid()}-{tmp_path.name}"
    memory.mkdirs(root, exist_ok=True)
    fs = pafs.PyFileSystem(pafs.FSSpecHandler(memory))
    try:
        write(f"{root}/a.parquet", list(range(N)), fs)
        arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, filesystem=fs, progress=False)
        assert arrowidx.dataset(root, filesystem=fs).to_table(filter=NEEDLE).num_rows == 0
        write(f"{root}/a.parquet", rewritten(), fs)
        expected = pq.read_table(f"{root}/a.parquet", filesystem=fs).filter(NEEDLE)
        assert expected.num_rows == 1
        assert arrowidx.dataset(root, filesystem=fs).to_table(filter=NEEDLE).equals(expected)
    finally:
        memory.rm(root, recursive=True)
