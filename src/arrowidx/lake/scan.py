"""The scan core: read an indexed Parquet dataset on pyarrow's own pruning, with the indexes
on top, and late materialisation. Every adapter (pyarrow, Polars, Spark) reads through it.

Plan, per data file (in path order, like ``pyarrow.dataset``):

1. A file whose content changed since it was indexed is *stale*: its index is ignored and
   the file is read as ``pyarrow.dataset`` reads it (if rows were deleted from it,
   ``StaleDeletionError``, unless ``on_stale_deletions="read-full"``).
2. Otherwise its container answers the filter: SKIP means the file is never opened; a
   bitmap keeps only the row groups holding selected rows.
3. The row groups left are intersected with those that survive Parquet row-group
   statistics and the file's partition expression, evaluated by pyarrow itself
   (``ParquetFileFragment.subset(filter=..., schema=...)``).

Read:

* When the indexes prune nothing and nothing is deleted, the whole scan is handed to
  ``pyarrow.dataset`` (one scanner over the planned fragments), so it costs what pyarrow
  costs.
* Otherwise each surviving file is read with *late materialisation*: the predicate columns
  of the surviving row groups first; the exact row mask (index bitmap AND not deleted AND
  the full filter, :func:`expression_mask`); then the other projected columns only of the
  row groups that still hold rows, keeping only those rows (few rows of large row groups of
  local files taken by Polars' reader, :func:`arrowidx.lake.read.take_with_polars`).

Reads go through ``pyarrow.dataset.Scanner.from_fragment`` with the dataset schema, so
partition columns (Hive layouts), columns missing from a file (NULL) and type
unification behave exactly as in ``pyarrow.dataset``. The result equals
``pyarrow.dataset.dataset(...).to_table(filter=, columns=)`` minus deleted rows.
"""

from __future__ import annotations

import operator
import posixpath
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .. import facts
from .._lazy import lazy_module
from ..deletion import DeletionVector
from ..errors import ArrowIdxError, CorruptIndexError
from ..file_index import FileIndex
from ..filters import Filter, user_columns, user_filter
from ..index.container import SparseContainer
from ..predicate import bind, check_expression, expression_text, is_exact, needles
from ..result import REMAIN, SKIP, IndexResult
from ..statistics import statistics_filter
from ..storage import ObjectInfo, Store, as_store
from .directory import DIRECTORY_MIN_FILES, KeyDirectory, Member, build_directory
from .footer import NO_DATA_FILES, Footer, content_xxh64, read_footer, stray_file_hint
from .layout import (
    META_DIR,
    FileEntry,
    Manifest,
    _listed,
    check_latest,
    check_stale_option,
    deletion_record_length,
    deletion_vector_of,
    ensure_inside,
    entry_is_fresh,
    file_infos,
    join,
    latest_version,
    load_index_bytes,
    metadata_listing,
    read_manifest,
    resolve,
)
from .partitions import (
    hive_partitioning,
    partition_expressions,
    partition_view,
    with_partition_fields,
    with_pruned,
)
from .read import FileRead, FileReader, bitmap_groups, expression_mask, statistics_groups  # noqa: F401 (expression_mask re-exported)
from .tombstones import with_returned_files

ds = lazy_module("pyarrow.dataset")  # it imports pandas: only a pyarrow read pays that

# From this many files a query's stats (one per file: is it still the file indexed?) are
# split over two threads: 1,000 stats take 4.0 ms in one, 2.4 ms in two (local disk).
_PARALLEL_STAT_FILES = 256
# A needle the key directories narrow to at most this many files is read while the helper
# thread stats the files they ruled out (IndexedDataset._plan_needle): the stats, ~4 ms for
# 1,000 files, then cost no time of their own.
NEEDLE_MAX_FILES = 16
_PARQUET: list = []  # the format of datasets opened by path: one object, so fragments are shared


# Planning reads that average under this many bytes are done in the calling thread on a
# local disk (bench/bench_cold.py: 1,000 index windows of ~8 KB, a first needle in 250
# against 430 ms on the pool; 20 windows of ~1 MB, 120 against 85 ms: those stay on the pool).
QUICK_READ_BYTES = 64 << 10


def _window_bytes(entry: FileEntry, columns: frozenset[str]) -> int:
    """The bytes of ``columns``' index windows in ``entry``'s index file (the whole index
    when its layout is not recorded; 0 when it is embedded in the manifest)."""
    index = entry.index
    if index is None or index.embedded is not None:
        return 0
    if not index.layout:
        return index.size
    return sum(w[1] for c in columns for w in index.layout.get(c, {}).values())


def _parquet_format():
    if not _PARQUET:
        _PARQUET.append(ds.ParquetFileFormat())
    return _PARQUET[0]


def _stat_pool() -> ThreadPoolExecutor:
    """The process's I/O pool (:func:`arrowidx.facts.executor`)."""
    return facts.executor()


def load_manifest_shared(store: Store, root: str) -> Manifest:
    """The current manifest of ``root``: its version listed now, its content parsed once
    per process (a manifest version is created once and never rewritten). Readers only:
    writers load their own copy (:func:`arrowidx.lake.layout.load_manifest`) to change.
    A version ``LATEST`` names that is missing raises
    :class:`~arrowidx.errors.MissingManifestError` (:func:`~arrowidx.lake.layout.current_manifest`)."""
    infos, latest = metadata_listing(store, root)
    version = max(infos) if infos else 0
    pending = None
    if latest is not None:  # (read beside the manifest where a read is a round trip)
        if store.quick_reads:
            check_latest(store, root, version, latest)
        else:
            pending = facts.executor().submit(check_latest, store, root, version, latest)
    try:
        if not version:
            return Manifest()
        info = infos[version]
        key = ("manifest", store.key, root, version, info.size, info.mtime_ns, info.stamp)
        return facts.MANIFESTS.get(key, lambda: _sized(read_manifest(store, root, version)))
    finally:
        if pending is not None:
            pending.result()  # a missing newer version raises here, whatever was read


def _sized(manifest: Manifest) -> tuple[Manifest, int]:
    return manifest, 512 + 400 * len(manifest.files)


@dataclass
class FilePlan:
    """What the indexes and Parquet's own pruning decided for one data file."""

    path: str  # relative to the dataset root
    rows: int
    status: str  # skipped | bitmap | remain | stale | no index | fallback | pruned
    result: IndexResult = field(default_factory=lambda: REMAIN)
    index_types: list[str] = field(default_factory=list)
    row_groups: list[int] = field(default_factory=list)
    row_groups_total: int = 0
    rows_selected: int | None = None
    deleted: int = 0
    note: str = ""
    row_group_offsets: np.ndarray | None = None
    exact: bool = False  # the bitmap is exactly the matching rows: no need to filter again
    pruned_by_statistics: int = 0  # row groups the index kept that statistics/partitions ruled out
    why: str = ""  # explain(): which index decided, and why a kept file was kept

    @property
    def skipped(self) -> bool:
        """The indexes ruled the whole file out."""
        return self.status == "skipped"

    @property
    def read(self) -> bool:
        """Some row group of the file is to be read."""
        return bool(self.row_groups)


@dataclass
class Explain:
    """Per-file decisions for one filter, and the totals. ``print()`` it for a table."""

    filter: str
    files: list[FilePlan]

    @property
    def files_skipped(self) -> int:
        """Files the indexes ruled out."""
        return sum(p.skipped for p in self.files)

    @property
    def files_pruned(self) -> int:
        """Files the indexes kept that row-group statistics or partitions ruled out."""
        return sum(p.status == "pruned" for p in self.files)

    @property
    def rows_total(self) -> int:
        return sum(p.rows for p in self.files)

    @property
    def rows_read(self) -> int:
        """Rows in the row groups that will be read."""
        total = 0
        for p in self.files:
            if p.row_group_offsets is None:
                total += 0 if p.skipped else p.rows
            else:
                offs = p.row_group_offsets
                total += int(sum(offs[g + 1] - offs[g] for g in p.row_groups))
        return total

    @property
    def rows_deleted(self) -> int:
        return sum(p.deleted for p in self.files)

    def to_dict(self) -> dict:
        return {
            "filter": self.filter,
            "files": [
                {
                    "path": p.path, "status": p.status, "index_types": p.index_types, "rows": p.rows,
                    "rows_selected": p.rows_selected, "row_groups_read": len(p.row_groups),
                    "row_groups_total": p.row_groups_total, "row_groups_pruned_by_statistics": p.pruned_by_statistics,
                    "deleted": p.deleted, "note": p.note, "why": p.why,
                }  # fmt: skip
                for p in self.files
            ],
            "files_total": len(self.files),
            "files_skipped": self.files_skipped,
            "files_pruned": self.files_pruned,
            "rows_total": self.rows_total,
            "rows_read": self.rows_read,
            "rows_deleted": self.rows_deleted,
        }

    def __str__(self) -> str:
        lines = [f"filter: {self.filter}"]
        lines.append(f"{'file':32} {'decision':8} {'rows':>10} {'selected':>10} {'row groups':>10} {'deleted':>8}  why")
        shown, similar = None, 0
        for i, p in enumerate(self.files):
            key = (p.status, p.why)
            if key == shown and i < len(self.files) - 1:  # fold runs of files decided alike
                similar += 1
                continue
            if similar:
                lines.append(f"  ... {similar} more file(s) decided the same way")
                similar = 0
            shown = key
            selected = "-" if p.rows_selected is None else f"{p.rows_selected:,}"
            groups = "-" if p.skipped else f"{len(p.row_groups)}/{p.row_groups_total}"
            why = p.why or ",".join(p.index_types) or p.note
            lines.append(f"{p.path[-32:]:32} {p.status:8} {p.rows:>10,} {selected:>10} {groups:>10} {p.deleted:>8,}  {why}")
        lines.append(
            f"total: {len(self.files)} file(s), {self.files_skipped} skipped by the indexes, {self.files_pruned} by"
            f" statistics/partitions; rows read {self.rows_read:,} of {self.rows_total:,};"
            f" {self.rows_deleted:,} deleted row(s) in these files"
        )
        return "\n".join(lines)


def describe_answer(index_type: str, answer: IndexResult, expr) -> str:
    """One index type's answer in words, e.g. ``bloom filter: value may be present``."""
    name = index_type.replace("-", " ")
    if not answer.remain:
        return f"{name}: no row can match"
    if answer.kind == "bitmap":
        return f"{name}: {len(answer.bitmap):,} row(s) may match"
    if index_type == "bloom-filter":
        text = expression_text(expr)
        return f"{name}: value may be present" if ("==" in text or "is_in" in text) else f"{name}: answers only = and IN"
    return f"{name}: cannot answer this filter"


def _why(plan: FilePlan, index: FileIndex | None, expr, schema: pa.Schema) -> str:
    """Why one file was skipped or kept, in words (which index answered what)."""
    if plan.status in ("stale", "no index", "fallback"):
        return f"{plan.status}: {plan.note}" if plan.note else "no index: read in full"
    if expr is None:
        return "no filter"
    if index is None:
        return "no index"
    try:
        answers = index.answers_by_type(expr)
    except ArrowIdxError:
        return ",".join(plan.index_types)
    parts = [describe_answer(t, answer, expr) for t, answer in answers.items()]
    if plan.skipped and plan.index_types:
        parts = [f"ruled out by {', '.join(plan.index_types)}"] + [p for p in parts if "no row" not in p]
    unindexed = sorted(_expression_fields(expr, schema) - set(index.columns))
    if unindexed:
        parts.append(f"no index on {', '.join(unindexed)}")
    if plan.pruned_by_statistics:
        parts.append(f"{plan.pruned_by_statistics} row group(s) ruled out by Parquet statistics/partition")
    return "; ".join(parts) or "no index on the filter's columns"


class IndexedDataset:
    """A Parquet dataset read through its arrowidx manifest. Create with :func:`dataset`.

    ``on_corrupt``: ``"raise"`` (default) raises the ``CorruptIndexError`` of a damaged
    index or deletion file; ``"fallback"`` reads that file in full instead (a damaged
    deletion file still raises: ignoring it would return deleted rows).

    ``on_stale_deletions``: ``"raise"`` (default) raises ``StaleDeletionError`` for a data
    file whose content changed after rows were deleted from it; ``"read-full"`` reads it in
    full as it is now (its deleted rows come back).

    ``source``: the ``pyarrow.dataset.FileSystemDataset`` it was opened from, if any; its
    files, schema, format and partitioning are used as they are (so partition columns of a
    Hive layout are columns here too). Without one, the dataset is what
    ``pyarrow.dataset.dataset(root, format="parquet")`` would find.
    """

    def __init__(
        self,
        filesystem: pafs.FileSystem | Store,
        root: str,
        *,
        on_corrupt: str = "raise",
        threads: int = 2,
        source: ds.FileSystemDataset | None = None,
        on_stale_deletions: str = "raise",
        partitioning: Any = "hive",
    ):
        if on_corrupt not in ("raise", "fallback"):
            raise ValueError("on_corrupt must be 'raise' or 'fallback'")
        self.on_stale_deletions = check_stale_option(on_stale_deletions)
        self.store = as_store(filesystem)
        self.fs = self.store.fs
        self.root = root
        self.on_corrupt = on_corrupt
        self.threads = threads
        self.source = source
        self._format = source.format if source is not None else None
        # facts about data files are shared with every reader of the process when the store
        # stamps changes; else they stay this object's (see arrowidx.facts)
        self._token: int | None = None if self.store.stamps else facts.identity_token()
        self._partitions: dict[str, pc.Expression] = {}
        self.partitioning_spec = partitioning  # Hive folders (lake/partitions.py); a source keeps its own
        self.partitioning: ds.Partitioning | None = None
        if source is not None:
            for fragment in source.get_fragments():
                self._partitions[posixpath.relpath(fragment.path, root)] = fragment.partition_expression
        self.manifest: Manifest = load_manifest_shared(self.store, root)
        self._committed = self.manifest  # the version as committed (manifest: as read, see _use_manifest)
        self._lock = threading.Lock()
        self._freshness: dict[tuple, tuple[FileEntry, str, bool]] = {}
        self._infos: dict[str, ObjectInfo | None] = {}
        self._keys: dict[str, tuple] = {}  # file identity per path, from _infos
        self._listed_now = False  # _infos came with the listing just made (the first query needs no stats)
        self._files = self._discover()
        self._schema: pa.Schema | None = source.schema if source is not None else None
        self._offsets: dict[tuple, np.ndarray] = {}
        self._counts: dict[tuple, list[int]] = {}
        self._nonempty: dict[tuple, list[int]] = {}
        self._indexed: tuple[tuple, set[str]] = ((), set())
        self._handover_dataset: tuple[tuple, Any] = ((), None)
        self._dict_format: tuple[ds.ParquetFileFormat, set[str]] | None = None
        self._directories: dict[tuple, tuple[int, KeyDirectory | None]] = {}
        self._index_schemas: dict[str, pa.Schema] = {}
        self._absolute: tuple[list[str] | None, list[str]] = (None, [])  # files, and their full paths
        self._identities: tuple[list[str] | None, list[tuple]] = (None, [])  # files, and their identities this query
        self._prepared: tuple = ()  # (manifest version, identities, columns) when every file was last prepared
        self._manifest_deletes: tuple = (None, False)  # (manifest, whether it lists deleted rows)
        self._fields: tuple = (None, None, set())  # (expr, schema, fields): bind_columns of the last expression
        self._use_manifest(self.manifest)

    def _use_manifest(self, manifest: Manifest) -> None:
        """Read the committed ``manifest`` (the current version, or one a query is pinned
        to): with tombstones, a data file it does not list whose content a tombstone holds
        (moved back, restored) is read with those deletions (:mod:`arrowidx.lake.tombstones`)."""
        self._committed = manifest
        if manifest.tombstones:
            unlisted = {rel: self._info(rel) for rel in self.files if rel not in manifest.files}
            manifest = with_returned_files(manifest, unlisted, self._content_xxh64)
        self.manifest = manifest

    @property
    def format(self) -> ds.ParquetFileFormat:
        """The Parquet format the files are read with (made on first use: pyarrow.dataset is
        imported only by a read through pyarrow)."""
        if self._format is None:
            self._format = _parquet_format()
        return self._format

    # -- files -------------------------------------------------------------------------------
    @property
    def files(self) -> list[str]:
        """Data files (relative paths) in read order, as found when opened (or refreshed).

        Like ``pyarrow.dataset.dataset(root)``: every Parquet file under the root, whether
        the manifest knows it or not (files added after the last build are read in full).
        A dataset opened from a ``pyarrow.dataset.Dataset`` has that dataset's files.
        """
        return self._files

    _only: list[str] | None = None  # set by dataset() for an explicit list of files

    def _discover(self) -> list[str]:
        if self.source is not None:
            return list(self._partitions)
        if self._only is not None:
            return self._partitioned(list(self._only))
        listed = self.store.list(self.root)  # one listing: the files, their sizes and stamps
        prefix = self.root.rstrip("/") + "/"
        rels = [i.path[len(prefix) :] if i.path.startswith(prefix) else posixpath.relpath(i.path, self.root) for i in listed]
        self._infos = dict(zip(rels, listed))
        self._keys, self._identities = {}, (None, [])
        self._listed_now = True
        return self._partitioned(rels)

    def _partitioned(self, files: list[str]) -> list[str]:
        """``files``, noting their Hive partitions (:mod:`arrowidx.lake.partitions`)."""
        partitioning = hive_partitioning(files, self.partitioning_spec)
        if partitioning is not None or self.partitioning is not None:
            self.partitioning = partitioning
            self._partitions = partition_expressions(partitioning, files) if partitioning is not None else {}
        return files

    def refresh(self) -> None:
        """Re-read the committed manifest (when its version changed), the file list and the
        files' sizes and times."""
        committed = self._committed
        if committed.version == 0 or latest_version(self.store, self.root) != committed.version:
            committed = load_manifest_shared(self.store, self.root)
        files = self._discover()
        if self.source is None and files[:1] != self._files[:1]:
            self._schema, self._dict_format = None, None  # inferred from the first file, as pyarrow does
        if files != self._files:  # (the same list object otherwise: what is cached per list stays)
            self._files = files
        if committed is not self._committed or committed.tombstones:
            self._use_manifest(committed)
        if not self._listed_now:
            self._forget_file_infos()

    def _forget_file_infos(self) -> None:
        """Stat the files again at their next use: once per query, so a file changed since
        the last query is seen as changed (its index then no longer applies). The first
        query after the files were listed uses the listing."""
        if self._listed_now:
            self._listed_now = False
            return
        self._infos, self._keys, self._identities = {}, {}, (None, [])

    def restat(self, rels: list[str]) -> None:
        """Stat ``rels`` again now (only those)."""
        self._infos.update(file_infos(self.store, self.root, rels))
        self._identities = (None, [])
        for rel in rels:
            self._keys.pop(rel, None)

    def _info(self, rel: str) -> ObjectInfo | None:
        if rel not in self._infos:
            self._stat_files()
            if rel not in self._infos:
                self._infos.update(file_infos(self.store, self.root, [rel]))
        return self._infos[rel]

    def _stat_files(self) -> None:
        """Stat every file in one call, noting each one's identity (:meth:`_key`)."""
        files = self.files
        if not all(rel in self._infos for rel in files):
            paths = self._absolute_paths()
            if len(paths) < _PARALLEL_STAT_FILES:
                infos = self.store.stat(paths)
            else:  # half on the I/O pool: stats release the GIL, so two run at once
                half = len(paths) // 2
                other = _stat_pool().submit(self.store.stat, paths[half:])
                infos = self.store.stat(paths[:half]) + other.result()
            self._infos.update(zip(files, infos))
        infos = self._infos
        identities = [self._identity(rel, infos[rel]) for rel in files]
        self._keys.update(zip(files, identities))
        self._identities = (files, identities)

    def _identity(self, rel: str, info: ObjectInfo | None) -> tuple:
        """``(rel, size, mtime, stamp)``: what the facts of a data file are kept under (with
        this object's token where the store stamps nothing)."""
        if info is None:
            return (rel, None, None, self._token)
        return (rel, info.size, info.mtime_ns, info.stamp if self._token is None else self._token)

    def _absolute_paths(self) -> list[str]:
        """The full paths of :attr:`files` (built once per file list)."""
        files = self.files
        if self._absolute[0] is not files:
            self._absolute = (files, [join(self.root, rel) for rel in files])
        return self._absolute[1]

    def _fresh(self, entry: FileEntry | None) -> bool:
        """Whether the data file is still the one ``entry`` describes (``entry_is_fresh``:
        by the store's change stamp, else by the content hash), remembered per file
        identity and manifest entry: a scan asks it of every file."""
        if entry is None:
            return False
        key = self._key(entry.path)
        known = self._freshness.get(key)
        if known is not None and known[0] is entry and known[1] == self.on_stale_deletions:
            return known[2]
        fresh = entry_is_fresh(entry, self._info(entry.path), lambda: self._read_footer(entry.path),
                               content=lambda: self._content_xxh64(entry.path), on_stale_deletions=self.on_stale_deletions)  # fmt: skip
        self._freshness[key] = (entry, self.on_stale_deletions, fresh)  # holds the entry: its id stays its own
        return fresh

    def _file_identity(self, rel: str) -> tuple:
        """The data file's identity, ``(rel, size, mtime_ns, stamp)`` as this query's stat
        found it: what is cached of a file is cached under it."""
        return self._key(rel)

    def _key(self, rel: str) -> tuple:
        """The file's identity (path, size, mtime, stamp), under which its footer, index and
        deletion vector are cached."""
        key = self._keys.get(rel)
        if key is None:
            if not self._identities[1] and len(self.files) > 1:
                self._stat_files()  # every file at once
                key = self._keys.get(rel)
            if key is None:
                key = self._keys[rel] = self._identity(rel, self._info(rel))
        return key

    def _fact_key(self, kind: str, rel: str, *more) -> tuple:
        return (kind, self.store.key, join(self.root, rel), *self._key(rel)[1:], *more)

    def _read_footer(self, rel: str) -> Footer:
        """The data file's footer and fingerprint (our own read), once per file identity
        in the process."""
        info = self._info(rel)
        path = join(self.root, rel)

        def make():
            footer = read_footer(self.store, path, info.size if info is not None else None)
            return footer, footer.metadata.serialized_size

        return facts.FOOTERS.get(self._fact_key("footer", rel), make)

    def _content_xxh64(self, rel: str) -> str:
        """The XXH64 of the data file's whole content (what identifies it when its change
        stamp is not the one indexed), read once per file identity in the process."""
        info = self._info(rel)
        if info is None:
            raise FileNotFoundError(join(self.root, rel))
        make = lambda: (content_xxh64(self.store, join(self.root, rel), info.size), 64)  # noqa: E731
        return facts.DERIVED.get(self._fact_key("content", rel), make)

    def _fragment(self, rel: str, *, dictionary: bool = False) -> ds.ParquetFileFragment:
        """pyarrow's fragment of one data file (its partition expression, footer loaded by
        pyarrow), made once per file identity in the process. ``dictionary``: one that reads
        the dataset's dictionary-encoded string columns as dictionaries
        (:meth:`_dictionary_format`)."""
        fmt = self._dictionary_format()[0] if dictionary else self.format
        partition = self._partitions.get(rel)
        key = self._fact_key("fragment", rel, id(fmt), None if partition is None else str(partition))
        info = self._info(rel)

        def make():
            fragment = fmt.make_fragment(
                join(self.root, rel), self.fs, partition_expression=partition if partition is not None else pc.scalar(True),
                file_size=info.size if info is not None else None,
            )  # (the size known: no request to ask it)
            try:
                fragment.ensure_complete_metadata()
            except FileNotFoundError:
                raise
            except (OSError, pa.ArrowException) as e:
                raise ArrowIdxError(f"{join(self.root, rel)}: unreadable Parquet file: {e}{stray_file_hint(rel)}") from None
            return fragment, fragment.metadata.serialized_size + 512

        return facts.FRAGMENTS.get(key, make)

    #: Footers are read by pyarrow through the files' fragments (the one footer read a file
    #: read by pyarrow needs). A reader that reads with another engine (arrowidx.polars) sets
    #: it False: footers are then read by arrowidx alone, and pyarrow.dataset never loaded.
    _footers_from_fragments = True

    def footer(self, rel: str) -> pq.FileMetaData:
        """The data file's parsed footer: ours when it was read for its fingerprint (or
        when :attr:`_footers_from_fragments` is False), else pyarrow's, through the file's
        fragment."""
        held = facts.FOOTERS.peek(self._fact_key("footer", rel))
        if held is not None:
            return held.metadata
        return self._fragment(rel).metadata if self._footers_from_fragments else self._read_footer(rel).metadata

    def _dictionary_format(self) -> tuple[ds.ParquetFileFormat, set[str]]:
        """A format reading the string columns the first file stores dictionary-encoded as
        dictionaries, and those columns. Rows a mask drops are then never decoded to
        strings: only the kept rows are (a cast after the mask)."""
        if self._dict_format is None:
            names: set[str] = set()
            if self.files:
                footer = self.footer(self.files[0])
                arrow = footer.schema.to_arrow_schema()
                if footer.num_row_groups and footer.num_columns == len(arrow):
                    group = footer.row_group(0)
                    names = {
                        f.name for i, f in enumerate(arrow)
                        if pa.types.is_string(f.type) and group.column(i).has_dictionary_page
                        and self.schema.get_field_index(f.name) >= 0 and pa.types.is_string(self.schema.field(f.name).type)
                    }  # fmt: skip
            self._dict_format = (_dictionary_format(self.format, frozenset(names)) if names else self.format, names)
        return self._dict_format

    def row_count(self, rel: str) -> int:
        return self.footer(rel).num_rows

    def _prepare(self, files: list[str], expr=None, *, columns: frozenset[str] | None = None) -> None:
        """Read, on the process's I/O pool (in this thread where reads are quick: a local
        disk), what planning ``files`` for ``expr`` needs that
        the process does not hold yet: the content hash (or footer) of files whose freshness
        needs it (their change stamp is not the one indexed), and the bytes of the
        indexes of ``expr``'s columns (one ranged read per file, when the manifest records
        where they lie). Nothing else: footers and deletion vectors of the files the
        indexes keep are read by :meth:`_prepare_kept`."""
        if not files:
            return
        self._key(files[0])  # stats every file at once (_stat_files): their identities are then known
        if columns is None:
            columns = frozenset(self._bind_columns(expr)) if expr is not None else frozenset()
        stamp = None
        if files is self.files and self._identities[0] is files:
            stamp = (self.manifest.version, self._identities[1], columns)
            if stamp == self._prepared:
                return  # the same files, unchanged, with the same columns, as when last prepared
        entries = self.manifest.files
        todo = []
        for rel in files:
            entry = entries.get(rel)
            if entry is None:
                continue
            known = self._freshness.get(self._key(rel))
            if known is None or known[0] is not entry:
                todo.append(rel)
            elif known[2] and entry.index is not None and columns:
                todo.append(rel)

        def load(rel: str) -> None:
            entry = entries[rel]
            if self._fresh(entry) and entry.index is not None and columns:
                try:
                    index = self.file_index(entry)
                    if index is not None:
                        index.load(columns)
                except ArrowIdxError:
                    pass  # plan_file meets (and reports) it

        facts.parallel(load, todo, inline=self._quick(sum(_window_bytes(entries[rel], columns) for rel in todo), len(todo)))
        if stamp is not None:
            self._prepared = stamp

    def _prepare_kept(self, plans: list[FilePlan]) -> None:
        """Read, on the I/O pool, the footers (pyarrow's fragments) and deletion vectors of
        the files planned to be read that the process does not hold yet."""
        todo = [p.path for p in plans if p.status != "skipped"]
        if len(todo) < 2:
            return
        by_file: dict[str, list[FileEntry]] = {}  # the vectors to read, per deletion file
        for rel in todo:
            entry = self.manifest.files.get(rel)
            if entry is not None and entry.deletion is not None and self._fresh(entry):
                key = self._vector_key(entry)
                if not facts.DELETIONS.holds(key):
                    by_file.setdefault(join(self.root, entry.deletion.file), []).append(entry)
        jobs: list = [(self._fragment, rel) for rel in todo] + [(self._read_vectors, group) for group in by_file.values()]
        sizes = sum(e.size for e in map(self.manifest.files.get, todo) if e is not None)
        facts.parallel(lambda job: job[0](job[1]), jobs, inline=self._quick(sizes, len(todo)))

    def _quick(self, nbytes: int, count: int) -> bool:
        """Whether ``count`` reads of ``nbytes`` in all are done in this thread: on a store
        whose reads are quick (a local disk) when they average under :data:`QUICK_READ_BYTES`
        (a hand-off to the I/O pool costs more than such a read; larger reads, checksums and
        footers overlap on the pool)."""
        return self.store.quick_reads and nbytes < count * QUICK_READ_BYTES

    def _vector_key(self, entry: FileEntry) -> tuple:
        ref = entry.deletion
        return ("dv", self.store.key, join(self.root, ref.file), ref.offset, ref.length, ref.xxh64, entry.path)

    def _read_vectors(self, entries: list[FileEntry]) -> None:
        """The vectors of ``entries`` (all in one deletion file) read in one call (nearby
        ranges in one request on object stores) and kept in the process's store."""
        path = join(self.root, entries[0].deletion.file)
        ensure_inside(self.fs, self.root, path, "deletion file")
        records = [(e.deletion.offset, deletion_record_length(e.deletion)) for e in entries]
        try:
            blobs = self.store.get_ranges(path, records, "deletion-vectors file")
        except FileNotFoundError:
            raise CorruptIndexError("deletion-vectors file is missing (deleted or never written)", source=path) from None
        for entry, blob in zip(entries, blobs):
            dv = deletion_vector_of(entry, path, blob)
            facts.DELETIONS.put(self._vector_key(entry), dv, _sized_vector(dv)[1])

    @property
    def schema(self) -> pa.Schema:
        """The dataset schema, as pyarrow.dataset infers it (from the first file, plus the
        partition fields of a source dataset)."""
        if self._schema is None:
            if not self.files:
                raise ArrowIdxError(f"{self.root} has no data files: {NO_DATA_FILES}")
            self._schema = with_partition_fields(self.footer(self.files[0]).schema.to_arrow_schema(), self.partitioning)
        return self._schema

    def _bind_columns(self, expr) -> set[str]:
        """The dataset columns ``expr`` reads."""
        if expr is None:
            return set()
        # every field the expression names (a superset of the columns its bound predicate
        # reads): one parse of the expression, not two; a query asks it more than once
        last, last_schema, fields = self._fields
        schema = self.schema
        if last is not expr or last_schema is not schema:
            fields = _expression_fields(expr, schema)
            self._fields = (expr, schema, fields)
        return set(fields)

    # -- indexes and deletion vectors ------------------------------------------------------------
    def file_index(self, entry: FileEntry) -> FileIndex | None:
        """The opened container of a fresh file, shared by every reader of the process (it
        is named by its content). A container whose layout the manifest records fetches
        only the columns asked about (:class:`~arrowidx.index.container.SparseContainer`)."""
        ref = entry.index
        if ref is None:
            return None
        if ref.embedded is not None:
            key = ("index", "embedded", ref.embedded, ref.schema)  # (small: the threshold bounds it)
            source = f"{join(self.root, entry.path)} (embedded index)"
        else:
            source = join(self.root, ref.file)
            key = ("index", self.store.key, source, ref.size, ref.xxh64, ref.schema)

        def make():
            if ref.layout is not None and ref.embedded is None:
                ensure_inside(self.fs, self.root, source, "index file")
                container = SparseContainer(ref.layout, ref.size, lambda ranges: self._index_ranges(source, ranges), source,
                                            listed=_listed(entry))  # fmt: skip
                return FileIndex(container, ref.arrow_schema(), name=source), 1024
            data = load_index_bytes(self.store, self.root, entry)
            if not data:
                return None, 64
            return FileIndex(data, ref.arrow_schema(), name=source), len(data) + 1024

        return facts.INDEXES.get(key, make)

    def _index_ranges(self, path: str, ranges: list[tuple[int, int]]) -> list[bytes]:
        try:
            return self.store.get_ranges(path, ranges, "index file")
        except FileNotFoundError:
            raise CorruptIndexError("index file is missing (deleted or never written); rebuild with arrowidx build",
                                    source=path) from None  # fmt: skip

    def deletion_vector(self, rel: str) -> DeletionVector | None:
        """The deletion vector of a fresh file (None if it has none or is stale): its range
        of the deletion file read alone, checked by its checksum, once per process."""
        entry = self.manifest.files.get(rel)
        if entry is None or entry.deletion is None or not self._fresh(entry):
            return None
        path = join(self.root, entry.deletion.file)
        return facts.DELETIONS.get(self._vector_key(entry), lambda: _sized_vector(self._read_vector(entry, path)))

    def _read_vector(self, entry: FileEntry, path: str) -> DeletionVector:
        ensure_inside(self.fs, self.root, path, "deletion file")
        try:
            record = self.store.get_range(path, entry.deletion.offset, deletion_record_length(entry.deletion), "deletion-vectors file")
        except FileNotFoundError:
            raise CorruptIndexError("deletion-vectors file is missing (deleted or never written)", source=path) from None
        return deletion_vector_of(entry, path, record)

    # -- planning --------------------------------------------------------------------------------
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
        return self._finish(self._decide(rel, expr, bound), expr, statistics)

    def _decide(self, rel: str, expr, bound: dict | None = None) -> FilePlan:
        """What the index says of one file (no footer, deletion vector or statistics yet)."""
        entry = self.manifest.files.get(rel)
        plan = FilePlan(rel, entry.rows if entry else 0, "remain")
        if entry is None:
            plan.status, plan.note = "no index", "not in the manifest"
        elif not self._fresh(entry):
            plan.status, plan.note = "stale", "changed since indexed"
        elif entry.index is None:
            plan.status, plan.note = "no index", ""
        elif expr is not None:
            try:
                index = self.file_index(entry)
                if index is None:
                    plan.status, plan.note = "no index", "index file rewritten"
                else:
                    bound = {} if bound is None else bound
                    node = bound.get(entry.index.schema)
                    if node is None:
                        node = bound[entry.index.schema] = bind(expr, index.schema)
                    plan.result = index.evaluate(node)
                    plan.index_types = index.index_types(node.columns())
                    plan.exact = plan.result.kind == "bitmap" and plan.result.remain and is_exact(node, index.schema, index.readers)
            except ArrowIdxError:
                if self.on_corrupt == "raise":
                    raise
                plan.status, plan.note = "fallback", "corrupt index ignored"
        if plan.status == "remain" and not plan.result.remain:
            plan.status = "skipped"
            plan.rows_selected = 0
        elif plan.result.kind == "bitmap":
            plan.status = "bitmap"
            plan.rows_selected = len(plan.result.bitmap)
        return plan

    def _finish(self, plan: FilePlan, expr, statistics: bool | pc.Expression = True) -> FilePlan:
        """The rest of :meth:`plan_file` for a file the index kept: deleted rows, row groups
        (those the bitmap holds rows in, then those statistics keep)."""
        if plan.status == "skipped":
            return plan
        rel = plan.path
        entry = self.manifest.files.get(rel)
        dv = self.deletion_vector(rel) if entry is not None and entry.deletion is not None else None
        plan.deleted = dv.cardinality if dv is not None else 0
        if entry is None or plan.status == "stale":
            plan.rows = self.row_count(rel)
        offsets = self._row_group_offsets(rel)
        key = self._key(rel)
        plan.row_group_offsets = offsets
        counts = self._counts[key]
        plan.row_groups_total = len(counts)
        if plan.result.kind == "bitmap":
            plan.row_groups = bitmap_groups(plan.result.bitmap, offsets)
            if not plan.row_groups:
                plan.status = "skipped"
                return plan
        else:
            plan.row_groups = list(self._nonempty[key])
        by = statistics if isinstance(statistics, pc.Expression) else (expr if statistics is True else None)
        self._prune_with_statistics(plan, by)
        return plan

    def _prune_with_statistics(self, plan: FilePlan, expr) -> None:
        """Drop from ``plan`` the row groups Parquet statistics and the partition rule out for ``expr``."""
        if not isinstance(expr, pc.Expression) or not plan.row_groups:
            return
        before = len(plan.row_groups)
        plan.row_groups = self._statistics_groups(plan.path, expr, plan.row_groups)
        plan.pruned_by_statistics += before - len(plan.row_groups)
        if not plan.row_groups:
            plan.status, plan.note = "pruned", "row-group statistics / partition"

    def _row_group_offsets(self, rel: str) -> np.ndarray:
        """First row of each row group, and the row count at the end (cached per file identity)."""
        key = self._key(rel)
        offsets = self._offsets.get(key)
        if offsets is None:
            footer = self.footer(rel)
            counts = [footer.row_group(i).num_rows for i in range(footer.num_row_groups)]
            offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
            with self._lock:
                self._counts[key] = counts
                self._nonempty[key] = [g for g, n in enumerate(counts) if n]
                self._offsets[key] = offsets
        return offsets

    def _indexed_columns(self) -> set[str]:
        """Every column some file's index covers, in the current manifest."""
        key = (self.manifest.version, len(self.manifest.files))
        if self._indexed[0] != key:
            schemas = {e.index.schema: e.index for e in self.manifest.files.values() if e.index is not None}
            self._indexed = (key, {name for ref in schemas.values() for name in ref.arrow_schema().names})
        return self._indexed[1]

    def _statistics_groups(self, rel: str, expr: pc.Expression, groups: list[int]) -> list[int]:
        """``groups`` minus those pyarrow's statistics and partition pruning rule out."""
        return statistics_groups(self._fragment(rel), expr, self.schema, groups)

    def plan(self, expr, *, statistics: bool | pc.Expression = True) -> list[FilePlan]:
        """One :class:`FilePlan` per data file, in read order.

        What the indexes need (the bytes of the filter's columns) is read on the I/O pool
        first, then every file's index answers; then the footers and deletion vectors of the
        files they keep are read, in parallel too (:meth:`_prepare`, :meth:`_prepare_kept`).
        Files a key directory rules out (:meth:`ruled_out`) are skipped without asking their
        indexes.
        """
        expr = user_filter(expr, lambda: self.schema).pushdown if isinstance(expr, (str, Filter)) else expr
        if self.files and isinstance(expr, pc.Expression):
            check_expression(expr, self.schema, rows=self._may_hold_rows(), where=self.root)
        view = partition_view(self, expr)  # Hive folders ruled out before any file is opened
        if view is not self:
            return with_pruned(self, view, view.plan(expr, statistics=statistics))
        self._forget_file_infos()
        self._prepare(self.files, expr)
        bound: dict = {}
        ruled = self._ruled_out(expr, bound)
        decided = [ruled.get(rel) or self._decide(rel, expr, bound) for rel in self.files]
        self._prepare_kept(decided)
        return [self._finish(p, expr, statistics) for p in decided]

    def _listed(self, expr, bound: dict) -> dict[str, tuple]:
        """The files the key directories rule out for ``expr`` by their keys alone, each with
        its identity as listed (a file is ruled out only while it is still that file)."""
        listed: dict[str, tuple] = {}
        for directory, skipped in self._ruled_out_by_directories(expr, bound, check_identities=False)[0]:
            listed.update(zip(compress(directory.paths, skipped), compress(directory.identities, skipped)))
        return listed

    def _plan_kept(self, expr, bound: dict, listed: dict[str, tuple]) -> tuple[list[FilePlan], int]:
        """:meth:`plan` (without statistics) for the files the key directories do not rule
        out (``listed``, checked against this query's stats), and how many they ruled out:
        what a read needs, without a plan object per skipped file."""
        self._prepare(self.files, expr)
        keys = self._keys
        ruled = {rel for rel, identity in listed.items() if keys.get(rel) == identity}
        decided = [self._decide(rel, expr, bound) for rel in self.files if rel not in ruled]
        self._prepare_kept(decided)
        return [self._finish(p, expr, statistics=False) for p in decided], len(ruled)

    def _plan_needle(self, expr, bound: dict, listed: dict[str, tuple], kept: list[str]) -> _Route:
        """The route of a needle the key directories narrow to a few files (``listed``: the
        files they rule out; ``kept``: the others). Only ``kept`` is stat'ed and planned
        now; the stats of all files, which tell whether each file ruled out is still the one
        its directory lists, run meanwhile on a helper thread, and the read checks them
        before it returns a row (:meth:`_read_route`): a changed file is then planned and
        read too."""
        files = self.files
        paths = self._absolute_paths()
        stats = _stat_pool().submit(self.store.stat, paths)
        self.restat(list(dict.fromkeys([files[0], *kept])))  # the first file: the dataset's schema
        self._prepare(kept, expr)
        decided = [self._decide(rel, expr, bound) for rel in kept]
        self._prepare_kept(decided)
        plans = [self._finish(p, expr, statistics=False) for p in decided]
        for p in plans:
            self._prune_with_statistics(p, expr)

        def settle() -> list[FilePlan]:
            changed = [
                rel for rel, info in zip(files, stats.result())
                if rel in listed and self._identity(rel, info) != listed[rel]
            ]  # fmt: skip
            if not changed:
                return []
            self.restat(changed)
            self._prepare(changed, expr)
            extra = [self.plan_file(rel, expr, bound, statistics=False) for rel in changed]
            for p in extra:
                self._prune_with_statistics(p, expr)
            return extra

        return _Route(plans, one_pass=False, settle=settle)

    # -- key directories -------------------------------------------------------------------------
    def _ruled_out(self, expr, bound: dict) -> dict[str, FilePlan]:
        """The plans of the files a key directory (:mod:`~arrowidx.lake.directory`) rules
        out for ``expr``: files whose range bitmap holds none of the keys of an equality /
        IN conjunct, skipped as :meth:`plan_file` skips a file whose index answers SKIP,
        without asking their indexes. Call after :meth:`_prepare` (it compares the files'
        identities of this query); ``bound`` is the plan's cache that :meth:`plan_file`
        shares. Empty when no directory applies: every file is then planned one by one."""
        found, columns = self._ruled_out_by_directories(expr, bound)
        plans: dict[str, FilePlan] = {}
        for directory, skipped in found:
            for m in compress(directory.members, skipped):
                if m.path not in plans:
                    plans[m.path] = FilePlan(m.path, m.entry.rows, "skipped", SKIP, m.index.index_types(columns), rows_selected=0)
        return plans

    def _ruled_out_rows(self, expr, bound: dict) -> dict[str, int]:
        """:meth:`ruled_out` without a plan per file: the files ruled out, and their rows."""
        ruled: dict[str, int] = {}
        for directory, skipped in self._ruled_out_by_directories(expr, bound)[0]:
            ruled.update((m.path, m.entry.rows) for m in compress(directory.members, skipped))
        return ruled

    def _ruled_out_by_directories(
        self, expr, bound: dict, *, check_identities: bool = True
    ) -> tuple[list[tuple[KeyDirectory, np.ndarray]], frozenset[str]]:
        """Per key directory that applies to ``expr``, which of its members :meth:`ruled_out`
        skips (a mask over ``directory.members``), and the columns of ``expr``.
        ``check_identities=False``: by their keys alone; the caller then checks that each
        member is still the file it lists (:meth:`_plan_needle`)."""
        if expr is None or len(self.files) < DIRECTORY_MIN_FILES:
            return [], frozenset()
        first = self.manifest.files.get(self.files[0])
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
            return [], frozenset()  # plan_file meets (and reports) it
        out: list[tuple[KeyDirectory, np.ndarray]] = []
        current = self._keys
        for column, keys in found:
            directory = self._directory(column, schema_key)
            if directory is None:
                continue
            skipped = ~directory.holding(keys)
            # a file is ruled out only while it is the one listed (the same manifest version)
            now = list(map(current.get, directory.paths)) if check_identities else directory.identities
            if now != directory.identities:  # some changed: those are planned one by one
                skipped &= np.fromiter(map(operator.eq, now, directory.identities), bool, len(now))
            if skipped.any():
                out.append((directory, skipped))
        return out, frozenset(node.columns()) if out else frozenset()

    def _directory(self, column: str, schema_key: str) -> KeyDirectory | None:
        """The key directory of ``column`` over the fresh files indexed under ``schema_key``
        (built once per manifest version; None when it would not pay)."""
        cached = self._directories.get((column, schema_key))
        if cached is not None and cached[0] == self.manifest.version:
            return cached[1]
        self._prepare(self.files, columns=frozenset([column]))  # every file's index of the column, in parallel
        candidates = []
        for rel in self.files:
            entry = self.manifest.files.get(rel)
            if entry is None or entry.index is None or entry.index.schema != schema_key:
                continue
            try:
                index = self.file_index(entry) if self._fresh(entry) else None
                reader = next((r for r in index.readers(column) if r.lists_keys), None) if index is not None else None
            except ArrowIdxError:
                continue  # planned one by one, where the error is met
            if reader is not None:
                candidates.append((Member(rel, self._key(rel), entry, index), reader))
        directory = build_directory(column, candidates) if len(candidates) >= DIRECTORY_MIN_FILES else None
        self._directories[(column, schema_key)] = (self.manifest.version, directory)
        return directory

    def explain(self, filter=None) -> Explain:
        """What the indexes do for ``filter``: per file, skipped by which index, rows and row groups kept."""
        where = user_filter(filter, lambda: self.schema)
        filter = where.pushdown
        plans = self.plan(filter)
        for plan in plans:  # name the index types that, alone, rule a skipped file out
            entry = self.manifest.files.get(plan.path)
            index = self.file_index(entry) if entry is not None and plan.status in ("skipped", "bitmap", "remain", "pruned") else None
            if plan.skipped and plan.index_types and index is not None:
                plan.index_types = index.deciding_index_types(filter) or plan.index_types
            if plan.skipped:  # skipped files still report their deleted rows
                dv = self.deletion_vector(plan.path)
                plan.deleted = dv.cardinality if dv is not None else 0
            plan.why = _why(plan, index, filter, self.schema)
        return Explain(where.describe(expression_text(filter)), plans)

    def __repr__(self) -> str:
        indexed = sum(1 for rel in self.files if rel in self.manifest.files)
        options = ", ".join(f"{k[len('file-index.'):-len('.columns')]}: {v}" for k, v in sorted(self.manifest.options.items()) if k.endswith(".columns"))
        return (
            f"IndexedDataset({self.root!r}, manifest v{self.manifest.version}, {len(self.files)} file(s),"
            f" {indexed} in the manifest, indexes: {options or 'none'})"
        )

    # -- reading ---------------------------------------------------------------------------------
    def _scan(self, rel: str, groups: list[int], columns: list[str], filter=None) -> pa.Table:
        """``columns`` of row groups ``groups`` of one file, read by pyarrow with the dataset
        schema (partition columns filled, missing columns NULL), optionally filtered."""
        fragment = self._fragment(rel).subset(row_group_ids=groups)
        scanner = ds.Scanner.from_fragment(fragment, schema=self.schema, columns=columns, filter=filter)
        return scanner.to_table()

    def _file_read(self, plan: FilePlan, *, apply_deletions: bool = True) -> FileRead:
        """The planned file as the scan core's :class:`~arrowidx.lake.read.FileRead`."""
        dv = self.deletion_vector(plan.path) if apply_deletions and plan.deleted else None
        return FileRead(
            plan.path, lambda dictionary: self._fragment(plan.path, dictionary=dictionary), plan.row_groups,
            plan.row_group_offsets, plan.result.bitmap if plan.result.kind == "bitmap" else None, dv, plan.exact,
        )  # fmt: skip

    def _position_mask(self, plan: FilePlan, groups: list[int], apply_deletions: bool = True) -> np.ndarray | None:
        """Index bitmap AND not deleted, over the rows of ``groups`` (None: every row)."""
        return self._file_read(plan, apply_deletions=apply_deletions).position_mask(groups)

    def _read_rows(
        self, plan: FilePlan, columns: list[str] | None, *, apply_deletions: bool = True, row_numbers: bool = False
    ) -> tuple[pa.Table, np.ndarray | None] | None:
        """The rows of one file that its index kept (and deletions did not drop), without
        applying the filter. Returns ``(table, file row numbers or None)``, or None."""
        if not plan.row_groups:
            return None
        groups = plan.row_groups
        table = self._scan(plan.path, groups, list(self.schema.names) if columns is None else list(columns))
        keep = self._position_mask(plan, groups, apply_deletions)
        numbers = None
        if row_numbers:
            offsets = plan.row_group_offsets
            numbers = np.concatenate([np.arange(offsets[g], offsets[g + 1], dtype=np.uint64) for g in groups])
        if keep is not None and not keep.all():
            table = table.filter(pa.array(keep))
            numbers = numbers[keep] if numbers is not None else None
        return table, numbers

    def read_plan(self, plan: FilePlan, expr, columns: list[str] | None, *, one_pass: bool | None = None) -> pa.Table | None:
        """The rows of one planned file that match ``expr`` (deleted rows dropped), or None.
        ``one_pass``: as :meth:`read_plans` (None: decided from this plan alone)."""
        tables = [t for t in self._read_plans([plan], expr, columns, one_pass=one_pass) if t is not None]
        return tables[0] if tables else None

    def _read_plans(
        self, plans: list[FilePlan], expr, columns: list[str] | None, *, one_pass: bool | None = None
    ) -> Iterator[pa.Table | None]:
        """Per planned file (in order), its rows matching ``expr`` minus deleted rows (or None).

        Late materialisation: for files whose index answer is not already exact, the
        predicate columns of the kept row groups are read first (one pyarrow scan over all
        those files); the row mask is index bitmap AND not deleted AND ``expr``
        (:func:`expression_mask`); then the other projected columns are read only for the
        row groups still holding rows (a second scan), keeping only those rows.

        When the indexes pruned nothing (``one_pass`` None: no plan skipped or narrowed to
        rows; the caller passes the plans it skipped too), the filter is probably not
        selective and the files are read in one pass instead, as ``pyarrow.dataset`` would.
        """
        if one_pass is None:
            one_pass = not self._index_pruned(plans)
        reader = FileReader(self.fs, self.schema, self.format, self._dictionary_format())
        reads = [self._file_read(p) for p in plans if p.row_groups]
        filter_columns = sorted(self._bind_columns(expr)) if expr is not None else []
        out_schema = self._output_schema(columns)
        tables = iter(reader.read(reads, expr, columns, filter_columns, out_schema, one_pass=one_pass))
        for p in plans:
            if p.row_groups:
                yield next(tables)

    @staticmethod
    def _index_pruned(plans: list[FilePlan]) -> bool:
        """True when an index ruled a file out or narrowed one to rows."""
        return any(p.skipped or p.result.kind == "bitmap" for p in plans)

    def _handover(self, plans: list[FilePlan]) -> bool:
        """True when the indexes pruned nothing and nothing is deleted: pyarrow reads alone."""
        return not self._index_pruned(plans) and not any(p.deleted for p in plans)

    def _indexes_cannot_help(self, filter) -> bool:
        """True when no index covers a column of ``filter`` and nothing is deleted."""
        if self._deletes():
            return False
        return filter is None or not (self._bind_columns(filter) & self._indexed_columns())

    def _may_hold_rows(self) -> bool:
        """False only when the manifest lists every file, each with no row (an empty lake:
        pyarrow's filter then runs no kernel, see ``check_expression``)."""
        files = self.manifest.files
        return any(rel not in files or files[rel].rows for rel in self.files)

    def _deletes(self) -> bool:
        """True when the manifest lists deleted rows for some file (asked once per manifest)."""
        manifest, deletes = self._manifest_deletes
        if manifest is not self.manifest:
            manifest = self.manifest
            deletes = any(e.deletion is not None for e in manifest.files.values())
            self._manifest_deletes = (manifest, deletes)
        return deletes

    def _route(self, filter) -> ds.FileSystemDataset | _Route:
        """How to read ``filter``: a pyarrow dataset to scan as it is (the indexes cannot
        prune: no index on a filter column, or none prunes anything, and nothing is deleted),
        or the planned files to read with late materialisation (statistics applied; files a
        key directory ruled out left out)."""
        if not self.files:
            return _Route([], one_pass=True)
        check_expression(filter, self.schema, rows=self._may_hold_rows(), where=self.root)
        view = partition_view(self, filter)  # Hive folders ruled out before any file is opened
        if view is not self:
            return view._route(filter)
        if self._indexes_cannot_help(filter):
            self._forget_file_infos()
            return self._pyarrow_dataset()
        self._forget_file_infos()
        bound: dict = {}
        listed = self._listed(filter, bound)
        if listed:
            kept = [rel for rel in self.files if rel not in listed]
            if len(kept) <= NEEDLE_MAX_FILES:
                return self._plan_needle(filter, bound, listed, kept)
        plans, ruled = self._plan_kept(filter, bound, listed)
        if not ruled and self._handover(plans):
            return self._pyarrow_dataset()
        for p in plans:
            self._prune_with_statistics(p, filter)
        return _Route(plans, one_pass=not ruled and not self._index_pruned(plans))

    def to_batches(self, filter=None, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        """Record batches of the rows matching ``filter`` (minus deleted rows), in file order.

        When the indexes cannot prune and nothing is deleted, ``pyarrow.dataset`` scans the
        files itself (its own statistics pruning, same cost); otherwise the surviving row
        groups are read with late materialisation (:meth:`read_plans`). ``filter``: a
        ``pc.Expression`` (pyarrow's meaning) or SQL text (SQL's meaning, :mod:`arrowidx.filters`).
        ``columns``: names (one ``str`` is one column); an unknown one raises
        :class:`~arrowidx.predicate.UnknownColumnError` here, as pyarrow raises.
        """
        return self._batches(filter, self._user_columns(columns))

    def _user_columns(self, columns) -> list[str] | None:
        """``columns=`` as a list of this dataset's column names (:func:`arrowidx.filters.user_columns`)."""
        return user_columns(columns, self.schema, self.root) if columns is not None else None

    def _batches(self, filter, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
        where = user_filter(filter, lambda: self.schema)
        if where.residual is not None:
            yield from where.apply(self._batches(where.pushdown, where.read_columns(columns)), columns)
            return
        filter = where.pushdown
        route = self._route(filter)
        if isinstance(route, ds.Dataset):
            yield from self._scan_handed_over(route, filter, columns)
        else:
            yield from _batches_of(self._read_route(route, filter, columns))

    def _scan_handed_over(self, data: ds.Dataset, filter, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
        """The rows of ``data`` (the whole dataset, handed over to pyarrow) matching ``filter``.

        pyarrow's scanner filters with the part of ``filter`` its statistics may judge
        (:func:`~arrowidx.statistics.statistics_filter`); when that part means less than the
        whole filter, the whole filter is applied to every batch by the kernel, so the
        answer is ``Table.filter``'s even where pyarrow.dataset's is not."""
        sound = statistics_filter(filter, self.schema)
        if sound.exact:
            yield from data.scanner(filter=sound.expression, columns=columns).to_batches()
            return
        out = list(self.schema.names) if columns is None else list(columns)
        names = out + [c for c in sorted(self._bind_columns(filter)) if c not in out]
        for batch in data.scanner(filter=sound.expression, columns=names).to_batches():
            mask = expression_mask(batch, filter, threads=False)
            if mask.any():
                batch = batch if mask.all() else batch.filter(pa.array(mask))
                yield batch if len(names) == len(out) else batch.select(out)

    def _read_route(self, route: _Route, filter, columns: list[str] | None) -> Iterator[pa.Table | None]:
        """The tables of a planned route, in file order. A needle's route (:meth:`_plan_needle`)
        is read whole first, then settled: files its directories ruled out that changed
        since they were listed are planned, read and put in their place."""
        if route.settle is None:
            if route.plans:
                yield from self._read_plans(route.plans, filter, columns, one_pass=route.one_pass)
            return
        tables = list(self._read_plans(route.plans, filter, columns, one_pass=False)) if route.plans else []
        extra = route.settle()
        if extra:
            pairs = list(zip(route.plans, tables)) + list(zip(extra, self._read_plans(extra, filter, columns, one_pass=False)))
            position = {rel: i for i, rel in enumerate(self.files)}
            tables = [table for _, table in sorted(pairs, key=lambda pair: position[pair[0].path])]
        yield from tables

    def _pyarrow_dataset(self) -> ds.FileSystemDataset:
        """The files as one pyarrow dataset (fragments shared with their footers: those the
        process has not read yet are read on the I/O pool)."""
        keys = tuple(self._key(rel) for rel in self.files)
        if self._handover_dataset[0] != keys:
            fragments = facts.parallel(self._fragment, self.files)
            self._handover_dataset = (keys, ds.FileSystemDataset(fragments, self.schema, self.format, self.fs))
        return self._handover_dataset[1]

    def _output_schema(self, columns: list[str] | None) -> pa.Schema:
        return self.schema if columns is None else pa.schema([self.schema.field(c) for c in columns])

    def scanner(self, filter=None, columns: list[str] | None = None) -> pa.RecordBatchReader:
        """A streaming ``pyarrow.RecordBatchReader`` of the rows matching ``filter`` (minus
        deleted rows): hand it to DuckDB, ``pl.from_arrow``, DataFusion (``__arrow_c_stream__``)."""
        columns = self._user_columns(columns)
        schema = self._output_schema(columns)
        filter = user_filter(filter, lambda: self.schema)

        def batches() -> Iterator[pa.RecordBatch]:
            for b in self._batches(filter, columns):
                yield b if b.schema.equals(schema) else pa.RecordBatch.from_arrays(b.columns, schema=schema)

        return pa.RecordBatchReader.from_batches(schema, batches())

    def fragments(self, filter=None) -> list[ds.ParquetFileFragment]:
        """pyarrow fragments of the files that may hold rows matching ``filter``, each
        restricted to the row groups the indexes and statistics keep.

        The fragments hold a superset of the matching rows: scan them with the same filter
        (``ds.FileSystemDataset(fragments, ...)`` or ``Scanner.from_fragment``). Fragments
        cannot carry deletion vectors, so files with deleted rows raise ``ArrowIdxError``
        naming them; read those through :meth:`scanner`/:meth:`to_table` instead.
        """
        plans = self.plan(user_filter(filter, lambda: self.schema).pushdown)
        deleted = [p.path for p in plans if p.row_groups and p.deleted]
        if deleted:
            raise ArrowIdxError(
                f"{self.root}: {len(deleted)} file(s) have deleted rows, which pyarrow fragments cannot"
                f" carry: {', '.join(deleted[:5])}{' ...' if len(deleted) > 5 else ''}; use scanner() or to_table()"
            )
        return [self._fragment(p.path).subset(row_group_ids=p.row_groups) for p in plans if p.row_groups]

    def to_table(self, filter=None, columns: list[str] | None = None) -> pa.Table:
        """Like ``pyarrow.dataset.Dataset.to_table(filter=, columns=)``, minus deleted rows
        (``filter``: a ``pc.Expression``, or SQL text; ``columns``: names, one ``str`` is one column)."""
        columns = self._user_columns(columns)
        schema = self._output_schema(columns)
        where = user_filter(filter, lambda: self.schema)
        if where.residual is not None:
            return where.apply_table(self.to_table(where.pushdown, where.read_columns(columns)), columns)
        filter = where.pushdown
        route = self._route(filter)
        if isinstance(route, ds.Dataset):
            sound = statistics_filter(filter, self.schema)
            if sound.exact:
                return route.to_table(filter=sound.expression, columns=columns)
            batches = list(self._scan_handed_over(route, filter, columns))
        else:
            batches = [b for b in _batches_of(self._read_route(route, filter, columns)) if b.num_rows]
        if not batches:
            return schema.empty_table()
        if all(b.schema.equals(schema) for b in batches):
            return pa.Table.from_batches(batches, schema)
        return pa.Table.from_batches([pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in batches], schema)

    def count_rows(self, filter=None) -> int:
        """Rows matching ``filter`` minus deleted rows; with no filter, from metadata alone."""
        where = user_filter(filter, lambda: self.schema)
        if where.residual is not None:
            return sum(b.num_rows for b in self._batches(where, where.residual.columns or [self.schema.names[0]]))
        filter = where.pushdown
        if filter is None:
            self._forget_file_infos()
            total = 0
            for rel in self.files:
                entry = self.manifest.files.get(rel)
                dv = self.deletion_vector(rel)
                total += (entry.rows if self._fresh(entry) else self.row_count(rel)) - (dv.cardinality if dv else 0)
            return total
        columns = sorted(self._bind_columns(filter)) or [self.schema.names[0]]
        return sum(b.num_rows for b in self._batches(filter, columns))


@dataclass
class _Route:
    """Planned files to read (:meth:`IndexedDataset._route`), and whether to read them in one
    pass. ``settle``: for a needle's route, what to call once its files are read (the plans
    of files found changed since a directory ruled them out; see :meth:`IndexedDataset._read_route`)."""

    plans: list[FilePlan]
    one_pass: bool
    settle: Callable[[], list[FilePlan]] | None = None


def _sized_vector(dv: DeletionVector) -> tuple[DeletionVector, int]:
    return dv, 64 + dv.cardinality // 2


_DICTIONARY_FORMATS: dict[tuple, ds.ParquetFileFormat] = {}


def _dictionary_format(base: ds.ParquetFileFormat, names: frozenset[str]) -> ds.ParquetFileFormat:
    """``base`` reading ``names`` as dictionaries: one object per (format, names) in the
    process, so the fragments made with it are shared too."""
    key = (id(base), names)
    fmt = _DICTIONARY_FORMATS.get(key)
    if fmt is None:
        options = ds.ParquetReadOptions(dictionary_columns=sorted(names))
        fmt = ds.ParquetFileFormat(read_options=options, default_fragment_scan_options=base.default_fragment_scan_options)
        _DICTIONARY_FORMATS[key] = fmt
        _DICTIONARY_FORMATS.setdefault(("base", id(base)), base)  # (holds the base: its id stays its own)
    return fmt


def _batches_of(tables) -> Iterator[pa.RecordBatch]:
    for table in tables:
        if table is not None and table.num_rows:
            yield from table.to_batches()


def _expression_fields(expr, schema: pa.Schema) -> set[str]:
    """Every schema column named anywhere in ``expr`` (also inside parts no index answers)."""
    if expr is None:
        return set()
    from ..predicate import _Call, _Field, parse

    out: set[str] = set()

    def walk(t):
        if isinstance(t, _Field):
            out.add(t.name)
        elif isinstance(t, _Call):
            for a in t.args:
                walk(a)

    try:
        walk(parse(expr))
    except Exception:
        return set(schema.names)
    if any(schema.get_field_index(name) < 0 for name in out):
        return set(schema.names)
    return out


def _manifest_root(fs: pafs.FileSystem, folder: str) -> str:
    """The nearest folder at or above ``folder`` holding an arrowidx manifest (else ``folder``):
    the root of a Hive layout whose files all sit in one partition folder."""
    probe = folder
    while True:
        if fs.get_file_info(join(probe, META_DIR)).type == pafs.FileType.Directory:
            return probe
        parent = posixpath.dirname(probe)
        if not parent or parent == probe:
            return folder
        probe = parent


def dataset(source: Any, *, filesystem: pafs.FileSystem | None = None, on_corrupt: str = "raise",
            on_stale_deletions: str = "raise", storage_options: dict[str, Any] | None = None,
            partitioning: Any = "hive") -> IndexedDataset:  # fmt: skip
    """Open an indexed Parquet dataset: a directory or URI (``s3://bucket/lake`` with
    ``storage_options``, see docs/object-stores.md), a ``.parquet`` file or list of files, or
    a ``pyarrow.dataset.FileSystemDataset`` (whose files, schema and partitioning are kept:
    ``ds.dataset(root, partitioning="hive")`` exposes and prunes by its partition columns, as
    pyarrow does).

    ``partitioning``: Hive folders (``dt=2024-01-02/``) are partition columns, discovered by
    default (``"hive"``); ``None`` turns that off, a ``pa.Schema`` or ``{name: type}`` gives
    their types (:mod:`arrowidx.lake.partitions`)."""
    fs, root, explicit = resolve(source, filesystem, storage_options)
    if "pyarrow.dataset" in sys.modules and isinstance(source, ds.FileSystemDataset):  # (else it cannot be one)
        if explicit:
            root = _manifest_root(fs, root)
        return IndexedDataset(fs, root, on_corrupt=on_corrupt, source=source, on_stale_deletions=on_stale_deletions)
    data = IndexedDataset(fs, root, on_corrupt=on_corrupt, on_stale_deletions=on_stale_deletions, partitioning=partitioning)
    if explicit is not None:  # a .parquet file or a list of files: only those (ux, issue 14)
        data._only = sorted(posixpath.relpath(p, root) for p in explicit)
        data.refresh()
    return data
