"""The facts of one lake snapshot's files: which data files there are, whether each is still
the file its manifest entry describes, and what the process knows of it (footer, pyarrow
fragment, index container, deletion vector, row groups), each kept in :mod:`arrowidx.facts`
under one identity key.

A data file's identity is ``(path, size, mtime_ns, stamp)`` as this query's stat finds it
(:meth:`LakeFiles.identity`; made only for the files a query plans, the others' stats are
columns: :meth:`LakeFiles.still_indexed`); every fact about the file is kept under it, so a
file rewritten in place is read again. Where the store stamps nothing, the stamp is a token
private to this object (:func:`arrowidx.facts.identity_token`).

:class:`LakeFiles` answers what :mod:`.plan` asks of a snapshot; it decides nothing itself.
Reads that planning needs for many files at once (index windows, footers, deletion vectors)
are done on the process's I/O pool, or in the calling thread where reads are quick
(:meth:`LakeFiles.prepare`, :meth:`LakeFiles.prepare_kept`).
"""

from __future__ import annotations

import copy
import posixpath
import threading
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import facts
from .._lazy import lazy_module
from ..deletion import DeletionVector
from ..errors import ArrowIdxError, CorruptIndexError, CorruptManifestError
from ..expression import columns_named
from ..file_index import FileIndex
from ..index.container import SparseContainer
from ..storage import FileStats, ObjectChangedError, ObjectInfo, Store, same_object
from .commit import latest_version, load_manifest_shared
from .conditional import conditional_filesystem
from .footer import NO_DATA_FILES, Footer, content_xxh64, read_footer, stray_file_hint
from .freshness import (
    check_stale_option,
    deletion_record_length,
    deletion_vector_of,
    entry_is_fresh,
    load_index_bytes,
    still_indexed,
)
from .layout import ensure_inside, file_infos, is_index_path, join
from .manifest import FileEntry, IndexRef, Manifest
from .partitions import (
    discover_partitions,
    kept_by_partitions,
    partition_dataset,
    polars_semantics,
    with_partition_fields,
)
from .read import statistics_groups
from .seen import UNSEEN, Seen
from .tombstones import with_returned_files

ds = lazy_module("pyarrow.dataset")  # it imports pandas: only a pyarrow read pays that

# Planning reads that average under this many bytes are done in the calling thread on a
# local disk (bench/bench_cold.py: 1,000 index windows of ~8 KB, a first needle in 250
# against 430 ms on the pool; 20 windows of ~1 MB, 120 against 85 ms: those stay on the pool).
QUICK_READ_BYTES = 64 << 10
# ... and so are reads totalling under this many bytes, whatever their average: a few windows
# of a few hundred kB cost less than starting the pool's threads, which the first query of a
# process does (the issue lake's 8 bloom windows of 150 kB: a first needle in ~25 against ~29 ms).
QUICK_TOTAL_BYTES = 2 << 20


def parquet_format() -> ds.ParquetFileFormat:
    """The format of datasets opened by path: one object in the process, so the fragments
    made with it are shared too."""
    return facts.interned(("parquet format",), ds.ParquetFileFormat)


def dictionary_format(base: ds.ParquetFileFormat, names: frozenset[str]) -> ds.ParquetFileFormat:
    """``base`` reading ``names`` as dictionaries: one object per (format, names) in the
    process, so the fragments made with it are shared too."""
    facts.interned(("format", id(base)), lambda: base)  # (holds the base: its id stays its own)

    def make() -> ds.ParquetFileFormat:
        given = base.read_options  # (a format given by the user: its other read options kept)
        options = ds.ParquetReadOptions(dictionary_columns=sorted(names | set(given.dictionary_columns)),
                                        coerce_int96_timestamp_unit=given.coerce_int96_timestamp_unit,
                                        binary_type=given.binary_type, list_type=given.list_type)  # fmt: skip
        return ds.ParquetFileFormat(read_options=options, default_fragment_scan_options=base.default_fragment_scan_options)

    return facts.interned(("dictionary format", id(base), names), make)


def window_bytes(entry: FileEntry, columns: frozenset[str]) -> int:
    """The bytes of ``columns``' index windows in ``entry``'s index file (the whole index
    when its layout is not recorded; 0 when it is embedded in the manifest)."""
    index = entry.index
    if index is None or index.embedded is not None:
        return 0
    if not index.layout:
        return index.size
    return sum(w[1] for c in columns for w in index.layout.get(c, {}).values())


def _schema_names(files: Any, text: str) -> list[str]:
    """An index schema's columns; one that does not parse is reported by an entry holding it (naming the manifest)."""
    try:
        return IndexRef({}, text, 0).arrow_schema().names
    except CorruptManifestError:
        files.entry_at(files.table.column("index_schema").to_pylist().index(text))
        raise


def _sized_vector(dv: DeletionVector) -> tuple[DeletionVector, int]:
    return dv, 64 + dv.cardinality // 2


class LakeFiles:
    """A lake's data files at one manifest version, and what the process knows of them.

    ``source``: a ``pyarrow.dataset.FileSystemDataset`` whose files, schema, format and
    partitioning are used as they are; ``only``: an explicit list of files (relative
    paths); else every Parquet file under the root, as ``pyarrow.dataset`` finds them.
    """

    #: Footers are read by pyarrow through the files' fragments (the one footer read a file
    #: read by pyarrow needs). A reader that reads with another engine (arrowidx.polars) sets
    #: it False: footers are then read by arrowidx alone, and pyarrow.dataset never loaded.
    footers_from_fragments = True

    def __init__(self, store: Store, root: str, *, on_stale_deletions: str = "raise", source: Any = None,
                 partitioning: Any = "hive", only: list[str] | None = None, schema: pa.Schema | None = None,
                 format: Any = None):  # fmt: skip
        self.on_stale_deletions = check_stale_option(on_stale_deletions)
        self.store, self.fs = store, store.fs  # (pyarrow reads data files through fs)
        self.root, self.source, self.only = root, source, only
        self._format = source.format if source is not None else format  # (a ParquetFileFormat given: its read options)
        #: the dataset schema given (pyarrow's ``dataset(schema=)``): files are read cast to it
        self.given_schema = schema
        self.given_format = format  # (a ParquetFileFormat given: reads use its options)
        # facts about data files are shared with every reader of the process when the store
        # stamps changes; else they stay this object's (see arrowidx.facts)
        self._token: int | None = None if store.stamps else facts.identity_token()
        #: each file's partition expression (Hive folders, or the source dataset's)
        self.partition_expressions: dict[str, pc.Expression] = {}
        self.partitioning_spec = partitioning  # Hive folders (lake/partitions.py); a source keeps its own
        self.partitioning: ds.Partitioning | None = None
        if source is not None:
            for fragment in source.get_fragments():
                self.partition_expressions[posixpath.relpath(fragment.path, root)] = fragment.partition_expression
        self.manifest: Manifest = load_manifest_shared(store, root)
        self.committed = self.manifest  # the version as committed (manifest: as read, see use_manifest)
        self._lock = threading.Lock()
        #: held by an adapter that plans from several threads (one plan of this snapshot at a time)
        self.planning_lock = threading.Lock()
        self._freshness: dict[tuple, tuple[FileEntry, str, bool]] = {}
        self._seen = Seen()  # the files as this query found them (lake/seen.py)
        self._keys: dict[str, tuple] = {}  # file identity per path, from _seen
        self._listed_now, self._queried = False, False  # _seen is a listing just made (it serves that query); a query began
        #: plan from the manifest alone (an object store): nothing listed or stat'ed, data files read
        #: conditionally (one replaced since: :meth:`object_changed`); a listing on ``refresh(listing=True)``
        self.from_manifest = store.plans_from_manifest and source is None and only is None and self.manifest.version > 0
        # local: names only, stats taken now would not be the first query's (a file rewritten before it: a wrong SKIP)
        self._files = self._discover(listing=not self.from_manifest, stats=not store.quick_reads)
        self._listed_now = self._listed_now and not store.quick_reads  # (elsewhere a stat per file is a request)
        if self.from_manifest:  # pyarrow reads each data file as the object planned (If-Match)
            self.fs = conditional_filesystem(store, self._expected)
        self._schema: pa.Schema | None = schema if schema is not None else source.schema if source is not None else None
        self._offsets: dict[tuple, np.ndarray] = {}
        self._counts: dict[tuple, list[int]] = {}
        self._nonempty: dict[tuple, list[int]] = {}
        self._indexed: tuple[tuple, set[str]] = ((), set())
        self._dict_format: tuple[ds.ParquetFileFormat, set[str]] | None = None
        self._absolute: tuple[list[str] | None, list[str]] = (None, [])  # files, and their full paths
        self._prepared: tuple = ()  # (manifest version, identities, columns) when every file was last prepared
        self._manifest_deletes: tuple = (None, False)  # (manifest, whether it lists deleted rows)
        self._manifest_rows: tuple = (None, None, None)  # (files, file table, their rows in it)
        self._fields: tuple = (None, None, set())  # (expr, schema, fields): columns_of the last expression
        self._partition_dataset: tuple = (None, None)  # (files, their partition_dataset)
        self.use_manifest(self.manifest)

    def use_manifest(self, manifest: Manifest) -> None:
        """Read the committed ``manifest`` (the current version, or one a query is pinned
        to): with tombstones, a data file it does not list whose content a tombstone holds
        (moved back, restored) is read with those deletions (:mod:`arrowidx.lake.tombstones`)."""
        self.committed = manifest
        if manifest.tombstones:
            unlisted = {rel: self.info(rel) for rel in self.files if rel not in manifest.files}
            manifest = with_returned_files(manifest, unlisted, self.content_xxh64)
        self.manifest = manifest

    @property
    def format(self) -> ds.ParquetFileFormat:
        """The Parquet format the files are read with (made on first use: pyarrow.dataset is imported only then)."""
        if self._format is None:
            self._format = parquet_format()
        return self._format

    #: 0-byte files under the root are not data files (``arrowidx.polars.scan``: Polars skips
    #: them); pyarrow.dataset's rule, kept by :func:`arrowidx.dataset`, reads them and fails
    skip_empty = False
    #: names starting with ``_`` or ``.`` are data files too (``arrowidx.polars.scan``: Polars
    #: reads them), except an old lake's ``_arrowidx/``; pyarrow.dataset's rule skips them
    hidden_files = False
    #: file names starting with one of these are not data files (Polars' ``hidden_file_prefix``)
    hidden_prefixes: tuple[str, ...] = ()
    #: a column missing from a later file: "raise" or "insert" (NULLs), for Polars' reader
    #: (``missing_columns``); pyarrow's reads fill NULLs, as pyarrow.dataset does
    missing_columns = "raise"

    def _prefixed(self, path: str) -> bool:
        return bool(self.hidden_prefixes) and posixpath.basename(path).startswith(self.hidden_prefixes)

    # -- which files ---------------------------------------------------------------------------
    @property
    def files(self) -> list[str]:
        """Data files (relative paths) in read order, as found when opened (or refreshed)."""
        return self._files

    def _discover(self, listing: bool = True, stats: bool = True) -> list[str]:
        if self.source is not None:
            return list(self.partition_expressions)
        if self.only is not None:
            return self._partitioned([r for r in self.only if not self._prefixed(r)])
        if not listing:  # the manifest's files, as it recorded them
            entries = self.committed.files
            rels = sorted(r for r in entries if not self._prefixed(r))
            self._seen, self._keys = Seen(), {}
            if hasattr(entries, "identities"):  # a file table: its vector columns, no entry materialised
                self._seen.infos = {rel: ObjectInfo(join(self.root, rel), size, mtime_ns, stamp)
                                    for rel, size, mtime_ns, stamp in entries.identities(entries.rows_of(rels))}  # fmt: skip
            else:
                self._seen.infos = {rel: ObjectInfo(join(self.root, rel), entries[rel].size, entries[rel].mtime_ns,
                                                    entries[rel].stamp) for rel in rels}  # fmt: skip
            self._listed_now = True
            return self._partitioned(rels)
        if not stats and not (self.skip_empty or self.hidden_files or self.hidden_prefixes):  # (the names alone)
            (rels, folders), self._seen, self._keys = self.store.list_names(self.root), Seen(), {}
            return self._partitioned(rels, folders)
        listed = self.store.list_stats(self.root, hidden=self.hidden_files)  # one listing: the files, their sizes and stamps
        keep = np.ones(len(listed), bool)
        if self.skip_empty:  # (Polars' rule: a folder's 0-byte files are no data files)
            keep &= listed.size > 0
        if self.hidden_files:  # (Polars' rule: names starting with _ or . are data files too; arrowidx's own are not)
            keep &= np.fromiter((not is_index_path(rel) for rel in listed.paths), bool, len(listed))
        if self.hidden_prefixes:
            keep &= np.fromiter((not self._prefixed(rel) for rel in listed.paths), bool, len(listed))
        folders = listed.folders
        if not keep.all():
            listed, folders = listed.take(np.flatnonzero(keep)), None
        rels = listed.paths
        self._seen, self._keys = Seen(rels, listed), {}
        self._listed_now = True
        return self._partitioned(rels, folders)

    def _partitioned(self, files: list[str], folders: list[str] | None = None) -> list[str]:
        """``files``, noting their Hive partitions (:mod:`arrowidx.lake.partitions`).
        ``folders``: the folders holding them, when the listing knows them (all at the root:
        one file is asked about, its expression is every file's)."""
        one = folders == [""] and len(files) > 1
        found = discover_partitions(files[:1] if one else files, self.partitioning_spec, self.root, lambda: self._first_schema(files))
        partitioning, expressions = found[0], dict.fromkeys(files, found[1][files[0]]) if one and found[1] else found[1]
        if partitioning is not None or self.partitioning is not None:
            self.partitioning = partitioning
            self.partition_expressions = expressions
        return files

    def _first_schema(self, files: list[str]) -> pa.Schema | None:
        """The Arrow schema of the first of ``files`` (None when it is no Parquet file: the
        read meets that where it reads the file), read again only when that file changed."""
        info = self._seen.known(files[0], join(self.root, files[0]))
        info = None if info is UNSEEN else info
        key = (files[0], None) if info is None else (files[0], info.size, info.mtime_ns, info.stamp)
        known = getattr(self, "_first_schema_known", None)
        if known is not None and known[0] == key and info is not None:
            return known[1]
        try:
            schema = read_footer(self.store, join(self.root, files[0]), info.size if info is not None else None).metadata.schema.to_arrow_schema()
        except (ArrowIdxError, OSError):
            schema = None
        self._first_schema_known = (key, schema)
        return schema

    def refresh(self, listing: bool = False) -> None:
        """Re-read the committed manifest (when its version changed), the file list and the
        files' sizes and times. Planning from the manifest (:attr:`from_manifest`), the file
        list is the manifest's unless ``listing`` (then the folder is listed: files not
        indexed yet are read too, until the next refresh)."""
        committed = self.committed
        if committed.version == 0 or latest_version(self.store, self.root) != committed.version:
            committed = load_manifest_shared(self.store, self.root)
        if self.from_manifest and not listing:
            if committed is self.committed:
                return  # the same version: its files, as known (a file found changed stays stat'ed)
            self.committed = committed  # (the file list below is the new version's)
            self.manifest = committed
        files = self._discover(listing=listing or not self.from_manifest)
        if self.source is None and self.given_schema is None and files[:1] != self._files[:1]:
            self._schema, self._dict_format = None, None  # inferred from the first file, as pyarrow does
        if files != self._files:  # (the same list object otherwise: what is cached per list stays)
            self._files = files
        elif self._seen.files is files:
            self._seen.use(self._files, self._seen.stats)
        if committed is not self.committed or committed.tombstones:
            self.use_manifest(committed)
        if not self._listed_now:
            self.forget_file_infos()

    def partition_candidates(self, filter) -> list[str]:
        """The files whose partition may hold a row matching ``filter`` (a ``pc.Expression``
        naming a partition column), decided from their folder names alone before any of
        them is opened: :attr:`files` itself (the same list) when the partitions rule none out."""
        files = self.files
        if self.partitioning is None or not isinstance(filter, pc.Expression) or not self.partition_expressions:
            return files
        if not (self.columns_of(filter) & set(self.partitioning.schema.names)):
            return files
        if self._partition_dataset[0] is not files:
            dataset = partition_dataset(files, self.partition_expressions, self.absolute_paths(), self.schema, self.format, self.fs)
            self._partition_dataset = (files, dataset)
        kept = kept_by_partitions(self._partition_dataset[1], filter)
        if len(kept) == len(files):
            return files
        return [rel for rel, path in zip(files, self.absolute_paths()) if path in kept]

    def restricted(self, files: list[str]) -> LakeFiles:
        """A view of this snapshot with only ``files`` (the ones a partition filter keeps),
        sharing what is known of them (a query through it takes the listing; the next stats anew)."""
        view = copy.copy(self)
        view._files, view._partition_dataset, view._seen, self._listed_now = files, (None, None), copy.copy(self._seen), False
        return view

    def partition_expression(self, rel: str) -> pc.Expression | None:
        """The file's partition expression (None outside any partition)."""
        return self.partition_expressions.get(rel)

    # -- identities ----------------------------------------------------------------------------
    def forget_file_infos(self) -> None:
        """Stat the files again at their next use: once per query, so a file changed since
        the last query is seen as changed. A query that listed the files uses the listing."""
        self._queried = True
        if self._listed_now:
            self._listed_now = False
            return
        if self.from_manifest:
            return  # never stat'ed: a file read is checked by its conditional read
        self._seen, self._keys = Seen(), {}

    def restat(self, rels: list[str]) -> None:
        """Stat ``rels`` again now (only those; planning from the manifest, none: a file read
        is checked by its conditional read)."""
        if self.from_manifest:
            return
        self._restat(rels)

    def _restat(self, rels: list[str]) -> None:
        self._seen.restat(file_infos(self.store, self.root, rels))
        for rel in rels:
            self._keys.pop(rel, None)

    def object_changed(self, path: str) -> bool:
        """A conditional read found the data file ``path`` (full path) not the one planned
        (:class:`~arrowidx.storage.ObjectChangedError`) or gone: stat it now, so the next
        plan reads it as it is (stale: in full; gone: not at all). False when it is not one
        of this snapshot's files, or was stat'ed already."""
        rel = posixpath.relpath(path, self.root) if self.root not in ("", ".") else path
        if rel not in self._seen.infos:
            return False
        before = self._seen.infos.get(rel)
        self._restat([rel])
        now = self._seen.infos.get(rel)
        if now is None:  # gone (a listing would not have it)
            self._files = [f for f in self._files if f != rel]
            self._seen.infos.pop(rel, None)
            self._absolute = (None, [])
            return True
        return now != before

    def _expected(self, path: str) -> ObjectInfo | None:
        """The object a data file at ``path`` (full path) is read as (None: any)."""
        prefix = self.root.rstrip("/") + "/" if self.root not in ("", ".") else ""
        return self._seen.infos.get(path[len(prefix) :] if prefix and path.startswith(prefix) else path)

    def use_infos(self, infos: dict[str, ObjectInfo | None]) -> None:
        """Take ``infos`` (a writer's stats of the files, by relative path) as this query's."""
        self._seen.restat(infos)
        self._keys = {}

    def open_data(self, rel: str) -> pa.NativeFile:
        """The data file opened for reading: conditionally (the object planned, or
        :class:`~arrowidx.storage.ObjectChangedError`) when planning from the manifest."""
        path, info = join(self.root, rel), self.info(rel)
        if self.from_manifest and info is not None:
            return self.store.open_if_same(path, info, "data file")
        return self.fs.open_input_file(path)

    def info(self, rel: str) -> ObjectInfo | None:
        """The file as this query's listing or stat found it (None: gone). The first file
        asked about that the query has no stats of stats every file at once (before the
        first query, opening asks about one file: its schema)."""
        found = self._seen.known(rel, join(self.root, rel))
        if found is UNSEEN and self._seen.stats is None and self._queried and rel in self.files:
            self.stat_files()
            found = self._seen.known(rel, join(self.root, rel))
        if found is UNSEEN:
            found = self._seen.infos[rel] = file_infos(self.store, self.root, [rel])[rel]
        return found

    def stat_files(self) -> None:
        """Stat every file in one call (columns, no object per file), unless this query
        has stats of them already (its listing)."""
        if self._seen.files is not self.files:
            stats = self.store.stat_many(self.absolute_paths())
            stats.paths = self.files
            self._seen.use(self.files, stats)

    def file_stats(self) -> FileStats:
        """This query's stats of :attr:`files`, in their order (:meth:`stat_files` unless known)."""
        found = self._seen.aligned(self.files)
        if found is None:
            self.stat_files()
            found = self._seen.stats
        return found

    def still_indexed(self, positions: np.ndarray, table: Any, rows: np.ndarray) -> np.ndarray:
        """Of the files at ``positions`` of :attr:`files`, which are still the data files
        rows ``rows`` of the manifest's file table describe (their identity as indexed:
        size, modification time and change stamp), for every file at once from this query's
        stats (:func:`~arrowidx.lake.freshness.still_indexed`; planned from the manifest: all,
        read conditionally); a file stat'ed again since is decided by what that found."""
        if self._token is not None:  # (no change stamps: nothing is the file indexed by its stats alone)
            return np.zeros(len(positions), bool)
        same = np.ones(len(positions), bool) if self.from_manifest else still_indexed(self.file_stats(), positions, table, rows)
        files, restated = self.files, self._seen.restated
        again = [k for k, at in enumerate(positions.tolist()) if files[at] in restated] if restated else []
        if again:
            same[again] = [self.identity(files[positions[k]]) == i for k, i in zip(again, table.identities(rows[again]))]
        return same

    def identity_of(self, rel: str, info: ObjectInfo | None) -> tuple:
        """``(rel, size, mtime, stamp)`` of a file as ``info`` describes it: what the facts
        of a data file are kept under (with this object's token where the store stamps
        nothing)."""
        if info is None:
            return (rel, None, None, self._token)
        return (rel, info.size, info.mtime_ns, info.stamp if self._token is None else self._token)

    def identity(self, rel: str) -> tuple:
        """The data file's identity as this query found it (:meth:`identity_of`): what is
        cached of a file is cached under it."""
        key = self._keys.get(rel)
        if key is None:
            key = self._keys[rel] = self.identity_of(rel, self.info(rel))
        return key

    def known_identities(self) -> dict[str, tuple]:
        """The identities of every file this query (stat'ed now if need be), by path."""
        list(map(self.identity, self.files))
        return self._keys

    def fact_key(self, kind: str, rel: str, *more) -> tuple:
        """The key of a ``kind`` of fact about the data file in :mod:`arrowidx.facts`."""
        return (kind, self.store.key, join(self.root, rel), *self.identity(rel)[1:], *more)

    def absolute_paths(self) -> list[str]:
        """The full paths of :attr:`files` (built once per file list)."""
        files = self.files
        if self._absolute[0] is not files:
            prefix = join(self.root, "x")[:-1]  # (join of each file, as one prefix)
            self._absolute = (files, [prefix + rel for rel in files])
        return self._absolute[1]

    def fresh(self, entry: FileEntry | None) -> bool:
        """Whether the data file is still the one ``entry`` describes (``entry_is_fresh``:
        by the store's change stamp, else by the content hash), remembered per file
        identity and manifest entry: a scan asks it of every file."""
        if entry is None:
            return False
        key = self.identity(entry.path)
        known = self._freshness.get(key)
        if known is not None and known[0] is entry and known[1] == self.on_stale_deletions:
            return known[2]
        fresh = entry_is_fresh(entry, self.info(entry.path), lambda: self.read_footer(entry.path),
                               content=lambda: self.content_xxh64(entry.path),
                               on_stale_deletions=self.on_stale_deletions)  # fmt: skip
        self._freshness[key] = (entry, self.on_stale_deletions, fresh)  # holds the entry: its id stays its own
        return fresh

    # -- footers and fragments -----------------------------------------------------------------
    def read_footer(self, rel: str) -> Footer:
        """The data file's footer and fingerprint (our own read), once per file identity
        in the process."""
        info = self.info(rel)
        path = join(self.root, rel)

        def make():
            try:
                footer = read_footer(self.store, path, info.size if info is not None else None)
            except (ArrowIdxError, OSError):
                if self.from_manifest and info is not None and not same_object(self.store.stat([path])[0], info):
                    raise ObjectChangedError(path) from None  # (its size as indexed: not the file's now)
                raise
            return footer, footer.metadata.serialized_size

        return facts.FOOTERS.get(self.fact_key("footer", rel), make)

    def content_xxh64(self, rel: str) -> str:
        """The XXH64 of the data file's whole content (what identifies it when its change
        stamp is not the one indexed), read once per file identity in the process."""
        info = self.info(rel)
        if info is None:
            raise FileNotFoundError(join(self.root, rel))
        make = lambda: (content_xxh64(self.store, join(self.root, rel), info.size), 64)  # noqa: E731
        return facts.DERIVED.get(self.fact_key("content", rel), make)

    def fragment(self, rel: str, *, dictionary: bool = False) -> ds.ParquetFileFragment:
        """pyarrow's fragment of one data file (its partition expression, footer loaded by
        pyarrow), made once per file identity in the process. ``dictionary``: one that reads
        the dataset's dictionary-encoded string columns as dictionaries
        (:meth:`dictionary_format`)."""
        fmt = self.dictionary_format()[0] if dictionary else self.format
        partition = self.partition_expressions.get(rel)
        key = self.fact_key("fragment", rel, id(fmt), None if partition is None else str(partition))
        info = self.info(rel)

        def make():
            # planned from the manifest, every read of the file is conditional on the object
            # planned (its fragment is kept under that identity: the object is bound here)
            fs = conditional_filesystem(self.store, lambda path: info) if self.from_manifest and info is not None else self.fs
            fragment = fmt.make_fragment(
                join(self.root, rel), fs, partition_expression=partition if partition is not None else pc.scalar(True),
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

    def footer(self, rel: str) -> pq.FileMetaData:
        """The data file's parsed footer: ours when it was read for its fingerprint (or
        when :attr:`footers_from_fragments` is False), else pyarrow's, through the file's
        fragment."""
        held = facts.FOOTERS.peek(self.fact_key("footer", rel))
        if held is not None:
            return held.metadata
        return self.fragment(rel).metadata if self.footers_from_fragments else self.read_footer(rel).metadata

    def dictionary_format(self) -> tuple[ds.ParquetFileFormat, set[str]]:
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
            self._dict_format = (dictionary_format(self.format, frozenset(names)) if names else self.format, names)
        return self._dict_format

    def row_count(self, rel: str) -> int:
        return self.footer(rel).num_rows

    def row_group_offsets(self, rel: str) -> np.ndarray:
        """First row of each row group, and the row count at the end (cached per file identity)."""
        key = self.identity(rel)
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

    def row_groups(self, rel: str) -> tuple[int, list[int]]:
        """How many row groups the file has, and those holding rows."""
        self.row_group_offsets(rel)
        key = self.identity(rel)
        return len(self._counts[key]), self._nonempty[key]

    def statistics_groups(self, rel: str, expr: pc.Expression, groups: list[int]) -> list[int]:
        """``groups`` minus those pyarrow's statistics and partition pruning rule out."""
        return statistics_groups(self.fragment(rel), expr, self.schema, groups)

    @property
    def schema(self) -> pa.Schema:
        """The dataset schema, as pyarrow.dataset infers it (the first file's, with the partition fields)."""
        if self._schema is None:
            if not self.files:
                raise ArrowIdxError(f"{self.root} has no data files: {NO_DATA_FILES}")
            first = self.files[0]  # (a format given reads the file with its read options: pyarrow's types for them)
            found = self.fragment(first).physical_schema if self.given_format is not None else self.footer(first).schema.to_arrow_schema()
            self._schema = with_partition_fields(found, self.partitioning, replace=polars_semantics(self.partitioning_spec))
        return self._schema

    def columns_of(self, expr) -> set[str]:
        """The dataset columns ``expr`` reads (every field it names: a superset of what its
        bound predicate reads; one parse per expression, which a query asks more than once)."""
        if expr is None:
            return set()
        last, last_schema, fields = self._fields
        schema = self.schema
        if last is not expr or last_schema is not schema:
            fields = columns_named(expr, schema)
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
                ensure_inside(self.store, self.root, source, "index file")
                container = SparseContainer(ref.layout, ref.size, lambda ranges: self._index_ranges(source, ranges), source,
                                            listed=entry.where_listed())  # fmt: skip
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

    def indexed_columns(self) -> set[str]:
        """Every column some file's index covers, in the current manifest."""
        key = (self.manifest.version, len(self.manifest.files))
        if self._indexed[0] != key:
            files = self.manifest.files
            if hasattr(files, "distinct"):  # a file table: its distinct index schemas, no entry materialised
                names = {name for text in files.distinct("index_schema") for name in _schema_names(files, text)}
            else:
                schemas = {e.index.schema: e.index for e in files.values() if e.index is not None}
                names = {name for ref in schemas.values() for name in ref.arrow_schema().names}
            self._indexed = (key, names)
        return self._indexed[1]

    def vector_key(self, entry: FileEntry) -> tuple:
        ref = entry.deletion
        return ("dv", self.store.key, join(self.root, ref.file), ref.offset, ref.length, ref.xxh64, entry.path)

    def deletion_vector(self, rel: str) -> DeletionVector | None:
        """The deletion vector of a fresh file (None if it has none or is stale): its range
        of the deletion file read alone, checked by its checksum, once per process."""
        entry = self.manifest.files.get(rel)
        if entry is None or entry.deletion is None or not self.fresh(entry):
            return None
        path = join(self.root, entry.deletion.file)
        return facts.DELETIONS.get(self.vector_key(entry), lambda: _sized_vector(self._read_vector(entry, path)))

    def _read_vector(self, entry: FileEntry, path: str) -> DeletionVector:
        ensure_inside(self.store, self.root, path, "deletion file")
        try:
            record = self.store.get_range(path, entry.deletion.offset, deletion_record_length(entry.deletion), "deletion-vectors file")
        except FileNotFoundError:
            raise CorruptIndexError("deletion-vectors file is missing (deleted or never written)", source=path) from None
        return deletion_vector_of(entry, path, record)

    def read_vectors(self, entries: list[FileEntry]) -> None:
        """The vectors of ``entries`` (all in one deletion file) read in one call (nearby
        ranges in one request on object stores) and kept in the process's store."""
        path = join(self.root, entries[0].deletion.file)
        ensure_inside(self.store, self.root, path, "deletion file")
        records = [(e.deletion.offset, deletion_record_length(e.deletion)) for e in entries]
        try:
            blobs = self.store.get_ranges(path, records, "deletion-vectors file")
        except FileNotFoundError:
            raise CorruptIndexError("deletion-vectors file is missing (deleted or never written)", source=path) from None
        for entry, blob in zip(entries, blobs):
            dv = deletion_vector_of(entry, path, blob)
            facts.DELETIONS.put(self.vector_key(entry), dv, _sized_vector(dv)[1])

    def has_deletions(self) -> bool:
        """True when the manifest lists deleted rows for some file (asked once per manifest)."""
        manifest, deletes = self._manifest_deletes
        if manifest is not self.manifest:
            manifest = self.manifest
            if hasattr(manifest.files, "column"):  # a file table: its column of deleted rows, every file at once
                deletes = bool((manifest.files.column("deleted") > 0).any())
            else:
                deletes = any(e.deletion is not None for e in manifest.files.values())
            self._manifest_deletes = (manifest, deletes)
        return deletes

    def manifest_rows(self) -> np.ndarray:
        """The row of each of :attr:`files` in the manifest's file table (-1: none), once per file list and manifest."""
        files, table = self.files, self.manifest.files
        held = self._manifest_rows
        if held[0] is not files or held[1] is not table:
            rows = np.arange(len(files), dtype=np.int64) if table.paths == files else table.rows_of(files)
            self._manifest_rows = held = (files, table, rows)
        return held[2]

    def may_hold_rows(self) -> bool:
        """False only when the manifest lists every file, each with no row (an empty lake:
        pyarrow's filter then runs no kernel, see ``check_expression``)."""
        files = self.manifest.files
        if hasattr(files, "rows_of"):  # a file table: its column of rows (no entry materialised)
            at = self.manifest_rows()
            return bool((at < 0).any() or (files.column("rows")[at] > 0).any())
        return any(rel not in files or files[rel].rows for rel in self.files)

    # -- reading what planning needs, many files at once -------------------------------------------
    def quick(self, nbytes: int, count: int) -> bool:
        """Whether ``count`` reads of ``nbytes`` in all are done in this thread: on a store
        whose reads are quick (a local disk) when they average under :data:`QUICK_READ_BYTES`
        or total under :data:`QUICK_TOTAL_BYTES` (a hand-off to the I/O pool costs more than
        such a read; larger reads, checksums and footers overlap on the pool)."""
        return self.store.quick_reads and (nbytes < count * QUICK_READ_BYTES or nbytes < QUICK_TOTAL_BYTES)

    def prepare(self, files: list[str], columns: frozenset[str]) -> None:
        """Read, on the process's I/O pool (in this thread where reads are quick: a local
        disk), what planning ``files`` for an expression reading ``columns`` needs that the
        process does not hold yet: the content hash (or footer) of files whose freshness
        needs it (their change stamp is not the one indexed), and the bytes of the
        indexes of ``columns`` (one ranged read per file, when the manifest records where
        they lie). Nothing else: footers and deletion vectors of the files the indexes keep
        are read by :meth:`prepare_kept`."""
        if not files:
            return
        identities = list(map(self.identity, files))  # (the first stats every file at once, unless listed this query)
        stamp = None
        if files is self.files:
            stamp = (self.manifest.version, identities, columns)
            if stamp == self._prepared:
                return  # the same files, unchanged, with the same columns, as when last prepared
        entries = self.manifest.files
        todo = []
        for rel, identity in zip(files, identities):
            entry = entries.get(rel)
            if entry is None:
                continue
            known = self._freshness.get(identity)
            if known is None or known[0] is not entry:
                todo.append(rel)
            elif known[2] and entry.index is not None and columns:
                todo.append(rel)

        def load(rel: str) -> None:
            entry = entries[rel]
            if self.fresh(entry) and entry.index is not None and columns:
                try:
                    index = self.file_index(entry)
                    if index is not None:
                        index.load(columns)
                except ArrowIdxError:
                    pass  # planning meets (and reports) it

        facts.parallel(load, todo, inline=self.quick(sum(window_bytes(entries[rel], columns) for rel in todo), len(todo)))
        if stamp is not None:
            self._prepared = stamp

    def prepare_kept(self, kept: list[str]) -> None:
        """Read, on the I/O pool, the footers (pyarrow's fragments) and deletion vectors of
        the files ``kept`` to be read that the process does not hold yet."""
        if len(kept) < 2:
            return
        by_file: dict[str, list[FileEntry]] = {}  # the vectors to read, per deletion file
        for rel in kept:
            entry = self.manifest.files.get(rel)
            if entry is not None and entry.deletion is not None and self.fresh(entry):
                key = self.vector_key(entry)
                if not facts.DELETIONS.holds(key):
                    by_file.setdefault(join(self.root, entry.deletion.file), []).append(entry)
        jobs: list = [(self.fragment, rel) for rel in kept] + [(self.read_vectors, group) for group in by_file.values()]
        sizes = sum(e.size for e in map(self.manifest.files.get, kept) if e is not None)
        facts.parallel(lambda job: job[0](job[1]), jobs, inline=self.quick(sizes, len(kept)))
