"""``arrowidx.build``: index every data file of a Parquet dataset, incrementally.

Each file is read one indexed column at a time, row group by row group (a range bitmap's
column twice), and its indexes built in memory bounded by a batch and the indexes
(:mod:`arrowidx.passes`). Containers up to ``file-index.in-manifest-threshold``
bytes (default 500) are embedded in the manifest, larger ones go to
``_arrowidx/index/<data file>.<xxh64>-<writer>.index`` (named by content and by the build call
that wrote it, so a committed index file is never overwritten and a build that fails for good
removes only its own files; see :class:`Uploads`). Files are indexed on a thread pool (pyarrow and numpy release the GIL),
and the manifest is committed once at the end with one exclusive create, so a crash leaves
the previous version valid; when another writer commits first the build plans again against
the new version. An incremental build re-indexes files whose content changed (the XXH64 of
the whole file, :func:`~arrowidx.lake.footer.content_xxh64`, recorded for each file it
indexes), files indexed before content hashes existed, and indexes that fail their checksum.

Deletions belong to content: an entry with deletions whose file is gone leaves them in the
manifest as a tombstone, and a file with that content that appears again gets them back
(:mod:`arrowidx.lake.tombstones`); the report names both.

Builds remember: the manifest stores the options, ``build(path)`` with no options rebuilds
with them, new options are added to them, and an index is removed only on request
(``drop=["column"]`` or ``"column:type"``, or ``replace=True``). A build that would change
nothing commits nothing (the report says so and the version stays).
"""

from __future__ import annotations

import base64
import dataclasses
import difflib
import os
import posixpath
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .._faults import fault_point
from ..errors import (
    ArrowIdxError,
    CommitConflictError,
    CorruptIndexError,
    OptionError,
    StaleDeletionError,
    UnsupportedTypeError,
)
from ..file_index import index_container
from ..index.container import Container
from ..options import check_option_keys, in_manifest_threshold, parse_index_options
from ..options import merge_index_options as merge_options
from ..passes import ColumnSource, ParquetColumns
from ..progress import progress_bar
from ..storage import ObjectInfo, Store, storage_error
from .commit import commit_manifest, load_manifest, require_commit, with_commit_retries
from .footer import NO_DATA_FILES, content_xxh64, read_footer
from .freshness import check_stale_option, entry_is_fresh, load_index_bytes, same_content
from .lakeindex import FileKeys
from .layout import INDEX_DIR, file_infos, join, write_atomic
from .manifest import SEGMENTS_FORMAT, FileEntry, IndexRef, Manifest, checksum, schema_to_b64
from .source import open_lake
from .structure import commit_lake_index, keyed_columns
from .tombstones import bury, drop, reapply


@dataclass
class BuildReport:
    """What a build did: files (re)indexed, kept as they were, dropped, and how long it took."""

    root: str
    version: int
    indexed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    index_bytes: int = 0
    lake_index_bytes: int = 0  # bytes of lake-index runs written (arrowidx.lake.lakeindex)
    seconds: float = 0.0
    changed: bool = True  # False: nothing to do, no manifest version was written
    options: dict[str, str] = field(default_factory=dict)  # the options the dataset is indexed with
    # deleted rows per file whose deletions were kept as a tombstone (its entry left: the file
    # is gone, or other content replaced it), re-applied (its content came back), or
    # forgotten (an entry indexed before content hashes: nothing to key a tombstone by)
    tombstoned: dict[str, int] = field(default_factory=dict)
    restored: dict[str, int] = field(default_factory=dict)
    forgotten: dict[str, int] = field(default_factory=dict)
    # files whose content is the one indexed under a new change stamp (copied, touched): the
    # entry took the new stamp, so no reader hashes them again
    restamped: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        if not (self.indexed or self.unchanged):
            return (
                f"manifest v{self.version} at {self.root}: no data files to index: {NO_DATA_FILES}; the options"
                " are stored: run the build again once it holds Parquet files"
            )
        if not self.changed:
            return (
                f"nothing changed: manifest v{self.version} at {self.root} already indexes all"
                f" {len(self.unchanged)} file(s) with these options; nothing committed"
            )
        return (
            f"manifest v{self.version} at {self.root}: indexed {len(self.indexed)} file(s)"
            f" ({self.index_bytes:,} index bytes), {len(self.unchanged)} unchanged,"
            f" {len(self.removed)} removed, in {self.seconds:.2f}s"
            + (f"; {len(self.restamped)} re-stamped (same content, new stamp)" if self.restamped else "")
            + self.deletions_text()
        )

    def deletions_text(self) -> str:
        """What the build did with deletions of files that left or came back (empty: nothing)."""
        parts = []
        if self.tombstoned:
            parts.append(f"kept the {sum(self.tombstoned.values()):,} deleted row(s) of {_files(self.tombstoned)} as"
                         " tombstones (re-applied if that content returns, until arrowidx.vacuum)")  # fmt: skip
        if self.restored:
            parts.append(f"re-applied {sum(self.restored.values()):,} deleted row(s) to {_files(self.restored)}, whose"
                         " content returned")  # fmt: skip
        if self.forgotten:
            parts.append(f"FORGOT the {sum(self.forgotten.values()):,} deleted row(s) of {_files(self.forgotten)}"
                         " (indexed before content hashes: if that file returns, those rows are live)")  # fmt: skip
        return "".join(f"; {p}" for p in parts)


def _files(rows: Mapping[str, int], shown: int = 3) -> str:
    names = sorted(rows)
    listed = ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
    return f"{len(names)} file(s) ({listed})"


def index_one_file(
    store: Store,
    root: str,
    rel: str,
    info: ObjectInfo | pafs.FileInfo,
    options: Mapping[str, str],
    threshold: int,
    writer: str | None = None,
) -> FileEntry:
    """Build one data file's container and return its manifest entry (writing any .index file,
    named by its content and ``writer``, the build that wrote it: see :class:`Uploads`)."""
    specs = parse_index_options(options)
    columns = sorted({s.column for s in specs})
    footer = read_footer(store, join(root, rel), info.size)
    try:
        container, file_options, indexed_schema, rows, keys = _index_file(store.fs, join(root, rel), footer, specs, columns, options)
    except FileNotFoundError:
        raise
    except UnsupportedTypeError as e:  # name the file too: files of a lake may differ in type
        raise UnsupportedTypeError(f"{join(root, rel)}: {e}") from None
    except OSError as e:
        raise storage_error(e, join(root, rel), "data file") from None
    except pa.ArrowException as e:  # the footer parsed, the data does not
        raise CorruptIndexError(f"unreadable Parquet data: {e}", source=join(root, rel)) from None
    digest = checksum(container)
    ref = IndexRef(options=dict(file_options), schema=schema_to_b64(indexed_schema), size=len(container), xxh64=digest)
    if len(container) <= threshold:
        ref.embedded = base64.b64encode(container).decode()
    else:
        ref.file = f"{INDEX_DIR}/{rel}.{digest}{'-' + writer if writer else ''}.index"
        ref.layout = Container(container, ref.file).layout()  # so a query reads only its columns' bytes
        write_atomic(store, join(root, ref.file), container, root=root)
        fault_point("index-written")
    content = content_xxh64(store, join(root, rel), info.size)  # the file's identity when its stamp changes
    return FileEntry(rel, info.size, info.mtime_ns, rows, ref, fingerprint=footer.fingerprint, stamp=getattr(info, "stamp", None),
                     content_xxh64=content, keys=keys)  # fmt: skip


def _index_file(fs: pafs.FileSystem, path: str, footer, specs, columns: list[str], options: Mapping[str, str]):
    """The container of one data file: ``(bytes, the options used, the indexed schema, rows,
    the distinct key hashes of its keyed columns for the lake index)`` (``fs``: the store's
    pyarrow filesystem, which pyarrow reads the data through)."""
    with fs.open_input_file(path) as f:
        parquet = pq.ParquetFile(f, metadata=footer.metadata)
        schema = parquet.schema_arrow
        missing = [c for c in columns if schema.get_field_index(c) < 0]
        present = [c for c in columns if c not in missing]
        file_options = _options_for(options, missing)
        for spec in specs:  # size bloom filters for this file unless the user chose `items`
            if spec.index_type == "bloom-filter" and "items" not in spec.options and spec.column in present:
                file_options[f"file-index.bloom-filter.{spec.column}.items"] = str(max(parquet.metadata.num_rows, 1))
        indexed_schema = pa.schema([schema.field(c) for c in present])
        keys = FileKeys(indexed_schema, keyed_columns(indexed_schema))
        # column by column, each read row group by row group (again for a range bitmap's 2nd pass);
        # the first pass over a keyed column also collects its keys for the lake index
        keying = _Keying(ParquetColumns(parquet), keys)
        container = index_container(keying, file_options)
        found = {c: hashes if c in keying.read_whole else None for c, hashes in keys.finish().items()}  # (a column not read: not covered)
        return container, file_options, indexed_schema, parquet.metadata.num_rows, found


class _Keying(ColumnSource):
    """``source``'s columns, the first pass over each keyed column also added to ``keys``."""

    def __init__(self, source: ColumnSource, keys: FileKeys):
        self.source, self.keys, self.schema = source, keys, source.schema
        self.read_whole: set[str] = set()  # the keyed columns read to the end

    def read(self, column: str):
        tap = column in self.keys.types and column not in self.read_whole
        for array in self.source.read(column):
            if tap:
                self.keys.add_array(column, array)
            yield array
        if tap:
            self.read_whole.add(column)


def key_file(store: Store, root: str, entry: FileEntry) -> dict | None:
    """The lake-index keys of a data file indexed before the lake index (its keyed columns
    read): what a build upgrading such a lake adds for the files it does not index again."""
    schema = entry.index.arrow_schema() if entry.index is not None else None
    columns = keyed_columns(schema) if schema is not None else []
    if not columns:
        return None
    path = join(root, entry.path)
    try:
        table = pq.read_table(path, columns=columns, filesystem=store.fs, use_threads=False)
    except FileNotFoundError:
        return None  # gone since the plan: the next build drops it
    except OSError as e:
        raise storage_error(e, path, "data file") from None
    except pa.ArrowException as e:
        raise CorruptIndexError(f"unreadable Parquet data: {e}", source=path) from None
    if not table.schema.equals(pa.schema([schema.field(c) for c in columns]), check_metadata=False):
        return None  # another type than indexed: not covered
    keys = FileKeys(table.schema, columns)
    keys.add(table)
    return keys.finish()


def upgrading(plan: BuildPlan) -> bool:
    """Whether the build adds a lake index to a lake written without one (a column the
    indexes cover can be keyed): it then keys the files it does not index again too."""
    if plan.manifest.lake_index is not None or not plan.unchanged:
        return False
    entry = plan.manifest.files.get(plan.unchanged[0])
    return entry is not None and entry.index is not None and bool(keyed_columns(entry.index.arrow_schema()))


def _options_for(options: Mapping[str, str], missing: list[str]) -> dict[str, str]:
    """``options`` without the columns a particular file does not have (schema evolution)."""
    if not missing:
        return dict(options)
    out = {}
    for key, value in options.items():
        if key.endswith(".columns"):
            value = ",".join(c for c in value.split(",") if c.strip() and c.strip() not in missing)
            if not value:
                continue
        elif any(f".{m}." in key for m in missing):
            continue
        out[key] = value
    return out


def _check_columns(store: Store, root: str, rels: list[str], options: Mapping[str, str]) -> None:
    """A column to index must exist in at least one file (else it is surely a typo)."""
    wanted = {s.column for s in parse_index_options(options)}
    seen: set[str] = set()
    for rel in rels:
        if not wanted:
            return
        names = set(read_footer(store, join(root, rel)).metadata.schema.to_arrow_schema().names)
        wanted -= names
        seen |= names
    if wanted and rels:
        hints = [f"{w!r} (did you mean {c[0]!r}?)" if (c := difflib.get_close_matches(w, sorted(seen), n=1)) else repr(w) for w in sorted(wanted)]
        raise OptionError(f"column(s) {', '.join(hints)} to index are not a column of any data file (columns: {', '.join(sorted(seen))})")


@dataclass
class BuildPlan:
    """Which files a build must index: what :func:`plan_build` found and :func:`commit_build` needs.

    Shared by the local build and ``arrowidx.spark.build``, which only differ in who runs
    :func:`index_one_file` over ``todo``.
    """

    store: Store
    root: str
    options: dict[str, str]
    threshold: int
    manifest: Manifest
    base_version: int
    infos: dict[str, ObjectInfo]
    todo: list[str]
    unchanged: list[str]
    removed: list[str]
    started: float
    on_stale_deletions: str = "raise"
    repaired: list[str] = field(default_factory=list)  # unchanged files whose index failed its checksum
    # unchanged files whose content is the one indexed but whose change stamp is not (a copied
    # lake, a touch): their entries take the new stamp, so readers need not hash them again
    restamped: list[str] = field(default_factory=list)


def plan_build(source: Any, options: Mapping[str, object] | None = None, *, filesystem: pafs.FileSystem | None = None,
               incremental: bool = True, replace: bool = False, drop: Iterable[str] = (),
               on_stale_deletions: str = "raise", storage_options: Mapping[str, Any] | None = None,
               index_root: Any = None) -> BuildPlan:  # fmt: skip
    """Check the options and list the files to (re)index: new, changed (by content), with an
    index failing its checksum, or all if the options changed.

    ``options`` are added to the ones stored in the manifest (see :func:`merge_options`).
    A changed file with deletions raises :class:`StaleDeletionError` unless
    ``on_stale_deletions="read-full"`` (then it is re-indexed and its deletions forgotten).
    """
    check_stale_option(on_stale_deletions)
    started = time.perf_counter()
    store, root, explicit = open_lake(source, filesystem, storage_options, index_root, writing=True)
    check_option_keys(options or {}, what="arrowidx.build")
    manifest = load_manifest(store, root)
    options = merge_options(manifest.options, options, replace=replace, drop=drop)
    if not any(k.endswith(".columns") and v.strip() for k, v in options.items()):
        raise OptionError(
            "nothing to index: give index options, e.g. {'file-index.bitmap.columns': 'status'}"
            " (CLI: --bitmap, --bloom-filter, --range-bitmap or --bsi COLUMNS)"
        )
    parse_index_options(options)  # fail on bad options before touching anything
    threshold = in_manifest_threshold(options)
    if explicit is None:  # one listing: every data file with its size and change stamp
        listed = store.list(root)
        rels = [posixpath.relpath(i.path, root) for i in listed]
        infos = dict(zip(rels, listed))
    else:
        rels = [posixpath.relpath(p, root) for p in explicit]
        found = file_infos(store, root, rels)
        missing = [rel for rel, info in found.items() if info is None]
        if missing:
            raise ArrowIdxError(f"{join(root, missing[0])}: no such data file")
        infos = {rel: info for rel, info in found.items() if info is not None}
    todo, unchanged, repaired, restamped = [], [], [], []
    for rel in rels:
        entry, info = manifest.files.get(rel), infos[rel]
        fresh = entry is not None and _entry_fresh(store, root, entry, info, on_stale_deletions)
        same = fresh and entry.index is not None and entry.content_xxh64 is not None  # (else indexed again, once)
        if same and incremental and manifest.options == options and not _index_ok(store, root, entry):
            same = False
            repaired.append(rel)
        (unchanged if incremental and same and manifest.options == options else todo).append(rel)
        if fresh and (entry.stamp, entry.mtime_ns) != (info.stamp, info.mtime_ns):
            entry.stamp, entry.mtime_ns = info.stamp, info.mtime_ns  # the same content, proved: trust the new stamp
            restamped.append(rel)
    _check_columns(store, root, todo, options)
    if explicit is None:  # every data file was listed: an entry whose file is gone leaves
        removed = sorted(set(manifest.files) - set(rels))
    else:  # some files named: the other entries (and their deletions) stay as they are
        removed = []
        named = set(rels)
        others = [rel for rel in manifest.files if rel not in named]
        if others and manifest.options != options:
            raise OptionError(
                f"{root}: these options differ from the ones its other {len(others)} indexed file(s) were"
                f" built with ({_options_text(manifest.options)}); a build naming some files keeps the"
                f" dataset's options. Build the whole dataset ({root}) to change them"
            )
    return BuildPlan(store, root, options, threshold, manifest, manifest.version, infos, todo, unchanged, removed, started,
                     on_stale_deletions, repaired, restamped)  # fmt: skip


def _options_text(options: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(options.items())) or "none"


def _entry_fresh(store: Store, root: str, entry: FileEntry, info: ObjectInfo | None, on_stale_deletions: str) -> bool:
    footer = lambda: read_footer(store, join(root, entry.path), info.size)  # noqa: E731 (read only if needed)
    content = lambda: content_xxh64(store, join(root, entry.path), info.size)  # noqa: E731
    return entry_is_fresh(entry, info, footer, content=content, on_stale_deletions=on_stale_deletions)


def _index_ok(store: Store, root: str, entry: FileEntry) -> bool:
    """False when the index is missing or fails its checksum (the build repairs it)."""
    try:
        return load_index_bytes(store, root, entry) is not None
    except ArrowIdxError:
        return False


def commit_build(plan: BuildPlan, built: list[FileEntry], writer: str = "") -> BuildReport:
    """Merge the new entries into the manifest (keeping deletions of unchanged data) and commit
    once. Deletions leaving the manifest become tombstones; a new entry whose content a
    tombstone holds gets its deletions back (:mod:`arrowidx.lake.tombstones`)."""
    manifest = plan.manifest
    report = BuildReport(root=plan.root, version=plan.base_version, unchanged=plan.unchanged, removed=plan.removed,
                         options=dict(plan.options), restamped=plan.restamped)  # fmt: skip
    upgrade = any(e.keys is not None for e in manifest.files.values())  # (keys of files indexed before)
    upgrade = upgrade or manifest.read_format < SEGMENTS_FORMAT  # entries listed inline: into a file table
    if not built and not plan.removed and not plan.restamped and manifest.options == plan.options and plan.base_version > 0 \
            and not upgrade:  # fmt: skip
        report.changed = False
        report.seconds = time.perf_counter() - plan.started
        return report
    version = plan.base_version + 1
    for rel in plan.removed:  # only entries whose data file is gone leave the manifest
        entry = drop(manifest, rel, version)
        if entry.deletion is not None:
            (report.tombstoned if entry.content_xxh64 is not None else report.forgotten)[rel] = entry.deletion.cardinality
    for entry in built:
        old = manifest.files.get(entry.path)
        if old is not None and old.deletion is not None:
            if same_content(old, entry):
                entry.deletion = old.deletion  # same data, new index: deletions still apply
            elif plan.on_stale_deletions != "read-full":
                raise StaleDeletionError("changed while it was being indexed, and rows were deleted from it;"
                                         " run the build again", path=join(plan.root, entry.path))  # fmt: skip
            elif bury(manifest, old, version) is not None:  # forgotten here, kept for that content
                report.tombstoned[entry.path] = old.deletion.cardinality
        if entry.deletion is None and (back := reapply(manifest, entry)) is not None:
            report.restored[entry.path] = back.deletion.cardinality
        manifest.files[entry.path] = entry
        report.indexed.append(entry.path)
        report.index_bytes += entry.index.size
    report.indexed.sort()
    manifest.files = {rel: manifest.files[rel] for rel in sorted(manifest.files)}
    manifest.options = plan.options
    artifacts = commit_lake_index(plan.store, plan.root, manifest, writer)  # runs written before the commit
    report.lake_index_bytes = sum(len(b) for b in artifacts.values())
    manifest = commit_manifest(plan.store, plan.root, manifest, plan.base_version, artifacts=artifacts)
    report.version = manifest.version
    report.seconds = time.perf_counter() - plan.started
    return report


def build(
    source: Any,
    options: Mapping[str, object] | None = None,
    *,
    filesystem: pafs.FileSystem | None = None,
    progress: bool | None = None,
    incremental: bool = True,
    threads: int | None = None,
    replace: bool = False,
    drop: Iterable[str] = (),
    on_stale_deletions: str = "raise",
    storage_options: Mapping[str, Any] | None = None,
    index_root: Any = None,
) -> BuildReport:
    """Index every data file of ``source`` (a directory, a ``.parquet`` file, a list of files,
    a URI such as ``s3://bucket/lake``, or a ``pyarrow.dataset``).

    ``options`` are Paimon's keys (``file-index.<type>.columns``, per-column keys, and
    ``file-index.in-manifest-threshold``), added to the options the dataset was built with
    before (``None``: rebuild with those); ``drop=["col", "col:bitmap"]`` removes indexes,
    ``replace=True`` uses ``options`` alone. Incremental by default: a file whose content
    (the XXH64 of the whole file) and options are unchanged keeps its index, unless the index
    fails its checksum; files that disappeared leave the manifest (their deletions kept as
    tombstones for their content: ``report.tombstoned``, re-applied when it returns:
    ``report.restored``); a build that changes nothing
    commits nothing (``report.changed``). ``progress``: a bar on stderr; ``None`` means only
    when stderr is a terminal. ``on_stale_deletions="read-full"``: re-index a file that changed
    after rows were deleted from it and forget those deletions (default: ``StaleDeletionError``).
    ``index_root``: where the indexes go when not in the sidecar folder beside the data
    folder (``_<folder>.arrowidx/``): read-only data, a bucket's root; give readers the same.
    ``storage_options``: endpoint, region and credentials of an object-store URI
    (docs/object-stores.md). When another writer commits first, the build plans again on top
    of it (bounded retries), reusing the index files it already wrote; a build that fails
    for good removes the index files it wrote.
    """
    drop = tuple(drop)  # read again on every retry
    uploads = Uploads()
    try:
        return with_commit_retries(lambda: _build_once(source, options, filesystem, progress, incremental, threads,
                                                       replace, drop, on_stale_deletions, storage_options, uploads,
                                                       index_root))  # fmt: skip
    except BaseException:
        uploads.remove()
        raise


class Uploads:
    """What one call of a writer (``build``, ``arrowidx.spark.build``) uploaded over its
    commit attempts: the entries it built, by data-file identity and options, so that an
    attempt after a conflict reuses them (no re-indexing, no upload), and the index files it
    wrote, removed if the call fails for good. Index files are named by their content and
    :attr:`writer`, unique to the call, so no other writer's manifest references them and
    removing them is safe (but not after a commit whose outcome is unknown: it may have
    landed)."""

    def __init__(self) -> None:
        self.writer = uuid.uuid4().hex[:8]
        self.entries: dict[tuple, FileEntry] = {}
        self.files: list[tuple[Store, str]] = []  # (store, path) of the index files written
        self.outcome_unknown = False
        self._lock = threading.Lock()

    @staticmethod
    def key(rel: str, info: ObjectInfo | None, options: Mapping[str, str]) -> tuple | None:
        stamp = getattr(info, "stamp", None)
        if info is None or stamp is None:
            return None  # no change stamp: the file could have changed unseen; index it again
        return (rel, info.size, info.mtime_ns, stamp, tuple(sorted(options.items())))

    def built(self, plan: BuildPlan, rel: str) -> FileEntry | None:
        """The entry an earlier attempt built for this file as it is now, if any (a copy)."""
        key = self.key(rel, plan.infos.get(rel), plan.options)
        entry = self.entries.get(key) if key is not None else None
        return dataclasses.replace(entry) if entry is not None else None

    def add(self, plan: BuildPlan, rel: str, entry: FileEntry) -> None:
        with self._lock:
            if entry.index is not None and entry.index.file is not None:
                self.files.append((plan.store, join(plan.root, entry.index.file)))
            key = self.key(rel, plan.infos.get(rel), plan.options)
            if key is not None:
                self.entries[key] = dataclasses.replace(entry)

    def commit(self, plan: BuildPlan, built: list[FileEntry]) -> BuildReport:
        """:func:`commit_build`, noting a commit that failed with an unknown outcome."""
        try:
            return commit_build(plan, built, self.writer)
        except (CommitConflictError, StaleDeletionError):
            raise  # refused: nothing of ours was committed
        except BaseException:
            self.outcome_unknown = True
            raise

    def remove(self) -> None:
        """Remove the index files written (the call failed for good)."""
        if self.outcome_unknown:
            return
        for store, path in self.files:
            try:
                store.delete(path)
            except (OSError, ArrowIdxError):
                pass  # vacuum removes it later


def _build_once(source, options, filesystem, progress, incremental, threads, replace, drop, on_stale_deletions,
                storage_options=None, uploads: Uploads | None = None, index_root: Any = None) -> BuildReport:  # fmt: skip
    """One plan, index, commit round (repeated by :func:`build` when another writer commits first)."""
    uploads = uploads if uploads is not None else Uploads()
    plan = plan_build(source, options, filesystem=filesystem, incremental=incremental, replace=replace, drop=drop,
                      on_stale_deletions=on_stale_deletions, storage_options=storage_options, index_root=index_root)  # fmt: skip
    if will_commit(plan):
        require_commit(plan.store, plan.root)  # a store that cannot commit refuses before anything is uploaded
    tick = progress_bar(len(plan.todo), progress, "arrowidx build")
    workers = threads or min(len(plan.todo), os.cpu_count() or 2) or 1

    def work(rel: str) -> FileEntry:
        entry = uploads.built(plan, rel)
        if entry is None:
            entry = index_one_file(plan.store, plan.root, rel, plan.infos[rel], plan.options, plan.threshold, uploads.writer)
            uploads.add(plan, rel, entry)
        tick()
        return entry

    with ThreadPoolExecutor(max_workers=workers) as pool:
        built = list(pool.map(work, plan.todo))
        if upgrading(plan):  # a lake written before the lake index: key the files kept as they are
            entries = [plan.manifest.files[rel] for rel in plan.unchanged]
            for entry, keys in zip(entries, pool.map(lambda e: key_file(plan.store, plan.root, e), entries)):
                entry.keys = keys
    return uploads.commit(plan, built)


def will_commit(plan: BuildPlan) -> bool:
    """Whether this plan commits a manifest version (else the build changes nothing)."""
    return bool(plan.todo or plan.removed or plan.restamped or plan.manifest.options != plan.options or plan.base_version == 0
                or upgrading(plan))  # fmt: skip
