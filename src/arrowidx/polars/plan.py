"""Opening and planning: shared datasets, the Polars schema, translate + plan per execution."""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from typing import Any, NamedTuple

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.fs as pafs

from .._roaring import bitmap_of
from ..lake.layout import join
from ..lake.read import every_row_group_matches, is_numeric_range
from ..lake.scan import IndexedDataset
from ..lake.scan import dataset as _open_dataset
from ..predicate import bind
from .translate import translate

_DATASETS: OrderedDict[tuple, IndexedDataset] = OrderedDict()
_DATASETS_LOCK = threading.Lock()
_DATASETS_MAX = 16


def _dataset(source: Any, filesystem: pafs.FileSystem | None, on_corrupt: str,
             storage_options: dict[str, Any] | None = None, partitioning: Any = "hive") -> IndexedDataset:  # fmt: skip
    """An opened dataset, shared between scans of the same path so that opened indexes,
    footers and deletion vectors stay cached (each cache entry is keyed by the data file's
    size and modification time, and each execution re-reads the manifest)."""
    if filesystem is not None or not isinstance(source, (str, os.PathLike)):
        data = _open_dataset(source, filesystem=filesystem, on_corrupt=on_corrupt, storage_options=storage_options,
                             partitioning=partitioning)  # fmt: skip
        data._footers_from_fragments = False  # Polars reads the files: footers are read by arrowidx alone
        return data
    path = os.fspath(source)
    options = tuple(sorted((str(k), str(v)) for k, v in (storage_options or {}).items()))
    key = (os.path.abspath(path) if "://" not in path else path, on_corrupt, options, repr(partitioning))
    with _DATASETS_LOCK:
        data = _DATASETS.get(key)
        if data is not None:
            _DATASETS.move_to_end(key)
    if data is not None:
        with _lock(data):
            data.refresh()  # files added or removed since it was cached
        return data
    data = _open_dataset(source, on_corrupt=on_corrupt, storage_options=storage_options, partitioning=partitioning)
    data._footers_from_fragments = False  # Polars reads the files: footers are read by arrowidx alone
    with _DATASETS_LOCK:
        data = _DATASETS.setdefault(key, data)
        while len(_DATASETS) > _DATASETS_MAX:
            _DATASETS.popitem(last=False)
    return data


_SCHEMAS: weakref.WeakKeyDictionary[IndexedDataset, tuple] = weakref.WeakKeyDictionary()


def _polars_schema(data: IndexedDataset, native: bool) -> dict[str, pl.DataType]:
    """The schema the scan declares: what Polars' reader makes of the first file (cached
    while that file is unchanged), or Polars' view of the Arrow schema for pyarrow reads."""
    if not native:
        return dict(pl.from_arrow(data.schema.empty_table()).schema)
    path = join(data.root, data.files[0])
    info = data.fs.get_file_info(path)
    key = (path, info.size, info.mtime_ns)
    cached = _SCHEMAS.get(data)
    if cached is not None and cached[0] == key:
        return cached[1]
    schema = dict(pl.scan_parquet(path, glob=False, hive_partitioning=False).collect_schema())
    if data.partitioning is not None:  # Hive partition columns (their values come from the folders)
        fields = [f for f in data.partitioning.schema if f.name not in schema]
        schema.update(pl.from_arrow(pa.schema(fields).empty_table()).schema)
    _SCHEMAS[data] = (key, schema)
    return schema


_LOCKS: weakref.WeakKeyDictionary[IndexedDataset, threading.Lock] = weakref.WeakKeyDictionary()


def _lock(data: IndexedDataset) -> threading.Lock:
    with _DATASETS_LOCK:
        return _LOCKS.setdefault(data, threading.Lock())


class Planned(NamedTuple):
    """What :func:`_plan` found: the translation, the plans and the files' deletion vectors,
    and the files a key directory ruled out without a plan (their number and rows)."""

    translation: Any
    plans: list | None
    vectors: dict
    ruled_files: int = 0
    ruled_rows: int = 0


def _plan(data: IndexedDataset, predicate, *, always: bool = True) -> Planned:
    """Translate, refresh the manifest and plan every file; one manifest version per call.

    With ``always=False`` the plans are ``None`` when there is nothing to plan: no index
    covers a column of the predicate and nothing is deleted, so every file is read whole
    (no footer, index or file is touched here; the caller hands the files to Polars as they
    are; the translation is then None when the predicate names no indexed column). Files a
    key directory rules out then get no plan either: only their count and rows are kept
    (``always``: a report listing every file's plan is wanted).
    """
    with _lock(data):
        data.refresh()
        names = None if always else _column_names(predicate)
        if names is not None and not (names & data._indexed_columns()) and data._indexes_cannot_help(None):
            return Planned(None, None, {})  # no index on a column the predicate names, nothing deleted: not even translated
        translation = translate(predicate, data.schema)
        # No index on the predicate's columns and nothing deleted: plan without asking the
        # indexes (every file is then read whole by one pl.scan_parquet).
        unprunable = data._indexes_cannot_help(translation.expression)
        if unprunable and not always:
            return Planned(translation, None, {})
        data._forget_file_infos()  # one stat of every file per execution
        expr = None if unprunable else translation.expression
        data._prepare(data.files, expr)
        # plan_file per file, in this thread: once the indexes are cached this takes well
        # under a millisecond for 20 files, less than starting plan()'s thread pool.
        # ``bound``: the Expression bound once per index schema it is evaluated against.
        bound: dict = {}
        # files a key directory skips: their plans, or (no report wanted) their rows only
        ruled = data._ruled_out(expr, bound) if always else {}
        unlisted = {} if always else data._ruled_out_rows(expr, bound)
        plans = []
        futile = 0  # files in a row whose index bitmap kept (or would keep) every row group
        ranged = bind(expr, data.schema) if expr is not None else None  # for every_row_group_matches
        if not is_numeric_range(ranged):
            ranged = None
        for rel in data.files:
            if rel in unlisted:
                futile = 0
                continue
            if rel in ruled:
                plan = ruled[rel]
                futile = 0
            elif futile >= _FUTILE_FILES:
                plan = data.plan_file(rel, None, bound, statistics=False)
                plan.note = f"index not asked: it kept every row group of the {futile} files before"
            elif ranged is not None and not _has_deletions(data, rel) and every_row_group_matches(data.footer(rel), ranged):
                plan = data.plan_file(rel, None, bound, statistics=False)
                plan.note = "index not asked: Parquet statistics show a matching row in every row group"
                futile += 1
            else:
                plan = data.plan_file(rel, expr, bound, statistics=False)
                # a bitmap that spared a row index bought something, but says nothing of the next file
                if not _spares_row_index(plan, data.deletion_vector(rel), translation.exact):
                    futile = futile + 1 if _kept_every_row_group(plan) else 0
            plans.append(plan)
        vectors = {p.path: data.deletion_vector(p.path) for p in plans}
    return Planned(translation, plans, vectors, len(unlisted), sum(unlisted.values()))


# Polars reads a file whose index bitmap keeps every row group exactly as it reads a file
# with no index (the predicate is applied again either way), so such a bitmap buys nothing
# but its cost: evaluating a 1 % range on the range bitmaps of the demo lake's 20 files
# takes ~12 ms of a 150 ms query. After this many such files in a row the remaining files
# are read without asking their indexes; a file the index skips, narrows, or only "maybe"
# keeps resets the count. A file with deleted rows whose bitmap holds none of them, or is
# exact, neither counts nor resets: there the bitmap spared a row index (only deleted rows
# that match can change the answer, and an exact bitmap places them in the result), which a
# file not asked pays for. A file whose Parquet statistics already show a matching row in
# every row group (a range whose bound its row groups' minima or maxima pass, and nothing
# deleted) is not asked at all, and counts: a 1 % range on the range bitmap of one
# 20M-row file costs ~15-20 ms, its 200 row groups' statistics ~1 ms.
_FUTILE_FILES = 4


def _spares_row_index(plan, dv, exact: bool = False) -> bool:
    """The file has deleted rows and its index bitmap holds none of them, or is exactly the
    rows matching a predicate translated exactly (``exact``), so it is read without a row
    index (see ``_Source._reads`` and ``_Source._scan_whole``); not asking its index would
    cost one."""
    if dv is None or not dv.cardinality or plan.result.kind != "bitmap":
        return False
    if exact and plan.exact:
        return True
    deleted = dv.bitmap
    if dv.bitmap64:  # the bitmaps of an index are 32-bit (a file's rows fit in them)
        positions = dv.positions()
        if positions[-1] >= 1 << 32:
            return False
        deleted = bitmap_of(positions)
    return not deleted.intersect(plan.result.bitmap)


def _has_deletions(data: IndexedDataset, rel: str) -> bool:
    dv = data.deletion_vector(rel)
    return dv is not None and bool(dv.cardinality)


def _kept_every_row_group(plan) -> bool:
    """The file's index answered with a bitmap that holds a row in every row group."""
    if plan.result.kind != "bitmap" or plan.row_group_offsets is None:
        return False
    return len(plan.row_groups) == int(np.count_nonzero(np.diff(plan.row_group_offsets)))


def _column_names(predicate) -> set[str] | None:
    """The columns a Polars predicate names (None when it cannot tell)."""
    if predicate is None:
        return set()
    try:
        return set(predicate.meta.root_names())
    except Exception:  # noqa: BLE001
        return None
