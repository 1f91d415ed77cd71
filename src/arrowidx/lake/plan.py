"""The one planner: which files, row groups and rows a filter needs, for every reader.

``arrowidx.dataset`` (:mod:`.scan`), ``arrowidx.polars.scan``, ``arrowidx.spark.read`` and
the ``arrowidx`` Spark data source plan a lake through :class:`Planner`; a Paimon table
plans its files through the same per-file decision (:func:`decide_with_index`) and shares
:class:`~arrowidx.lake.plans.FilePlan` and :class:`~arrowidx.lake.plans.Explain`.

A filter is planned in this order, each step only narrowing what the previous kept:

1. **Partitions**: files whose Hive folder cannot match are left out by their names alone
   (:meth:`~arrowidx.lake.files.LakeFiles.partition_candidates`); nothing is opened.
2. **Lake-level structures** (:meth:`Planner.select`, *the* seam for structures over all
   files): files a structure over many files rules out without asking their own indexes:
   the lake index the commit writes beside the manifest (:mod:`.lakeindex`), or, on a lake
   written before it, the key directories (:mod:`.directory`).
3. **Each file's index** (:meth:`Planner.decide`): a file changed since it was indexed is
   *stale* and read in full; otherwise its container answers (SKIP: never opened; a
   bitmap: only the row groups holding those rows).
4. **Row groups** (:meth:`Planner.finish`): deleted rows counted; the row groups left are
   intersected with those Parquet statistics and the partition keep (pyarrow's own
   ``ParquetFileFragment.subset``, judged soundly by :mod:`arrowidx.statistics`).

An engine that needs its own policy passes a :class:`Policy` (which files to ask their
index at all: ``arrowidx.polars`` stops asking after indexes that keep every row group).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from itertools import compress
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ArrowIdxError
from ..expression import check_expression, expression_text
from ..file_index import FileIndex
from ..filters import Filter, user_filter
from ..predicate import bind, is_exact, needles
from ..result import SKIP
from . import directory
from .directory import KeyDirectory, Member, build_directory
from .files import LakeFiles
from .manifest import FileEntry
from .plans import Explain, FilePlan, explain_why
from .read import bitmap_groups

# A needle the lake index (or the key directories) narrows to at most this many files is
# planned as a needle (Planner.route): only those files are planned, one by one.
NEEDLE_MAX_FILES = 16
#: The index type a file ruled out by the lake index reports in its plan.
LAKE_INDEX = "lake-index"


def index_pruned(plans: list[FilePlan]) -> bool:
    """True when an index ruled a file out or narrowed one to rows."""
    return any(p.skipped or p.result.kind == "bitmap" for p in plans)


def decide_with_index(plan: FilePlan, index: FileIndex, node) -> None:
    """The per-file decision every planner makes once a file's index is open and the filter
    bound under its names (``node``): the index's answer, the index types that gave it,
    whether a bitmap is exactly the matching rows, and the status it makes (``skipped``:
    no row can match; ``bitmap``: only these rows may)."""
    plan.result = index.evaluate(node)
    plan.index_types = index.index_types(node.columns())
    plan.exact = plan.result.kind == "bitmap" and plan.result.remain and is_exact(node, index.schema, index.readers)


def settle_status(plan: FilePlan) -> None:
    """``plan``'s status and reason from its index answer (SKIP: ``skipped``; a bitmap:
    ``bitmap``, the rows it selects counted)."""
    if plan.status == "remain" and not plan.result.remain:
        plan.status, plan.reason = "skipped", "index"
        plan.rows_selected = 0
    elif plan.result.kind == "bitmap":
        plan.status, plan.reason = "bitmap", "bitmap"
        plan.rows_selected = len(plan.result.bitmap)


def option_index_types(entry: FileEntry, columns: frozenset[str]) -> list[str]:
    """The index types a file's index options put on ``columns`` (its index not opened)."""
    found = set()
    for key, value in entry.index.options.items():
        parts = key.split(".")
        if len(parts) == 3 and parts[0] == "file-index" and parts[2] == "columns":
            if columns & {c.strip() for c in value.split(",")}:
                found.add(parts[1])
    return sorted(found)


@dataclass(frozen=True)
class IndexedMember:
    """A file the lake index rules out: its manifest entry (no index of its own opened)."""

    path: str
    entry: FileEntry
    index: None = None


class IndexedFiles:
    """Files the lake index rules out, as :meth:`Planner.select` lists a structure's
    members: where they are in the snapshot's files (``positions``), their paths, and
    their identities as indexed (what :meth:`~arrowidx.lake.files.LakeFiles.identity_of`
    gives for the data file the entry describes)."""

    def __init__(self, entries: list[FileEntry], positions: np.ndarray):
        self._entries: list[FileEntry] | Callable[[], list[FileEntry]] = entries
        self.positions = positions
        self.rows: np.ndarray | None = None  # their rows in the manifest's file table (_table)
        self._table: Any = None
        self._paths: list[str] | Callable[[], list[str]] = [e.path for e in entries]

    @classmethod
    def of_rows(cls, table: Any, rows: np.ndarray, positions: np.ndarray) -> IndexedFiles:
        """The files at ``rows`` of a manifest's file table (:class:`.filetable.FileTable`),
        at ``positions`` of the snapshot's files: nothing is made per file until asked
        (paths; entries only where plans are wanted, :attr:`members`)."""
        out = cls([], positions)
        out.rows, out._table = rows, table
        out._entries = lambda: [table.entry_at(r) for r in rows.tolist()]
        out._paths = lambda: [table.paths[r] for r in rows.tolist()]
        return out

    @property
    def paths(self) -> list[str]:
        if callable(self._paths):
            self._paths = self._paths()
        return self._paths

    def row_counts(self) -> np.ndarray:
        """The rows of each file as indexed (from the file table's column)."""
        return self._table.column("rows")[self.rows]

    @property
    def identities(self) -> list[tuple]:
        if self.rows is not None:
            return self._table.identities(self.rows)
        return [(e.path, e.size, e.mtime_ns, e.stamp) for e in self.entries]

    @property
    def entries(self) -> list[FileEntry]:
        if callable(self._entries):
            self._entries = self._entries()
        return self._entries

    @property
    def members(self) -> list[IndexedMember]:
        return [IndexedMember(e.path, e) for e in self.entries]  # (made only where plans are wanted)


@dataclass
class Route:
    """How a read goes (:meth:`Planner.route`): ``handover`` (the files to hand to
    pyarrow.dataset as they are: no index can prune and nothing is deleted), or ``plans`` to
    read with late materialisation, in one pass or not."""

    plans: list[FilePlan]
    one_pass: bool
    handover: list[str] | None = None


@dataclass
class Planned:
    """What :meth:`Planner.plan_with` found: the plans, and the files a lake-level structure
    ruled out without a plan (only their number and rows, when no report is wanted)."""

    plans: list[FilePlan]
    ruled_files: int = 0
    ruled_rows: int = 0


class Policy:
    """Where an engine decides which files are worth asking their index (the default: all).
    :meth:`Planner.plan_with` calls, in file order, :meth:`ask` before each file and
    :meth:`after` with its plan, or :meth:`ruled_out` for a file a lake-level structure
    ruled out."""

    def ask(self, lake: LakeFiles, rel: str) -> str | None:
        """None to ask the file's index; else why not (the file is then planned whole)."""
        return None

    def after(self, plan: FilePlan, lake: LakeFiles) -> None:
        """What the file's plan says of the next files."""

    def ruled_out(self, rel: str) -> None:
        """The file was ruled out without asking its index."""


class Planner:
    """Plans reads of one lake snapshot (:class:`~arrowidx.lake.files.LakeFiles`).

    ``on_corrupt``: ``"raise"`` raises the ``CorruptIndexError`` of a damaged index;
    ``"fallback"`` plans that file whole instead.
    """

    def __init__(self, lake: LakeFiles, *, on_corrupt: str = "raise"):
        if on_corrupt not in ("raise", "fallback"):
            raise ValueError("on_corrupt must be 'raise' or 'fallback'")
        self.lake = lake
        self.on_corrupt = on_corrupt
        self._directories: dict[tuple, tuple[int, KeyDirectory | None]] = {}
        self._index_schemas: dict[str, pa.Schema] = {}

    def _within(self, files: list[str]) -> Planner:
        """A planner of the same snapshot restricted to ``files`` (the ones its partitions
        keep), sharing what is known of the files (key directories are its own)."""
        if files is self.lake.files:
            return self
        return Planner(self.lake.restricted(files), on_corrupt=self.on_corrupt)

    def columns(self, expr) -> frozenset[str]:
        return frozenset(self.lake.columns_of(expr)) if expr is not None else frozenset()

    def check(self, expr) -> None:
        """Raise what pyarrow raises for ``expr`` on this schema, whether or not an index
        decides every file."""
        if self.lake.files and isinstance(expr, pc.Expression):
            check_expression(expr, self.lake.schema, rows=self.lake.may_hold_rows(), where=self.lake.root)

    def indexes_cannot_help(self, expr) -> bool:
        """True when no index covers a column of ``expr`` and nothing is deleted."""
        if self.lake.has_deletions():
            return False
        return expr is None or not (self.lake.columns_of(expr) & self.lake.indexed_columns())

    # -- one file --------------------------------------------------------------------------------
    def plan_file(self, rel: str, expr, bound: dict | None = None, *, statistics: bool | pc.Expression = True) -> FilePlan:
        """Ask one file's index about ``expr``, then Parquet's own pruning (row-group
        statistics, partition expression): which row groups to read.

        ``statistics``: True prunes with ``expr`` itself, an Expression prunes with that one
        (it must select, under pyarrow's semantics, every row the read will return: an
        adapter whose ``expr`` is a superset only under the indexes' semantics passes its
        exact filter here), False not at all.

        ``bound`` caches ``expr`` bound per index schema across the files of one plan, so
        the Expression is parsed once per query rather than once per file. ``expr`` may
        also be an already bound predicate node (then only the indexes prune).
        """
        return self.finish(self.decide(rel, expr, bound), expr, statistics)

    def decide(self, rel: str, expr, bound: dict | None = None) -> FilePlan:
        """What the index says of one file (no footer, deletion vector or statistics yet)."""
        lake = self.lake
        entry = lake.manifest.files.get(rel)
        plan = FilePlan(rel, entry.rows if entry else 0, "remain")
        if entry is None:
            plan.status, plan.note = "no index", "not in the manifest"
        elif not lake.fresh(entry):
            plan.status, plan.note = "stale", "changed since indexed"
        elif entry.index is None:
            plan.status, plan.note = "no index", ""
        elif expr is not None:
            try:
                index = lake.file_index(entry)
                if index is None:
                    plan.status, plan.note = "no index", "index file rewritten"
                else:
                    bound = {} if bound is None else bound
                    node = bound.get(entry.index.schema)
                    if node is None:
                        node = bound[entry.index.schema] = bind(expr, index.schema)
                    decide_with_index(plan, index, node)
            except ArrowIdxError:
                if self.on_corrupt == "raise":
                    raise
                plan.status, plan.note = "fallback", "corrupt index ignored"
        settle_status(plan)
        return plan

    def finish(self, plan: FilePlan, expr, statistics: bool | pc.Expression = True) -> FilePlan:
        """The rest of :meth:`plan_file` for a file the index kept: deleted rows, row groups
        (those the bitmap holds rows in, then those statistics keep)."""
        if plan.status == "skipped":
            return plan
        lake, rel = self.lake, plan.path
        entry = lake.manifest.files.get(rel)
        dv = lake.deletion_vector(rel) if entry is not None and entry.deletion is not None else None
        plan.deleted = dv.cardinality if dv is not None else 0
        if entry is None or plan.status == "stale":
            plan.rows = lake.row_count(rel)
        offsets = plan.row_group_offsets = lake.row_group_offsets(rel)
        plan.row_groups_total, nonempty = lake.row_groups(rel)
        if plan.result.kind == "bitmap":
            plan.row_groups = bitmap_groups(plan.result.bitmap, offsets)
            if not plan.row_groups:
                plan.status, plan.reason = "skipped", "index"
                return plan
        else:
            plan.row_groups = list(nonempty)
        by = statistics if isinstance(statistics, pc.Expression) else (expr if statistics is True else None)
        self.prune_with_statistics(plan, by)
        return plan

    def prune_with_statistics(self, plan: FilePlan, expr) -> None:
        """Drop from ``plan`` the row groups Parquet statistics and the partition rule out for ``expr``."""
        if not isinstance(expr, pc.Expression) or not plan.row_groups:
            return
        before = len(plan.row_groups)
        plan.row_groups = self.lake.statistics_groups(plan.path, expr, plan.row_groups)
        plan.pruned_by_statistics += before - len(plan.row_groups)
        if not plan.row_groups:
            plan.status, plan.note, plan.reason = "pruned", "row-group statistics / partition", "stats"

    # -- every file ------------------------------------------------------------------------------
    def plan(self, expr, *, statistics: bool | pc.Expression = True) -> list[FilePlan]:
        """One :class:`FilePlan` per data file, in read order.

        What the indexes need (the bytes of the filter's columns) is read on the I/O pool
        first, then every file's index answers; then the footers and deletion vectors of the
        files they keep are read, in parallel too. Files a lake-level structure rules out
        (:meth:`select`) are skipped without asking their indexes.
        """
        expr = user_filter(expr, lambda: self.lake.schema).pushdown if isinstance(expr, (str, Filter)) else expr
        self.check(expr)
        lake = self.lake
        kept = lake.partition_candidates(expr)  # Hive folders ruled out before any file is opened
        if kept is not lake.files:
            return self._with_partitions_pruned(self._within(kept).plan(expr, statistics=statistics))
        lake.forget_file_infos()
        lake.prepare(lake.files, self.columns(expr))
        bound: dict = {}
        ruled = self.ruled_out(expr, bound)
        decided = [ruled.get(rel) or self.decide(rel, expr, bound) for rel in lake.files]
        lake.prepare_kept([p.path for p in decided if p.status != "skipped"])
        return [self.finish(p, expr, statistics) for p in decided]

    def _with_partitions_pruned(self, plans: list[FilePlan]) -> list[FilePlan]:
        """``plans`` (of the files the partitions keep) with a "pruned" plan for each file
        its partition ruled out, in file order."""
        by_path = {p.path: p for p in plans}
        out = []
        for rel in self.lake.files:
            plan = by_path.get(rel)
            if plan is None:
                entry = self.lake.manifest.files.get(rel)
                rows = entry.rows if entry is not None else 0
                plan = FilePlan(rel, rows, "pruned", note="partition", reason="partition",
                                row_group_offsets=np.array([0, rows]), why="ruled out by its partition folder")  # fmt: skip
            out.append(plan)
        return out

    def plan_with(self, expr, policy: Policy | None = None, *, every_file: bool = True) -> Planned:
        """The plans of every file (statistics not applied), asking each file's index only
        where ``policy`` says so, in file order (one file after the other: a policy decides
        from the plans before). ``every_file=False``: files a lake-level structure rules out
        get no plan, only their number and rows are counted."""
        lake = self.lake
        policy = policy or Policy()
        lake.forget_file_infos()  # one stat of every file per execution
        bound: dict = {}
        ruled = self.ruled_out(expr, bound) if every_file else {}
        unlisted = {} if every_file else self.ruled_out_rows(expr, bound)
        # the indexes of the files the lake-level structures keep (all files without them)
        out = ruled or unlisted
        lake.prepare([rel for rel in lake.files if rel not in out] if out else lake.files, self.columns(expr))
        plans = []
        for rel in lake.files:
            if rel in unlisted:
                policy.ruled_out(rel)
                continue
            plan = ruled.get(rel)
            if plan is not None:
                policy.ruled_out(rel)
            else:
                why = policy.ask(lake, rel)
                plan = self.plan_file(rel, expr if why is None else None, bound, statistics=False)
                if why is not None:
                    plan.note = why
                policy.after(plan, lake)
            plans.append(plan)
        return Planned(plans, len(unlisted), sum(unlisted.values()))

    def route(self, expr) -> Route:
        """How to read ``expr``: the files to hand to pyarrow as they are (the indexes cannot
        prune: no index on a filter column, or none prunes anything, and nothing is deleted),
        or the planned files to read with late materialisation (statistics applied; files a
        key directory ruled out left out)."""
        lake = self.lake
        if not lake.files:
            return Route([], one_pass=True)
        check_expression(expr, lake.schema, rows=lake.may_hold_rows(), where=lake.root)
        kept = lake.partition_candidates(expr)  # Hive folders ruled out before any file is opened
        if kept is not lake.files:
            return self._within(kept).route(expr)
        lake.forget_file_infos()
        if self.indexes_cannot_help(expr):
            return Route([], one_pass=True, handover=lake.files)
        bound: dict = {}
        ruled = self._ruled(expr, bound)
        if ruled is not None:
            kept = [lake.files[i] for i in np.flatnonzero(~ruled).tolist()]
            if len(kept) <= NEEDLE_MAX_FILES:
                return self._needle_route(expr, bound, kept)
        plans, ruled_files = self._plan_kept(expr, bound, ruled)
        if not ruled_files and not index_pruned(plans) and not any(p.deleted for p in plans):
            return Route([], one_pass=True, handover=lake.files)
        for p in plans:
            self.prune_with_statistics(p, expr)
        return Route(plans, one_pass=not ruled_files and not index_pruned(plans))

    def _ruled(self, expr, bound: dict) -> np.ndarray | None:
        """Which of the snapshot's files the structures over all files rule out for ``expr``
        (:meth:`select`: each only while it is still the file they were built from, checked
        for every file at once against this query's listing or stats), as a mask over
        :attr:`~arrowidx.lake.files.LakeFiles.files`; None when they rule none out."""
        lake = self.lake
        found = self.select(expr, bound)[0]
        if not found:
            return None
        ruled = np.zeros(len(lake.files), bool)
        where: dict[str, int] | None = None
        for structure, skipped in found:
            positions = getattr(structure, "positions", None)
            if positions is not None:
                ruled[positions[skipped]] = True
                continue
            if where is None:
                where = dict(zip(lake.files, range(len(lake.files))))
            at = [where[rel] for rel in compress(structure.paths, skipped) if rel in where]
            ruled[np.array(at, np.int64)] = True
        return ruled if ruled.any() else None

    def _plan_kept(self, expr, bound: dict, ruled: np.ndarray | None) -> tuple[list[FilePlan], int]:
        """:meth:`plan` (without statistics) for the files the structures over all files do
        not rule out (``ruled``: a mask over the files, or None), and how many they ruled
        out: what a read needs, without a plan object per skipped file."""
        lake = self.lake
        kept = lake.files if ruled is None else [lake.files[i] for i in np.flatnonzero(~ruled).tolist()]
        lake.prepare(kept, self.columns(expr))
        decided = [self.decide(rel, expr, bound) for rel in kept]
        lake.prepare_kept([p.path for p in decided if p.status != "skipped"])
        return [self.finish(p, expr, statistics=False) for p in decided], 0 if ruled is None else int(ruled.sum())

    def _needle_route(self, expr, bound: dict, kept: list[str]) -> Route:
        """The route of a needle the structures over all files narrow to a few files
        (``kept``: the files not ruled out, and those ruled out that are no longer the file
        indexed): only those are planned, with statistics."""
        lake = self.lake
        lake.prepare(kept, self.columns(expr))
        decided = [self.decide(rel, expr, bound) for rel in kept]
        lake.prepare_kept([p.path for p in decided if p.status != "skipped"])
        plans = [self.finish(p, expr, statistics=False) for p in decided]
        for p in plans:
            self.prune_with_statistics(p, expr)
        return Route(plans, one_pass=False)

    # -- the seam: structures over all files -----------------------------------------------------
    def select(self, expr, bound: dict) -> tuple[list[tuple[KeyDirectory, np.ndarray]], frozenset[str]]:
        """Which files structures over all of the snapshot's files rule out for ``expr``
        before any file's own index is asked: per structure that applies, a mask over its
        members, and the columns of ``expr``. The one place such a structure answers (the
        lake index, :meth:`lake_index_rules_out`; without one, the key directories of
        :mod:`.directory`): a file is ruled out only while it is the file the structure was
        built from (its identity this query: the lake index checks every file's at once,
        :meth:`~arrowidx.lake.files.LakeFiles.still_indexed`). ``bound`` is the plan's cache
        of bound filters."""
        lake = self.lake
        out: list = []
        if expr is not None and lake.manifest.lake_index is not None and lake.files and lake.store.stamps:
            found = self.lake_index_rules_out(expr)
            if found is not None:
                out.append(found)
        if expr is None or len(lake.files) < directory.DIRECTORY_MIN_FILES or lake.manifest.lake_index is not None:
            # (a lake index answers what key directories would, without opening every file's index)
            return out, frozenset(lake.columns_of(expr)) if out else frozenset()
        first = lake.manifest.files.get(lake.files[0])
        if first is None or first.index is None:
            return [], frozenset()
        schema_key = first.index.schema
        schema = self._index_schemas.get(schema_key)
        try:
            if schema is None:
                schema = self._index_schemas[schema_key] = first.index.arrow_schema()
            node = bound.get(schema_key)
            if node is None:
                node = bound[schema_key] = bind(expr, schema)
            found = needles(node, schema)
        except ArrowIdxError:
            return out, frozenset(lake.columns_of(expr)) if out else frozenset()  # planning each file meets (and reports) it
        current = lake.known_identities()
        for column, keys in found:
            structure = self.key_directory(column, schema_key)
            if structure is None:
                continue
            skipped = ~structure.holding(keys)
            # a file is ruled out only while it is the one listed (the same manifest version)
            now = list(map(current.get, structure.paths))
            if now != structure.identities:  # some changed: those are planned one by one
                skipped &= np.fromiter(map(operator.eq, now, structure.identities), bool, len(now))
            if skipped.any():
                out.append((structure, skipped))
        return out, frozenset(node.columns()) | frozenset(lake.columns_of(expr)) if out else frozenset()

    def lake_index_rules_out(self, expr) -> tuple[IndexedFiles, np.ndarray] | None:
        """The files the manifest's lake index (:mod:`.lakeindex`) rules out for ``expr``
        (its equality / IN conjuncts on keyed columns; None when it rules out none), with a
        mask of those that are still the file the index keyed: the data file the manifest
        entry describes (size, time and the store's change stamp as indexed, checked for
        every file at once). Others are planned one by one."""
        lake = self.lake
        entries = lake.manifest.files
        if hasattr(entries, "rows_of"):  # a file table: every file at once, no entry materialised
            rows = lake.manifest_rows()
            valid = rows >= 0
            valid[valid] = (entries.fids[rows[valid]] >= 0) & entries.valid("index_schema")[rows[valid]] & entries.valid("stamp")[rows[valid]]
            positions = np.flatnonzero(valid)
            if not len(positions):
                return None
            keep = lake.manifest.lake_index.may_hold(expr, lake.schema, entries.fids[rows[positions]], lake.store, lake.root)
            if keep is None or keep.all():
                return None
            positions = positions[~keep]
            ruled = IndexedFiles.of_rows(entries, rows[positions], positions)
            return ruled, lake.still_indexed(positions, entries, ruled.rows)
        at = [i for i, e in enumerate(map(entries.get, lake.files))
              if e is not None and e.fid is not None and e.index is not None and e.stamp is not None]  # fmt: skip
        if not at:
            return None
        candidates = [entries[lake.files[i]] for i in at]
        fids = np.fromiter((e.fid for e in candidates), np.int64, len(candidates))
        keep = lake.manifest.lake_index.may_hold(expr, lake.schema, fids, lake.store, lake.root)
        if keep is None or keep.all():
            return None
        out = np.flatnonzero(~keep)
        ruled = IndexedFiles([candidates[i] for i in out.tolist()], np.array(at, np.int64)[out])
        now = list(map(lake.identity, ruled.paths))
        return ruled, np.fromiter(map(operator.eq, now, ruled.identities), bool, len(now))

    def ruled_out(self, expr, bound: dict) -> dict[str, FilePlan]:
        """The plans of the files :meth:`select` rules out for ``expr``, skipped as
        :meth:`plan_file` skips a file whose index answers SKIP (empty when no structure
        applies: every file is then planned one by one)."""
        found, columns = self.select(expr, bound)
        plans: dict[str, FilePlan] = {}
        for structure, skipped in found:
            for m in compress(structure.members, skipped):
                if m.path not in plans:
                    if m.index is not None:
                        plans[m.path] = FilePlan(m.path, m.entry.rows, "skipped", SKIP, m.index.index_types(columns),
                                                 rows_selected=0, reason="index")  # fmt: skip
                    else:  # the lake index: the index types the file's options put on the columns
                        plans[m.path] = FilePlan(m.path, m.entry.rows, "skipped", SKIP, option_index_types(m.entry, columns),
                                                 rows_selected=0, reason="index", note=LAKE_INDEX)  # fmt: skip
        return plans

    def ruled_out_rows(self, expr, bound: dict) -> dict[str, int]:
        """:meth:`ruled_out` without a plan per file: the files ruled out, and their rows."""
        ruled: dict[str, int] = {}
        for structure, skipped in self.select(expr, bound)[0]:
            if getattr(structure, "rows", None) is not None:  # a file table: its columns, no entry made
                keep = skipped.tolist()
                ruled.update(zip(compress(structure.paths, keep), structure.row_counts()[skipped].tolist()))
            else:
                ruled.update((m.path, m.entry.rows) for m in compress(structure.members, skipped))
        return ruled

    def key_directory(self, column: str, schema_key: str) -> KeyDirectory | None:
        """The key directory of ``column`` over the fresh files indexed under ``schema_key``
        (built once per manifest version; None when it would not pay)."""
        lake = self.lake
        cached = self._directories.get((column, schema_key))
        if cached is not None and cached[0] == lake.manifest.version:
            return cached[1]
        lake.prepare(lake.files, frozenset([column]))  # every file's index of the column, in parallel
        candidates = []
        for rel in lake.files:
            entry = lake.manifest.files.get(rel)
            if entry is None or entry.index is None or entry.index.schema != schema_key:
                continue
            try:
                index = lake.file_index(entry) if lake.fresh(entry) else None
                reader = next((r for r in index.readers(column) if r.lists_keys), None) if index is not None else None
            except ArrowIdxError:
                continue  # planned one by one, where the error is met
            if reader is not None:
                candidates.append((Member(rel, lake.identity(rel), entry, index), reader))
        found = build_directory(column, candidates) if len(candidates) >= directory.DIRECTORY_MIN_FILES else None
        self._directories[(column, schema_key)] = (lake.manifest.version, found)
        return found

    # -- explain ---------------------------------------------------------------------------------
    def explain(self, filter=None) -> Explain:
        """What the indexes do for ``filter``: per file, skipped by which index, rows and row groups kept."""
        lake = self.lake
        where = user_filter(filter, lambda: lake.schema)
        filter = where.pushdown
        plans = self.plan(filter)
        for plan in plans:  # name the index types that, alone, rule a skipped file out
            entry = lake.manifest.files.get(plan.path)
            index = lake.file_index(entry) if entry is not None and plan.status in ("skipped", "bitmap", "remain", "pruned") else None
            if plan.skipped and plan.index_types and index is not None:
                plan.index_types = index.deciding_index_types(filter) or plan.index_types
                if plan.note == LAKE_INDEX and not index.deciding_index_types(filter):
                    plan.index_types = [LAKE_INDEX]  # (its own index keeps it: a bloom filter's false positive)
            if plan.skipped:  # skipped files still report their deleted rows
                dv = lake.deletion_vector(plan.path)
                plan.deleted = dv.cardinality if dv is not None else 0
            plan.why = explain_why(plan, index, filter, lake.columns_of(filter) if filter is not None else set())
        return Explain(where.describe(expression_text(filter)), plans)
