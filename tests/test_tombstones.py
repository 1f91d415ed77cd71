"""A file that leaves the lake and comes back keeps its deleted rows deleted (issue 47, item 2).

Deletions belong to the data file's content: when a build drops an entry with deletions, they
stay in the manifest as a tombstone until ``vacuum`` (with the user's retention) drops it, and
a file with that content that returns (at any path) gets them back, for readers at once and in
the manifest at the next build; the build report names what it kept and re-applied
(``../shared/repro/15.py``). Expected rows: the rows written minus the rows deleted."""

from __future__ import annotations

import os
import shutil

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
import arrowidx.polars

from .test_manifest import edit

A, B = list(range(10)), list(range(10, 20))


@pytest.fixture
def lake(tmp_path):
    """a.parquet (ids 0-9) and b.parquet (10-19), indexed; ids 0-4 deleted; a.parquet moved away."""
    root, away = str(tmp_path / "lake"), str(tmp_path / "away")
    os.makedirs(root)
    os.makedirs(away)
    write(os.path.join(root, "a.parquet"), A)
    write(os.path.join(root, "b.parquet"), B)
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, progress=False)
    assert arrowidx.delete(root, "id < 5", progress=False).rows_deleted == 5
    shutil.move(os.path.join(root, "a.parquet"), os.path.join(away, "a.parquet"))
    return root, away


def write(path, values):
    """Plain, uncompressed int64: the size depends on the number of values only."""
    pq.write_table(pa.table({"id": pa.array(values, pa.int64())}), path, compression="none", use_dictionary=False)


def live(root) -> list[int]:
    return sorted(arrowidx.dataset(root).to_table(columns=["id"]).column("id").to_pylist())


KEPT = "; kept the 5 deleted row(s) of 1 file(s) (a.parquet) as tombstones (re-applied if that content returns, until arrowidx.vacuum)"
RESTORED = "; re-applied 5 deleted row(s) to 1 file(s) (a.parquet), whose content returned"


def test_the_build_keeps_the_deletions_and_reapplies_them_when_the_file_returns(lake):
    root, away = lake
    gone = arrowidx.build(root, progress=False)
    assert (gone.removed, gone.tombstoned, gone.forgotten) == (["a.parquet"], {"a.parquet": 5}, {})
    assert str(gone).endswith(KEPT)
    assert live(root) == B
    shutil.move(os.path.join(away, "a.parquet"), os.path.join(root, "a.parquet"))
    back = arrowidx.build(root, progress=False)
    assert (back.indexed, back.restored) == (["a.parquet"], {"a.parquet": 5})
    assert str(back).endswith(RESTORED)
    assert arrowidx.dataset(root).count_rows(filter="id < 5") == 0
    assert live(root) == A[5:] + B
    assert not arrowidx.build(root, progress=False).changed  # the tombstone is spent: nothing left to do


def test_readers_see_the_deletions_before_the_next_build(lake):
    root, away = lake
    arrowidx.build(root, progress=False)
    shutil.move(os.path.join(away, "a.parquet"), os.path.join(root, "a.parquet"))
    data = arrowidx.dataset(root)
    assert live(root) == A[5:] + B
    assert data.count_rows() == 15 and data.count_rows(filter=pc.field("id") < 5) == 0
    assert {p.path: p.deleted for p in data.explain(pc.field("id") >= 0).files} == {"a.parquet": 5, "b.parquet": 0}
    polars = arrowidx.polars.scan(root).select("id").sort("id").collect()
    assert polars.equals(pl.DataFrame({"id": A[5:] + B}))


def test_the_content_returns_under_another_name(lake):
    root, away = lake
    arrowidx.build(root, progress=False)
    shutil.move(os.path.join(away, "a.parquet"), os.path.join(root, "renamed.parquet"))
    assert live(root) == A[5:] + B
    assert arrowidx.build(root, progress=False).restored == {"renamed.parquet": 5}
    assert live(root) == A[5:] + B


def test_other_content_of_the_same_size_gets_nothing(lake):
    root, away = lake
    arrowidx.build(root, progress=False)
    other = list(range(100, 110))  # the same size as a.parquet, other values
    write(os.path.join(root, "a.parquet"), other)
    assert os.path.getsize(os.path.join(root, "a.parquet")) == os.path.getsize(os.path.join(away, "a.parquet"))
    assert live(root) == B + other
    assert arrowidx.build(root, progress=False).restored == {}
    assert live(root) == B + other


def test_a_delete_before_the_build_commits_the_returned_deletions(lake):
    root, away = lake
    arrowidx.build(root, progress=False)
    shutil.move(os.path.join(away, "a.parquet"), os.path.join(root, "a.parquet"))
    assert arrowidx.delete(root, "id = 7", progress=False).rows_deleted == 1  # (ids 0-4 are already deleted)
    assert live(root) == [5, 6, 8, 9] + B
    assert arrowidx.build(root, progress=False).restored == {}  # committed by the delete already
    assert live(root) == [5, 6, 8, 9] + B


def test_vacuum_drops_tombstones_older_than_its_retention(lake):
    root, away = lake
    arrowidx.build(root, progress=False)
    kept = arrowidx.vacuum(root, older_than=3600)
    assert kept.tombstones_dropped == {}
    dry = arrowidx.vacuum(root, older_than=0, dry_run=True)
    assert dry.tombstones_dropped == {"a.parquet": 5} and "would drop 1 tombstone(s)" in str(dry)
    report = arrowidx.vacuum(root, older_than=0)
    assert report.tombstones_dropped == {"a.parquet": 5}
    assert "dropped 1 tombstone(s) (5 deleted row(s) of files that left: a.parquet)" in str(report)
    shutil.move(os.path.join(away, "a.parquet"), os.path.join(root, "a.parquet"))
    assert live(root) == A + B  # after its retention, a returning file is new data
    assert arrowidx.build(root, progress=False).restored == {}


def test_a_rebuild_that_forgets_stale_deletions_keeps_them_for_the_old_content(lake, tmp_path):
    """``on_stale_deletions="read-full"`` forgets the deletions for the file's new content; the
    old content, should it come back elsewhere, still has them."""
    root, away = lake
    shutil.move(os.path.join(away, "a.parquet"), os.path.join(root, "a.parquet"))
    original = str(tmp_path / "original.parquet")
    shutil.copy(os.path.join(root, "a.parquet"), original)
    pq.write_table(pa.table({"id": pa.array(list(range(50, 70)), pa.int64())}), os.path.join(root, "a.parquet"))
    report = arrowidx.build(root, on_stale_deletions="read-full", progress=False)
    assert report.tombstoned == {"a.parquet": 5}
    assert live(root) == B + list(range(50, 70))
    shutil.copy(original, os.path.join(root, "restored.parquet"))
    assert live(root) == A[5:] + B + list(range(50, 70))


def test_entries_indexed_before_content_hashes_are_reported_forgotten(lake):
    """A manifest written before content hashes has nothing to key a tombstone by: the build
    says plainly which deletions it forgets."""
    root, away = lake
    shutil.move(os.path.join(away, "a.parquet"), os.path.join(root, "a.parquet"))

    def legacy(d):
        d["format_version"] = 2
        for f in d["files"]:
            f.pop("content_xxh64", None)
        d.pop("tombstones", None)

    edit(root, legacy)
    os.remove(os.path.join(root, "a.parquet"))
    report = arrowidx.build(root, progress=False)
    assert (report.tombstoned, report.forgotten) == ({}, {"a.parquet": 5})
    assert str(report).endswith("; FORGOT the 5 deleted row(s) of 1 file(s) (a.parquet) (indexed before content hashes:"
                                " if that file returns, those rows are live)")  # fmt: skip
