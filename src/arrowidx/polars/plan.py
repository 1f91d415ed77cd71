"""Opening and planning for Polars: shared datasets, the Polars schema, and per execution
the translation of the Polars predicate and its plan by the one planner
(:class:`arrowidx.lake.plan.Planner`) with Polars' policy (:class:`FutilePolicy`)."""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.fs as pafs

from .. import facts
from .._roaring import bitmap_of
from ..lake.files import LakeFiles
from ..lake.layout import join
from ..lake.partitions import polars_semantics
from ..lake.plan import Planner, Policy
from ..lake.plans import FilePlan
from ..lake.read import every_row_group_matches, is_numeric_range
from ..lake.scan import IndexedDataset
from ..lake.scan import dataset as _open_dataset
from ..predicate import bind
from .translate import translate

#: Datasets opened by path are kept (:data:`arrowidx.facts.OPEN`) and shared between scans
#: of the same path, so that their files' identities and key directories stay known.
OPEN_WEIGHT = 4 << 20  # what one open dataset counts against the budget (at most 16 kept)


def _read_as_polars(data: IndexedDataset, hidden_prefixes: tuple[str, ...], missing_columns: str = "raise") -> IndexedDataset:
    """``data``'s files as Polars finds them: in a folder, 0-byte files skipped and names
    starting with ``_`` or ``.`` read; files named with a ``hidden_file_prefix`` skipped;
    a column missing from a file raises or is NULL (``missing_columns``), as Polars reads it."""
    lake = data.lake
    lake.missing_columns = missing_columns
    if lake.source is not None or (lake.only is not None and not hidden_prefixes):
        return data
    if lake.only is None:
        lake.skip_empty, lake.hidden_files = True, True
    lake.hidden_prefixes = hidden_prefixes
    data.refresh()  # (listed again, with Polars' rules)
    return data


def open_dataset(source: Any, filesystem: pafs.FileSystem | None, on_corrupt: str,
                 storage_options: dict[str, Any] | None = None, partitioning: Any = "hive",
                 index_root: Any = None, hidden_prefixes: tuple[str, ...] = (), missing_columns: str = "raise") -> IndexedDataset:  # fmt: skip
    """An opened dataset, shared between scans of the same path so that opened indexes,
    footers and deletion vectors stay cached (each cache entry is keyed by the data file's
    size and modification time, and each execution re-reads the manifest)."""
    if filesystem is not None or not isinstance(source, (str, os.PathLike)):
        data = _open_dataset(source, filesystem=filesystem, on_corrupt=on_corrupt, storage_options=storage_options,
                             partitioning=partitioning, index_root=index_root)  # fmt: skip
        data.lake.footers_from_fragments = False  # Polars reads the files: footers are read by arrowidx alone
        return _read_as_polars(data, hidden_prefixes, missing_columns)
    path = os.fspath(source)
    options = tuple(sorted((str(k), str(v)) for k, v in (storage_options or {}).items()))
    key = ("polars dataset", os.path.abspath(path) if "://" not in path else path, on_corrupt, options, repr(partitioning),
           None if index_root is None else os.fspath(index_root), hidden_prefixes, missing_columns)  # fmt: skip
    held = facts.OPEN.peek(key)
    if held is not None:
        with held.lake.planning_lock:
            held.refresh()  # files added or removed since it was cached
        return held

    def make() -> tuple[IndexedDataset, int]:
        data = _open_dataset(source, on_corrupt=on_corrupt, storage_options=storage_options, partitioning=partitioning,
                             index_root=index_root)  # fmt: skip
        data.lake.footers_from_fragments = False  # Polars reads the files: footers are read by arrowidx alone
        return _read_as_polars(data, hidden_prefixes, missing_columns), OPEN_WEIGHT

    return facts.OPEN.get(key, make)


def polars_schema(data: IndexedDataset, native: bool) -> dict[str, pl.DataType]:
    """The schema the scan declares: what Polars' reader makes of the first file (kept
    while that file is unchanged), or Polars' view of the Arrow schema for pyarrow reads."""
    if not native:
        return dict(pl.from_arrow(data.schema.empty_table()).schema)
    path = join(data.root, data.lake.files[0])
    info = data.fs.get_file_info(path)
    partitioning = data.partitioning

    def make() -> tuple[dict, int]:
        schema = dict(pl.scan_parquet(path, glob=False, hive_partitioning=False).collect_schema())
        if partitioning is not None:  # Hive partition columns (their values come from the folders)
            replace = polars_semantics(data.lake.partitioning_spec)  # (Polars: a column the file holds takes the Hive type, in place)
            fields = [f for f in partitioning.schema if replace or f.name not in schema]
            schema.update(pl.from_arrow(pa.schema(fields).empty_table()).schema)
        return schema, 256 * (len(schema) + 1)

    key = ("polars schema", data.store.key, path, info.size, info.mtime_ns, None if partitioning is None else str(partitioning.schema))
    return facts.DERIVED.get(key, make)


class Planned(NamedTuple):
    """What :func:`plan_scan` found: the translation, the plans and the files' deletion
    vectors, the files a key directory ruled out without a plan (their number and rows),
    and the files their Hive folders keep (None: every file)."""

    translation: Any
    plans: list | None
    vectors: dict
    ruled_files: int = 0
    ruled_rows: int = 0
    files: list[str] | None = None


def _hive_first(data: IndexedDataset, predicate, partitions: bool) -> tuple[Any, list[str] | None, Any]:
    """Polars' order for a Hive layout: the files whose folders may match ``predicate``
    (None: every file), decided from the folder names before any of their footers is read,
    as Polars prunes them; and the translation the files' indexes judge, without the Hive
    columns (Polars takes their values from the folders, never from a column a file holds:
    its index and statistics say nothing of them). ``(None, None, None)``: no Hive columns.
    ``partitions``: prune files by their folders (not with a row limit, which counts the
    rows of every file)."""
    lake = data.lake
    hive = data.partitioning
    if hive is None or predicate is None:
        return None, None, None
    names = _column_names(predicate)
    if names is not None and not names & set(hive.schema.names):
        return None, None, None
    full = translate(predicate, data.schema)
    kept = lake.partition_candidates(full.expression) if partitions and full.expression is not None else lake.files
    files = None if kept is lake.files else kept
    if not polars_semantics(lake.partitioning_spec):
        return full, files, full
    schema = data.schema
    for name in hive.schema.names:
        i = schema.get_field_index(name)
        if i >= 0:
            schema = schema.remove(i)
    return full, files, translate(predicate, schema)


def _pruned_by_folder(lake: LakeFiles, plans: list[FilePlan], files: list[str]) -> list[FilePlan]:
    """``plans`` (of ``files``) with a "pruned" plan for each other file (its Hive folder
    ruled it out; rows as the manifest has them, no footer read), in file order."""
    by_path = {p.path: p for p in plans}
    out = []
    for rel in lake.files:
        plan = by_path.get(rel)
        if plan is None:
            entry = lake.manifest.files.get(rel)
            rows = entry.rows if entry is not None else 0
            plan = FilePlan(rel, rows, "pruned", note="partition", reason="partition",
                            row_group_offsets=np.array([0, rows]), why="ruled out by its partition folder")  # fmt: skip
        out.append(plan)
    return out


def plan_scan(data: IndexedDataset, predicate, *, always: bool = True, partitions: bool = True) -> Planned:
    """Translate, refresh the manifest and plan every file; one manifest version per call.

    With ``always=False`` the plans are ``None`` when there is nothing to plan: no index
    covers a column of the predicate and nothing is deleted, so every file is read whole
    (no footer, index or file is touched here; the caller hands the files to Polars as they
    are; the translation is then None when the predicate names no indexed column). Files a
    key directory rules out then get no plan either: only their count and rows are kept
    (``always``: a report listing every file's plan is wanted). A filter on Hive columns
    first rules files out by their folders (:func:`_hive_first`; ``partitions=False``: not
    with a row limit): only the files kept are planned (``files``), the others never opened.
    """
    lake, planner = data.lake, data.planner
    with lake.planning_lock:
        data.refresh()
        full, files, judged = _hive_first(data, predicate, partitions)
        if files is not None:  # only the files their Hive folders keep are planned (their footers read)
            planner = Planner(lake.restricted(files), on_corrupt=planner.on_corrupt)
        names = None if always else _column_names(predicate)
        if names is not None and not (names & lake.indexed_columns()) and planner.indexes_cannot_help(None):
            return Planned(None, None, {}, files=files)  # no index on a column the predicate names, nothing deleted: not even translated
        translation = judged if judged is not None else translate(predicate, data.schema)
        # No index on the predicate's columns and nothing deleted: plan without asking the
        # indexes (every file is then read whole by one pl.scan_parquet).
        unprunable = planner.indexes_cannot_help(translation.expression)
        if unprunable and not always:
            return Planned(translation, None, {}, files=files)
        expr = None if unprunable else translation.expression
        planned = planner.plan_with(expr, FutilePolicy(expr, data.schema, translation.exact), every_file=always)
        vectors = {p.path: lake.deletion_vector(p.path) for p in planned.plans}
        plans = planned.plans if files is None or not always else _pruned_by_folder(lake, planned.plans, files)
    return Planned(translation, plans, vectors, planned.ruled_files, planned.ruled_rows, files)


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
FUTILE_FILES = 4


class FutilePolicy(Policy):
    """Polars' planning policy: which files are worth asking their index (see
    :data:`FUTILE_FILES`)."""

    def __init__(self, expr, schema: pa.Schema, exact: bool):
        self.exact = exact
        self.futile = 0  # files in a row whose index bitmap kept (or would keep) every row group
        ranged = bind(expr, schema) if expr is not None else None  # for every_row_group_matches
        self.ranged = ranged if is_numeric_range(ranged) else None
        self.asked: str | None = None

    def ask(self, lake: LakeFiles, rel: str) -> str | None:
        if self.futile >= FUTILE_FILES:
            self.asked = f"index not asked: it kept every row group of the {self.futile} files before"
        elif self.ranged is not None and not _has_deletions(lake, rel) and every_row_group_matches(lake.footer(rel), self.ranged):
            self.asked = "index not asked: Parquet statistics show a matching row in every row group"
        else:
            self.asked = None
        return self.asked

    def after(self, plan: FilePlan, lake: LakeFiles) -> None:
        asked, self.asked = self.asked, None
        if asked is not None:  # not asked: by the count (unchanged), or by statistics (counts)
            if asked.startswith("index not asked: Parquet"):
                self.futile += 1
            return
        # a bitmap that spared a row index bought something, but says nothing of the next file
        if not _spares_row_index(plan, lake.deletion_vector(plan.path), self.exact):
            self.futile = self.futile + 1 if _kept_every_row_group(plan) else 0

    def ruled_out(self, rel: str) -> None:
        self.futile = 0


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


def _has_deletions(lake: LakeFiles, rel: str) -> bool:
    dv = lake.deletion_vector(rel)
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
