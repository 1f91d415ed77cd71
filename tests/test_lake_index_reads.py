"""Reads through the lake index (issue 51): the public API against ``Table.filter``.

The builds of these lakes commit a lake index with their manifests (``arrowidx.build``);
``arrowidx.dataset(root).to_table(filter)`` and ``arrowidx.polars.scan`` then plan needles
and IN lists through it (``Planner.select``). On random lakes of the differential suite
(files, then deletes, added, rewritten and removed files, rebuilds, a build of one file),
then a needle delete planned through the same structure, a rebuild or not, and a file
rewritten in place after the last build or not, every needle / IN list of the lake's own
values and random filters return what ``Table.filter`` returns on every row in memory
(minus the deleted ones), and Polars' reads what Polars' own ``DataFrame.filter`` returns.
"""

from __future__ import annotations

import json
import os
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrowidx
from arrowidx import facts
from arrowidx.lake import filetable
from arrowidx.lake import plan as plan_module

from .conftest import index_dir
from .differential_support import (
    BY_NAME,
    TempLake,
    expressions,
    fuzz_settings,
    lake_specs,
    same_rows,
)

pl = pytest.importorskip("polars")

#: columns whose Python values Polars takes as they are (the Polars half of the check)
POLARS_COLUMNS = {"i", "j", "h", "s", "d"}
COLUMNS = ["i", "j", "h", "s", "b", "d", "t64", "tsn", "tz", "dec", "f"]


def _held(lake, name: str) -> list:
    values = [v for v in lake.rows().column(name).to_pylist() if v is not None]
    return values or [v for v in BY_NAME[name].pool if v is not None]


def _needles(lake, data) -> list[tuple[pc.Expression, object]]:
    """Needles and IN lists of values the lake holds (and one it may not), each with its
    Polars form where the column's values are plain for Polars (else None)."""
    out = []
    for name in lake.columns:
        column = BY_NAME[name]
        held = _held(lake, name)
        v = data.draw(st.sampled_from(held), label=f"needle on {name}")
        values = data.draw(st.lists(st.sampled_from(held + [v for v in column.pool if v is not None]), max_size=4))
        plain = name in POLARS_COLUMNS
        out.append((pc.field(name) == pa.scalar(v, column.type), pl.col(name) == v if plain else None))
        out.append((pc.field(name).isin(pa.array(values, column.type)), pl.col(name).is_in(values) if plain and values else None))
    return out


def _check(lake, expr: pc.Expression, polars_expr) -> None:
    facts.clear()  # a new process's first query, as far as what is remembered goes
    try:
        expected = lake.reference(expr)
    except (pa.ArrowException, TypeError, ValueError):
        return  # an invalid filter: the differential suite checks it fails the same way
    got = arrowidx.dataset(lake.root).to_table(filter=expr)
    assert same_rows(got, expected), f"{expr}: {got.num_rows} rows, Table.filter {expected.num_rows}"
    if polars_expr is not None:
        frame = arrowidx.polars.scan(lake.root).filter(polars_expr).collect()
        reference = pl.from_arrow(lake.rows()).filter(polars_expr)
        assert sorted(frame["rid"].to_list()) == sorted(reference["rid"].to_list()), f"polars {polars_expr}"


@fuzz_settings(30)
@given(lake_specs(names=COLUMNS, big=False, min_rows=1), st.data())
def test_reads_through_the_lake_index_return_what_table_filter_returns(spec, data):
    # the manifest's entries in one merged file-table segment, or in several (a commit's
    # changes and removals each in a segment of its own, merged only past three)
    many = data.draw(st.booleans(), label="many segments")
    with mock.patch.object(filetable, "MERGE_FACTOR", 0 if many else filetable.MERGE_FACTOR), \
            mock.patch.object(filetable, "MAX_SEGMENTS", 3 if many else filetable.MAX_SEGMENTS):  # fmt: skip
        _reads_through_the_lake_index(spec, data)


def _reads_through_the_lake_index(spec, data) -> None:
    with TempLake(spec) as lake:
        if data.draw(st.booleans(), label="needle delete"):  # planned through the lake index too
            name = data.draw(st.sampled_from(lake.columns))
            value = data.draw(st.sampled_from(_held(lake, name)))
            where = pc.field(name) == pa.scalar(value, BY_NAME[name].type)
            try:
                doomed = lake.reference(where).column("rid").to_pylist()
                arrowidx.delete(lake.root, where, progress=False)
            except (pa.ArrowException, arrowidx.StaleDeletionError):
                doomed = []  # (a filter pyarrow cannot run, or a file rewritten after a delete)
            lake.deleted.update(doomed)
        if data.draw(st.booleans(), label="rebuild"):
            arrowidx.build(lake.root, progress=False)
        if data.draw(st.booleans(), label="rewrite in place after the build"):
            files = lake.files()
            path = files[data.draw(st.integers(0, len(files) - 1))]
            held = set(pq.read_table(path, columns=["rid"]).column("rid").to_pylist())
            if not held & lake.deleted:  # (a file with deleted rows rewritten is refused on read, by design)
                # another file's values (keys this file's entry never had), under new row ids
                other = files[data.draw(st.integers(0, len(files) - 1))]
                table = pq.read_table(other, schema=lake.schema)
                rids = pa.array(np.arange(lake.next_rid, lake.next_rid + table.num_rows, dtype=np.int64))
                lake.next_rid += table.num_rows
                pq.write_table(table.set_column(0, "rid", rids), path)
        newest = max(n for n in os.listdir(index_dir(lake.root)) if n.startswith("manifest-"))
        assert "segments" in json.load(open(index_dir(lake.root, newest))), "not read through a file table"
        for expr, polars_expr in _needles(lake, data):
            _check(lake, expr, polars_expr)
        for _ in range(2):
            _check(lake, data.draw(expressions(lake.columns)), None)


def test_a_needle_over_many_files_is_planned_from_the_lake_index(tmp_path):
    """The lake index rules out the files without a needle's key, their own indexes not
    opened; a file whose bloom filter holds a false positive is ruled out too."""
    root = str(tmp_path / "lake")
    os.makedirs(root)
    ids = np.random.default_rng(7).permutation(100 * 40)
    for i in range(100):
        pq.write_table(pa.table({"id": ids[i * 40 : (i + 1) * 40]}), f"{root}/f{i:03d}.parquet")
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.fpp": "0.3"}, progress=False)
    facts.clear()
    data = arrowidx.dataset(root)
    asked = []
    real = plan_module.Planner.decide
    try:
        plan_module.Planner.decide = lambda self, rel, expr, bound=None: asked.append(rel) or real(self, rel, expr, bound)
        for needle in ids[:20].tolist():
            asked.clear()
            where = pc.field("id") == needle
            expected = pa.table({"id": ids}).filter(where)
            assert data.to_table(filter=where).equals(expected)
            holder = f"f{int(np.flatnonzero(ids == needle)[0]) // 40:03d}.parquet"
            assert asked == [holder], f"{needle}: asked the indexes of {asked}"  # none other than the holder's
    finally:
        plan_module.Planner.decide = real
    plans = data.explain(pc.field("id") == int(ids[0])).files
    by_lake_index = [p for p in plans if p.index_types == [plan_module.LAKE_INDEX]]
    assert by_lake_index, "no bloom filter false positive ruled out by the lake index (fpp 0.3 over 99 files)"


def test_a_polars_needle_opens_only_the_indexes_of_the_files_the_lake_index_keeps(tmp_path):
    """``arrowidx.polars.scan``'s planner asks the lake index first and opens the per-file
    indexes of the files it keeps only (before, every file's index was read for every
    needle: 20,000 files took 1.5 s); rows as Polars' own ``DataFrame.filter``."""
    import polars as pl

    from arrowidx.file_index import FileIndex
    from arrowidx.polars import scan

    root = str(tmp_path / "lake")
    os.makedirs(root)
    ids = np.random.default_rng(11).permutation(100 * 40)
    for i in range(100):
        pq.write_table(pa.table({"id": ids[i * 40 : (i + 1) * 40]}), f"{root}/f{i:03d}.parquet")
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, progress=False)
    everything = pl.read_parquet(f"{root}/*.parquet")
    loaded = []
    real = FileIndex.load
    with mock.patch.object(FileIndex, "load", lambda self, columns: loaded.append(columns) or real(self, columns)):
        for needle in ids[:10].tolist():
            facts.clear()
            loaded.clear()
            got = scan(root).filter(pl.col("id") == needle).collect()
            assert got.equals(everything.filter(pl.col("id") == needle))
            assert len(loaded) <= 3, f"{needle}: {len(loaded)} files' indexes opened"
