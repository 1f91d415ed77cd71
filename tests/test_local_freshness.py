"""A local lake's files as a reader finds them (issue 51): added, removed, renamed or
rewritten in place since the build, against ``pq.read_table`` + ``Table.filter``.

A reader lists the lake once (each file's stat with the listing, kept as columns) and
checks the files the lake index rules out against the manifest for all of them at once
(``LakeFiles.still_indexed``); a later query of the same reader stats every file once. A
wrong SKIP is data loss: every change below must be seen. A file added or renamed since is
read as unindexed, a removed one is not read, one rewritten in place (the same size, its
modification time set back: only its change stamp differs) is read in full. The truth is
the bytes on disk: every data file a ``pyarrow.dataset`` discovery finds, read with
``pq.read_table`` and filtered in memory with ``Table.filter``. Hive folders too: a filter
on the partition plans a view of the listing, query after query.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.lake import plan as plan_module

FILES = 24
ROWS = 20
OPTIONS = {"file-index.bloom-filter.columns": "id"}
FOLDERS = ("", "more")  # files at the root and in a folder below it


def _write(path: str, ids: np.ndarray) -> None:
    """A data file of ``ids`` whose size depends only on its row count (no dictionary, no
    compression: a rewrite with other ids of the same count has the same size)."""
    table = pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids * 10, pa.int64())})
    pq.write_table(table, path, compression="none", use_dictionary=False)


def _data_files(root: str) -> list[str]:
    """The data files a ``pyarrow.dataset`` discovery finds (``_``/``.`` names skipped)."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d[0] not in "_."]
        found += [os.path.join(folder, f) for f in files if f[0] not in "_."]
    return sorted(found)


def _truth(root: str, expr: pc.Expression) -> pa.Table:
    tables = [pq.read_table(p) for p in _data_files(root)]
    return pa.concat_tables(tables).filter(expr) if tables else pa.table({"id": pa.array([], pa.int64())})


def _same(got: pa.Table, want: pa.Table) -> bool:
    return sorted(got.column("id").to_pylist()) == sorted(want.column("id").to_pylist()) and got.num_rows == want.num_rows


def _lake(root: str, rng: np.random.Generator) -> tuple[list[str], int]:
    """FILES files of ROWS unique ids, in two folders, indexed; their paths and the next id."""
    ids = rng.permutation(FILES * ROWS)
    paths = []
    for i in range(FILES):
        folder = os.path.join(root, FOLDERS[i % 2])
        os.makedirs(folder, exist_ok=True)
        paths.append(os.path.join(folder, f"part-{i:03d}.parquet"))
        _write(paths[-1], ids[i * ROWS : (i + 1) * ROWS])
    arrowidx.build(root, OPTIONS, progress=False)
    return paths, FILES * ROWS


def _rewrite_in_place(path: str, ids: np.ndarray) -> None:
    """``path`` truncated and written again with ``ids`` (same inode, same size), its
    modification time set back to the one indexed: only its change time differs."""
    before = os.stat(path)
    tmp = path + ".new"
    _write(tmp, ids)
    data = open(tmp, "rb").read()
    os.remove(tmp)
    assert len(data) == before.st_size
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)


def _changes(root: str, paths: list[str], next_id: int, rng: np.random.Generator) -> list[int]:
    """Random adds, removals, renames and in-place rewrites; the ids they bring in (each
    kept by no file's index: a reader must see the change to find it)."""
    fresh = []
    order = rng.permutation(len(paths)).tolist()
    for kind in rng.choice(["add", "remove", "rename", "rename over", "rewrite"], size=int(rng.integers(1, 6))):
        if len(order) < 2:
            break
        if kind == "add":
            new = np.arange(next_id, next_id + ROWS)
            _write(os.path.join(root, FOLDERS[int(rng.integers(2))], f"added-{next_id}.parquet"), new)
        elif kind == "remove":
            os.remove(paths[order.pop()])
            continue
        elif kind == "rename":  # (its ids stay; under a new name it is no file the manifest lists)
            target = os.path.join(root, FOLDERS[int(rng.integers(2))], f"renamed-{next_id}.parquet")
            os.rename(paths[order.pop()], target)
            fresh += pq.read_table(target).column("id").to_pylist()
            next_id += 1
            continue
        elif kind == "rename over":  # a new file moved over an indexed one (another inode, maybe the same size)
            path = paths[order.pop()]
            new = np.arange(next_id, next_id + ROWS)
            _write(path + ".tmp", new)
            os.replace(path + ".tmp", path)
        else:
            path = paths[order.pop()]
            new = np.arange(next_id, next_id + ROWS)
            _rewrite_in_place(path, new)
        next_id += ROWS
        fresh += new.tolist()
    return fresh


def _queries(fresh: list[int], rng: np.random.Generator) -> list[pc.Expression]:
    """A needle on each id the changes brought in (a few), one on an id of an unchanged
    file, and an IN list of more than a needle's files."""
    needles = [int(v) for v in rng.choice(fresh, size=min(4, len(fresh)), replace=False)] if fresh else []
    held = int(rng.integers(FILES * ROWS))
    many = needles + [int(v) for v in rng.integers(FILES * ROWS, size=plan_module.NEEDLE_MAX_FILES + 2)]
    return [pc.field("id") == v for v in needles + [held]] + [pc.field("id").isin(many)]


@pytest.mark.parametrize("seed", range(16))
def test_a_new_reader_sees_every_file_changed_since_the_build(tmp_path, seed):
    """Files added, removed, renamed or rewritten in place (the same size, the same
    modification time) between the build and a new reader: every needle returns what
    ``Table.filter`` returns on the files as they are."""
    rng = np.random.default_rng(seed)
    root = str(tmp_path / "lake")
    paths, next_id = _lake(root, rng)
    fresh = _changes(root, paths, next_id, rng)
    for expr in _queries(fresh, rng):
        got = arrowidx.dataset(root).to_table(filter=expr)
        assert _same(got, _truth(root, expr)), f"seed {seed}: {expr}"


@pytest.mark.parametrize("seed", range(8))
def test_a_reader_sees_files_rewritten_in_place_between_its_queries(tmp_path, seed):
    """The same reader, query after query: a file rewritten in place (same size and
    modification time) after its first query is seen by the next (one stat of every file
    per query, not the listing made when it was opened)."""
    rng = np.random.default_rng(100 + seed)
    root = str(tmp_path / "lake")
    paths, next_id = _lake(root, rng)
    data = arrowidx.dataset(root)
    probe = pc.field("id") == int(rng.integers(FILES * ROWS))
    assert _same(data.to_table(filter=probe), _truth(root, probe))  # the first query: the listing's stats
    for round in range(2):
        path = paths[int(rng.integers(FILES))]
        new = np.arange(next_id, next_id + ROWS)
        _rewrite_in_place(path, new)
        next_id += ROWS
        for expr in [pc.field("id") == int(new[int(rng.integers(ROWS))]), pc.field("id").isin(new[:3].tolist())]:
            assert _same(data.to_table(filter=expr), _truth(root, expr)), f"seed {seed}, round {round}: {expr}"


@pytest.mark.parametrize("seed", range(6))
def test_a_partition_filter_and_a_needle_see_changed_files(tmp_path, seed):
    """Hive folders: a filter on the partition and the needle plans the files of the kept
    folders (a view of the listing); files changed there since the build are seen."""
    rng = np.random.default_rng(200 + seed)
    root = str(tmp_path / "lake")
    ids = rng.permutation(FILES * ROWS)
    paths = []
    for i in range(FILES):
        folder = os.path.join(root, f"part={'ab'[i % 2]}")
        os.makedirs(folder, exist_ok=True)
        paths.append(os.path.join(folder, f"f-{i:03d}.parquet"))
        _write(paths[-1], ids[i * ROWS : (i + 1) * ROWS])
    arrowidx.build(root, OPTIONS, progress=False)
    data = arrowidx.dataset(root)
    next_id = FILES * ROWS
    for round in range(3):
        if round:  # the same reader, after files changed in place (its next queries stat every file)
            new = np.arange(next_id, next_id + ROWS)
            _rewrite_in_place(paths[int(rng.integers(FILES))], new)
            next_id += ROWS
        else:
            new = ids[:ROWS]
        for part in "ab":
            value = int(new[int(rng.integers(ROWS))])
            expr = (pc.field("part") == part) & (pc.field("id") == value)
            files = [p for p in _data_files(root) if f"part={part}" in p]
            want = pa.concat_tables([pq.read_table(p) for p in files]).filter(pc.field("id") == value)
            for reader in (data, arrowidx.dataset(root)):
                assert _same(reader.to_table(filter=expr), want), f"seed {seed}, round {round}: {expr}"


def _opened(kind: str, root: str):
    """A reader of ``root`` opened now, and how it answers ``id == value`` later (its first query)."""
    if kind == "polars":
        import polars as pl

        from arrowidx.polars import scan

        frame = scan(root)
        return lambda value: pa.table({"id": frame.filter(pl.col("id") == value).select("id").collect().to_series().to_arrow()})
    if kind == "plain":
        from arrowidx.lake.scan import dataset

        opened = dataset(root)
    else:
        opened = arrowidx.dataset(root)
    return lambda value: opened.to_table(filter=pc.field("id") == value)


@pytest.mark.parametrize("kind", ["pyarrow", "plain", "polars"])
@pytest.mark.parametrize("change", ["rewrite in place", "moved over"])
def test_a_file_changed_between_opening_and_the_first_query_is_seen(tmp_path, kind, change):
    """A reader opened (its listing made), then a listed file rewritten in place (same size
    and modification time) or replaced by a file moved over it, then the reader's first
    query: it returns what ``Table.filter`` returns on the files as they are then (pyarrow
    opens the files it lists when it reads them). Before the fix the first query took the
    stats of the listing made at open and skipped the file on its old index (0 rows)."""
    rng = np.random.default_rng(7)
    root = str(tmp_path / "lake")
    paths, next_id = _lake(root, rng)
    query = _opened(kind, root)
    new = np.arange(next_id, next_id + ROWS)
    if change == "rewrite in place":
        _rewrite_in_place(paths[5], new)
    else:
        _write(paths[5] + ".tmp", new)
        os.replace(paths[5] + ".tmp", paths[5])
    value = int(new[3])
    want = _truth(root, pc.field("id") == value)
    assert want.num_rows == 1
    assert _same(query(value), want)
