"""``arrowidx.delete``: merge-on-read deletes for plain Parquet, as Paimon's deletion vectors.

The rows matching ``where`` in each data file become positions in that file's deletion
vector; all changed vectors go into one new deletion-vectors index file under
``_arrowidx/deletion/`` and the manifest points at them. Data files are never rewritten;
readers drop the deleted positions.

The commit is one exclusive create of the next manifest version: when another writer (a
delete or a build) commits first, the delete plans again against the new version, so no
delete is ever lost. A data file that changed since rows were deleted from it raises
:class:`~arrowidx.errors.StaleDeletionError` (``on_stale_deletions="read-full"`` forgets
those deletions and deletes from the file as it is now).
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow.fs as pafs

from ..deletion import DeletionVector, write_deletion_vectors
from ..errors import ArrowIdxError
from ..expression import check_expression
from ..filters import require_delete_filter, user_filter
from ..options import DELETION_KEYS, check_option_keys
from ..progress import progress_bar
from ..storage import ObjectChangedError
from .commit import commit_manifest, require_commit, with_commit_retries
from .freshness import check_stale_option, entry_is_fresh
from .layout import DELETION_DIR, file_infos, join
from .manifest import DeletionRef, FileEntry, checksum
from .read import expression_mask
from .scan import dataset as open_dataset
from .source import open_lake
from .tombstones import bury

OPTION_BITMAP64 = "deletion-vectors.bitmap64"


@dataclass
class DeleteReport:
    root: str
    version: int
    rows_deleted: int = 0
    files_changed: list[str] = field(default_factory=list)
    files_skipped_by_index: int = 0
    seconds: float = 0.0
    rows_by_file: dict[str, int] = field(default_factory=dict)  # newly deleted rows per changed file
    dry_run: bool = False  # counted only, nothing committed (dry_run=True or confirm said no)

    def __str__(self) -> str:
        if self.dry_run:
            return (
                f"would delete {self.rows_deleted:,} row(s) in {len(self.rows_by_file)} file(s) at {self.root}"
                f" ({self.files_skipped_by_index} file(s) ruled out by indexes); nothing written"
            )
        return (
            f"manifest v{self.version} at {self.root}: deleted {self.rows_deleted:,} row(s) in"
            f" {len(self.files_changed)} file(s) ({self.files_skipped_by_index} file(s) ruled out by"
            f" indexes) in {self.seconds:.2f}s"
        )


def delete(
    source: Any,
    where,
    *,
    filesystem: pafs.FileSystem | None = None,
    options: Mapping[str, object] | None = None,
    progress: bool | None = None,
    dry_run: bool = False,
    confirm: Callable[[DeleteReport], bool] | None = None,
    on_stale_deletions: str = "raise",
    storage_options: Mapping[str, Any] | None = None,
    index_root: Any = None,
) -> DeleteReport:
    """Delete the rows matching ``where`` (a ``pc.Expression``, or SQL text with SQL's
    meaning) from every file of ``source``.

    ``where`` must say which rows: ``None`` (a filter never set) or empty text raises
    :class:`~arrowidx.errors.MissingFilterError`; to delete every row, pass ``"TRUE"`` or
    ``pc.scalar(True)`` (:func:`arrowidx.filters.require_delete_filter`).

    The report counts the newly deleted rows in total (``rows_deleted``) and per file
    (``rows_by_file``). ``dry_run=True`` only counts. ``confirm`` is called with the counts
    before anything is written; returning False turns the call into a dry run.

    ``options["deletion-vectors.bitmap64"]`` (``"true"``/``"false"``) picks 64-bit vectors
    (Iceberg-compatible) or Paimon's default 32-bit ones for newly written vectors.
    ``storage_options``: endpoint, region and credentials of an object-store URI
    (docs/object-stores.md).

    The deletion-vectors file is uploaded only after a cheap check that no other writer
    committed since the delete planned, and removed again if the commit is refused; the
    delete then plans again on the new version (bounded retries).
    """
    require_delete_filter(where)  # before anything is opened: no filter is not "every row"
    check_stale_option(on_stale_deletions)
    if confirm is not None:  # asked once: a retry after another writer committed does not ask again
        asked = confirm
        answers: list[bool] = []

        def confirm(report: DeleteReport) -> bool:
            if not answers:
                answers.append(bool(asked(report)))
            return answers[0]

    return with_commit_retries(
        lambda: _delete_once(source, where, filesystem, options, progress, dry_run, confirm, on_stale_deletions,
                             storage_options, index_root)
    )


def _delete_once(source, where, filesystem, options, progress, dry_run, confirm, on_stale_deletions,
                 storage_options=None, index_root=None) -> DeleteReport:  # fmt: skip
    """One plan, write, commit round (repeated by :func:`delete` when another writer commits
    first). On a store planned from the manifest (an object store) the data files are not
    listed: the manifest's sizes and ETags are theirs, each read is conditional on them, and
    a file found replaced or gone while planning makes the round plan again from a listing
    (every file stat'ed, a changed one read in full), before anything is written."""
    args = (source, where, filesystem, options, progress, dry_run, confirm, on_stale_deletions, storage_options, index_root)
    try:
        return _delete_attempt(*args, listing=False)
    except _Replaced:
        return _delete_attempt(*args, listing=True)


class _Replaced(Exception):
    """A data file read while planning a delete from the manifest was replaced or gone."""


def _delete_attempt(source, where, filesystem, options, progress, dry_run, confirm, on_stale_deletions,
                    storage_options, index_root, *, listing: bool) -> DeleteReport:  # fmt: skip
    start = time.perf_counter()
    check_option_keys(options or {}, what="arrowidx.delete", index_keys=False, accepted=DELETION_KEYS)
    options = {str(k): str(v) for k, v in (options or {}).items()}
    bitmap64 = options.get(OPTION_BITMAP64, "false").lower() == "true"
    # opened as arrowidx.dataset opens it: a pyarrow dataset's partition columns are columns here too
    lake, _, explicit = open_lake(source, filesystem, storage_options, index_root, writing=True)  # an old layout: warned; no index root: refused
    if index_root is None and explicit is None:  # (a folder: its index root as just found, not looked for again)
        index_root = lake.index_root
    data = open_dataset(source, filesystem=filesystem, on_stale_deletions=on_stale_deletions, storage_options=storage_options,
                        index_root=index_root)
    store, root = data.store, data.root
    manifest = data.manifest.copy()  # (the dataset's is shared with every reader of the process)
    base_version = manifest.version
    try:
        report, changed = _find_rows(data, manifest, where, bitmap64, progress, on_stale_deletions,
                                     listing=listing or not data.lake.from_manifest)
    except (ObjectChangedError, FileNotFoundError) as e:
        if listing or not data.lake.from_manifest:
            raise
        raise _Replaced() from e
    if dry_run or (changed and confirm is not None and not confirm(report)):
        report.dry_run = True
        report.seconds = time.perf_counter() - start
        return report
    if changed:
        require_commit(store, root)  # a store that cannot commit refuses before anything is uploaded
        for rel in changed:  # deletions belong to content: name it (files never indexed, or indexed before content hashes)
            if manifest.files[rel].content_xxh64 is None:
                manifest.files[rel].content_xxh64 = data.lake.content_xxh64(rel)
        by_kind: dict[bool, dict[str, DeletionVector]] = {}
        for rel, vector in changed.items():
            by_kind.setdefault(vector.bitmap64, {})[rel] = vector
        artifacts = {}
        for kind64, vectors in by_kind.items():
            blob, ranges = write_deletion_vectors(vectors, bitmap64=kind64)
            name = f"{DELETION_DIR}/{uuid.uuid4().hex}.dv"
            artifacts[name] = blob
            for rel, (offset, length) in ranges.items():
                digest = checksum(blob[offset : offset + length])
                manifest.files[rel].deletion = DeletionRef(name, offset, length, vectors[rel].cardinality, kind64, digest)
        report.files_changed = sorted(changed)
        # the deletion-vectors files are written with the manifest, after its check that no other
        # writer committed since this round planned, and removed again when the commit is refused
        manifest = commit_manifest(store, root, manifest, base_version, artifacts=artifacts)
    report.version = manifest.version
    report.seconds = time.perf_counter() - start
    return report


def _find_rows(data, manifest, where, bitmap64: bool, progress, on_stale_deletions: str, *,
               listing: bool) -> tuple[DeleteReport, dict[str, DeletionVector]]:  # fmt: skip
    """The rows of ``data`` matching ``where``, as new deletion vectors by file (merged with
    the old ones), and the report counting them. ``listing``: stat every file first (files
    never indexed, or changed, get a new entry in ``manifest``, so they can carry deletions);
    else the files are the manifest's, as it recorded them (their reads are conditional)."""
    store, root = data.store, data.root
    base_version = manifest.version
    rels = list(data.files)
    match = user_filter(where, lambda: data.schema, "where=")  # SQL text: refused here if not valid for the schema
    pushdown = match.pushdown
    if rels and pushdown is not None:
        check_expression(pushdown, data.schema, rows=data.lake.may_hold_rows(), where=root)  # an invalid filter fails whether or not an index decides
    unknown = rels if listing else [rel for rel in rels if rel not in manifest.files]
    infos = file_infos(store, root, unknown)
    data.lake.use_infos(infos)  # (planned from the manifest on object stores: the files as they are now)
    for rel in unknown:  # files never indexed (or changed) get a new entry, so they can carry deletions
        entry, info = manifest.files.get(rel), infos[rel]
        if info is None:
            raise ArrowIdxError(f"{join(root, rel)}: the data file disappeared while deleting; run the delete again")
        fresh = entry is not None and entry_is_fresh(entry, info, lambda rel=rel: data.lake.read_footer(rel),
                                                     content=lambda rel=rel: data.lake.content_xxh64(rel),
                                                     on_stale_deletions=on_stale_deletions)  # fmt: skip
        if fresh and (entry.stamp, entry.mtime_ns) != (info.stamp, info.mtime_ns):
            entry.stamp, entry.mtime_ns = info.stamp, info.mtime_ns  # the same content (proved), a new stamp
        if not fresh:
            if entry is not None:  # changed, and read-full: its deletions stay with the content that left
                bury(manifest, entry, base_version + 1)
            footer = data.lake.read_footer(rel)
            manifest.files[rel] = FileEntry(rel, info.size, info.mtime_ns, footer.num_rows, None, None,
                                            footer.fingerprint, info.stamp)  # fmt: skip
    data.manifest = manifest
    report = DeleteReport(root=root, version=base_version)
    tick = progress_bar(len(rels), progress, "arrowidx delete")

    read_columns = sorted(data.lake.columns_of(pushdown) | set(match.residual.columns if match.residual else ()))

    # the files a lake-level structure rules out (the lake index), as every read plans them
    ruled = data.planner.ruled_out_rows(pushdown, {}) if pushdown is not None else {}

    def positions(rel: str) -> tuple[str, np.ndarray | None]:
        if rel in ruled:
            tick()
            return rel, None
        plan = data.plan_file(rel, pushdown)
        tick()
        if plan.skipped:
            return rel, None
        found = [np.zeros(0, dtype=np.uint64)]
        for group in plan.row_groups:  # one row group at a time: memory bounded by a row group
            read = data.read_rows(dataclasses.replace(plan, row_groups=[group]), read_columns or None,
                                  apply_deletions=False, row_numbers=True)  # fmt: skip
            if read is None:
                continue
            table, row_numbers = read
            selected = expression_mask(table, pushdown)
            if match.residual is not None:
                selected &= np.asarray(match.residual.mask(table).to_numpy(zero_copy_only=False), dtype=bool)
            found.append(row_numbers[selected])
        return rel, np.concatenate(found)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(positions, rels))
    changed: dict[str, DeletionVector] = {}
    for rel, found in results:
        if found is None:
            report.files_skipped_by_index += 1
            continue
        if not len(found):
            continue
        old = data.lake.deletion_vector(rel)
        kind64 = old.bitmap64 if old is not None else bitmap64
        vector = DeletionVector.from_positions(found, bitmap64=kind64)
        before = old.cardinality if old is not None else 0
        if old is not None:
            vector.merge(old)
        if vector.cardinality == before:
            continue
        report.rows_deleted += vector.cardinality - before
        report.rows_by_file[rel] = vector.cardinality - before
        changed[rel] = vector
    return report, changed
