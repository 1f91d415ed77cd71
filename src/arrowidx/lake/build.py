"""``arrowidx.build``: index every data file of a Parquet dataset, incrementally.

Each file is read batch by batch, only its indexed columns, and streamed through
:func:`arrowidx.write_file_index`. Containers up to ``file-index.in-manifest-threshold``
bytes (default 500) are embedded in the manifest, larger ones go to
``_arrowidx/index/<data file>.<xxh64>.index`` (named by content, so a committed index file is
never overwritten). Files are indexed on a thread pool (pyarrow and numpy release the GIL),
and the manifest is committed once at the end with one exclusive create, so a crash leaves
the previous version valid; when another writer commits first the build plans again against
the new version. An incremental build re-indexes files whose content changed (fingerprint)
and indexes that fail their checksum.
"""

from __future__ import annotations

import base64
import os
import posixpath
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..errors import ArrowIdxError, OptionError, StaleDeletionError
from ..file_index import write_file_index
from ..options import in_manifest_threshold, parse_index_options
from .footer import read_footer
from .layout import (
    INDEX_DIR,
    FileEntry,
    IndexRef,
    Manifest,
    check_stale_option,
    checksum,
    commit_manifest,
    discover,
    entry_is_fresh,
    fault_point,
    file_infos,
    join,
    load_index_bytes,
    load_manifest,
    resolve,
    schema_to_b64,
    with_commit_retries,
    write_atomic,
)

BATCH_ROWS = 256 * 1024


@dataclass
class BuildReport:
    """What a build did: files (re)indexed, kept as they were, dropped, and how long it took."""

    root: str
    version: int
    indexed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    index_bytes: int = 0
    seconds: float = 0.0

    def __str__(self) -> str:
        return (
            f"manifest v{self.version} at {self.root}: indexed {len(self.indexed)} file(s)"
            f" ({self.index_bytes:,} index bytes), {len(self.unchanged)} unchanged,"
            f" {len(self.removed)} removed, in {self.seconds:.2f}s"
        )


def index_one_file(
    fs: pafs.FileSystem,
    root: str,
    rel: str,
    info: pafs.FileInfo,
    options: Mapping[str, str],
    threshold: int,
) -> FileEntry:
    """Build one data file's container and return its manifest entry (writing any .index file)."""
    specs = parse_index_options(options)
    columns = sorted({s.column for s in specs})
    footer = read_footer(fs, join(root, rel), info.size)
    with fs.open_input_file(join(root, rel)) as f:
        parquet = pq.ParquetFile(f, metadata=footer.metadata)
        schema = parquet.schema_arrow
        missing = [c for c in columns if schema.get_field_index(c) < 0]
        present = [c for c in columns if c not in missing]
        file_options = _options_for(options, missing)
        for spec in specs:  # size bloom filters for this file unless the user chose `items`
            if spec.index_type == "bloom-filter" and "items" not in spec.options and spec.column in present:
                file_options[f"file-index.bloom-filter.{spec.column}.items"] = str(max(parquet.metadata.num_rows, 1))
        batches = parquet.iter_batches(batch_size=BATCH_ROWS, columns=present, use_threads=False)
        indexed_schema = pa.schema([schema.field(c) for c in present])
        container = write_file_index(_with_schema(batches, indexed_schema), file_options)
        rows = parquet.metadata.num_rows
    digest = checksum(container)
    ref = IndexRef(options=dict(file_options), schema=schema_to_b64(indexed_schema), size=len(container), xxh64=digest)
    if len(container) <= threshold:
        ref.embedded = base64.b64encode(container).decode()
    else:
        ref.file = f"{INDEX_DIR}/{rel}.{digest}.index"
        write_atomic(fs, join(root, ref.file), container, root=root)
        fault_point("index-written")
    return FileEntry(rel, info.size, info.mtime_ns, rows, ref, fingerprint=footer.fingerprint)


def _with_schema(batches, schema: pa.Schema):
    """Batches, or one empty batch when the file has no rows (so types are still checked)."""
    empty = True
    for batch in batches:
        empty = False
        yield batch
    if empty:
        yield pa.RecordBatch.from_pylist([], schema=schema)


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


def _check_columns(fs: pafs.FileSystem, root: str, rels: list[str], options: Mapping[str, str]) -> None:
    """A column to index must exist in at least one file (else it is surely a typo)."""
    wanted = {s.column for s in parse_index_options(options)}
    for rel in rels:
        if not wanted:
            return
        with fs.open_input_file(join(root, rel)) as f:
            wanted -= set(pq.read_schema(f).names)
    if wanted and rels:
        raise OptionError(f"column(s) {', '.join(sorted(wanted))} to index are not a column of any data file")


def _progress(total: int, enabled: bool, what: str) -> Callable[[], None]:
    if not enabled or total == 0:
        return lambda: None
    try:
        from tqdm import tqdm
    except ImportError:
        return lambda: None
    bar = tqdm(total=total, unit="file", desc=what, leave=False)
    return bar.update


@dataclass
class BuildPlan:
    """Which files a build must index: what :func:`plan_build` found and :func:`commit_build` needs.

    Shared by the local build and ``arrowidx.spark.build``, which only differ in who runs
    :func:`index_one_file` over ``todo``.
    """

    fs: pafs.FileSystem
    root: str
    options: dict[str, str]
    threshold: int
    manifest: Manifest
    base_version: int
    infos: dict[str, pafs.FileInfo]
    todo: list[str]
    unchanged: list[str]
    removed: list[str]
    started: float
    on_stale_deletions: str = "raise"
    repaired: list[str] = field(default_factory=list)  # unchanged files whose index failed its checksum


def plan_build(source: Any, options: Mapping[str, object], *, filesystem: pafs.FileSystem | None = None,
               incremental: bool = True, on_stale_deletions: str = "raise") -> BuildPlan:  # fmt: skip
    """Check the options and list the files to (re)index: new, changed (by content), with an
    index failing its checksum, or all if the options changed.

    A changed file with deletions raises :class:`StaleDeletionError` unless
    ``on_stale_deletions="read-full"`` (then it is re-indexed and its deletions forgotten).
    """
    check_stale_option(on_stale_deletions)
    started = time.perf_counter()
    options = {str(k): str(v) for k, v in options.items()}
    parse_index_options(options)  # fail on bad options before touching anything
    threshold = in_manifest_threshold(options)
    fs, root, explicit = resolve(source, filesystem)
    manifest = load_manifest(fs, root)
    paths = explicit if explicit is not None else discover(fs, root)
    rels = [posixpath.relpath(p, root) for p in paths]
    infos = file_infos(fs, root, rels)
    todo, unchanged, repaired = [], [], []
    for rel in rels:
        entry = manifest.files.get(rel)
        same = entry is not None and _entry_fresh(fs, root, entry, infos[rel], on_stale_deletions) and entry.index is not None
        if same and incremental and manifest.options == options and not _index_ok(fs, root, entry):
            same = False
            repaired.append(rel)
        (unchanged if incremental and same and manifest.options == options else todo).append(rel)
    _check_columns(fs, root, todo, options)
    removed = sorted(set(manifest.files) - set(rels))
    return BuildPlan(fs, root, options, threshold, manifest, manifest.version, infos, todo, unchanged, removed, started,
                     on_stale_deletions, repaired)  # fmt: skip


def _entry_fresh(fs: pafs.FileSystem, root: str, entry: FileEntry, info: pafs.FileInfo, on_stale_deletions: str) -> bool:
    footer = None
    if entry.fingerprint is not None and info.type == pafs.FileType.File and info.size == entry.size:
        footer = read_footer(fs, join(root, entry.path), info.size)
    return entry_is_fresh(entry, info, footer, on_stale_deletions=on_stale_deletions)


def _index_ok(fs: pafs.FileSystem, root: str, entry: FileEntry) -> bool:
    """False when the index is missing or fails its checksum (the build repairs it)."""
    try:
        return load_index_bytes(fs, root, entry) is not None
    except ArrowIdxError:
        return False


def commit_build(plan: BuildPlan, built: list[FileEntry]) -> BuildReport:
    """Merge the new entries into the manifest (keeping deletions of unchanged data) and commit once."""
    manifest = plan.manifest
    report = BuildReport(root=plan.root, version=plan.base_version, unchanged=plan.unchanged, removed=plan.removed)
    files = {rel: manifest.files[rel] for rel in plan.unchanged}
    for entry in built:
        old = manifest.files.get(entry.path)
        if old is not None and old.deletion is not None:
            same = old.fingerprint == entry.fingerprint if old.fingerprint is not None else old.matches(plan.infos[entry.path])
            if same:
                entry.deletion = old.deletion  # same data, new index: deletions still apply
            elif plan.on_stale_deletions != "read-full":
                raise StaleDeletionError("changed while it was being indexed, and rows were deleted from it;"
                                         " run the build again", path=join(plan.root, entry.path))  # fmt: skip
        files[entry.path] = entry
        report.indexed.append(entry.path)
        report.index_bytes += entry.index.size
    report.indexed.sort()
    manifest.files = {rel: files[rel] for rel in sorted(files)}
    manifest.options = plan.options
    manifest = commit_manifest(plan.fs, plan.root, manifest, plan.base_version)
    report.version = manifest.version
    report.seconds = time.perf_counter() - plan.started
    return report


def build(
    source: Any,
    options: Mapping[str, object],
    *,
    filesystem: pafs.FileSystem | None = None,
    progress: bool = True,
    incremental: bool = True,
    threads: int | None = None,
    on_stale_deletions: str = "raise",
) -> BuildReport:
    """Index every data file of ``source`` (a directory, a list of files or a ``pyarrow.dataset``).

    ``options`` are Paimon's keys (``file-index.<type>.columns``, per-column keys, and
    ``file-index.in-manifest-threshold``). Incremental by default: a file whose size,
    modification time and options are unchanged keeps its index; files that disappeared
    leave the manifest.
    """
    return with_commit_retries(lambda: _build_once(source, options, filesystem, progress, incremental, threads,
                                                   on_stale_deletions))  # fmt: skip


def _build_once(source, options, filesystem, progress, incremental, threads, on_stale_deletions) -> BuildReport:
    """One plan, index, commit round (repeated by :func:`build` when another writer commits first)."""
    plan = plan_build(source, options, filesystem=filesystem, incremental=incremental, on_stale_deletions=on_stale_deletions)
    tick = _progress(len(plan.todo), progress, "arrowidx build")
    workers = threads or min(len(plan.todo), os.cpu_count() or 2) or 1

    def work(rel: str) -> FileEntry:
        entry = index_one_file(plan.fs, plan.root, rel, plan.infos[rel], plan.options, plan.threshold)
        tick()
        return entry

    with ThreadPoolExecutor(max_workers=workers) as pool:
        built = list(pool.map(work, plan.todo))
    return commit_build(plan, built)
