"""``arrowidx.accept_rollback``: go back to the newest manifest left when newer ones were lost.

``LATEST`` names the version last committed. When it names a version whose manifest is not
on disk (a partial sync, a lifecycle rule, a careless ``rm``), every read and write raises
:class:`~arrowidx.errors.MissingManifestError`: reading the newest version left would bring
back every row deleted after it, without a word. Restoring the manifest is the fix; when it
is gone for good, :func:`accept_rollback` is the explicit acknowledgement: it moves
``LATEST`` back to the newest version on disk and reports what that undoes.

What a lost version deleted cannot be read from its manifest (that is what is lost), but its
deletion vectors are in ``_arrowidx/deletion/`` files the manifest referenced: those no
version left references, written after the newest version left, are counted (files, vectors,
rows). A vector there holds every deleted row of its data file (the new ones and the ones
the version left already has), so the count is an upper bound of the rows that come back.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs

from ..deletion import read_deletion_vectors
from ..errors import ArrowIdxError
from .commit import latest_hint, metadata_listing, read_manifest
from .layout import DELETION_DIR, LATEST, join, manifest_path
from .manifest import Manifest
from .source import open_lake


@dataclass
class RollbackReport:
    """What :func:`accept_rollback` did (or, with ``dry_run``, would do)."""

    root: str
    version: int  # the version the lake is at afterwards: the newest manifest on disk
    latest: int | None  # what LATEST named before
    missing: list[int] = field(default_factory=list)  # the lost versions (empty: nothing to accept)
    # deletion files written for the lost versions (no version left references them): rows per file
    deletion_files: dict[str, int] = field(default_factory=dict)
    vectors: int = 0  # deletion vectors in those files (one per data file a lost version deleted from)
    dry_run: bool = False

    @property
    def rows(self) -> int:
        """At most this many deleted rows are live again (see the module docstring)."""
        return sum(self.deletion_files.values())

    def __str__(self) -> str:
        if not self.missing:
            return f"nothing to accept: {self.root} is at manifest v{self.version}, the version LATEST names"
        lost = f"version {self.missing[0]}" if len(self.missing) == 1 else f"versions {self.missing[0]}-{self.missing[-1]}"
        verb = "would roll back" if self.dry_run else "rolled back"
        head = f"{verb} {self.root} to manifest v{self.version} (LATEST named v{self.latest}; {lost} missing)"
        if not self.deletion_files:
            return head + "; no deletion file of the lost version(s) is left, so the rows they deleted cannot be counted"
        files = ", ".join(sorted(self.deletion_files)[:3]) + (" ..." if len(self.deletion_files) > 3 else "")
        undone = "would be live again" if self.dry_run else "are live again"
        return (f"{head}; the deletions of the lost version(s) {undone}: up to {self.rows:,} row(s) in"
                f" {self.vectors} vector(s) of {len(self.deletion_files)} deletion file(s) ({files})")  # fmt: skip


def accept_rollback(
    source: Any,
    *,
    filesystem: pafs.FileSystem | None = None,
    storage_options: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    index_root: Any = None,
) -> RollbackReport:
    """Accept that the manifest version(s) ``LATEST`` names are lost: move ``LATEST`` back to
    the newest manifest on disk, so reads and writes work again on that version, and report
    the deletions this undoes (``report.deletion_files``, ``report.rows``: the deletion files
    of the lost versions and the rows they hold). ``dry_run=True`` only reports.

    The explicit acknowledgement :class:`~arrowidx.errors.MissingManifestError` asks for
    (CLI: ``arrowidx accept-rollback PATH``). Nothing to accept (``LATEST`` names a version
    on disk, or nothing): the report says so and nothing is written.
    """
    store, root, _ = open_lake(source, filesystem, storage_options, index_root)
    infos, _ = metadata_listing(store, root)
    newest = max(infos) if infos else 0
    named = latest_hint(store, root)
    report = RollbackReport(root, newest, named, dry_run=dry_run)
    if named is None or named <= newest or store.stat([join(root, manifest_path(named))])[0] is not None:
        return report
    report.missing = list(range(newest + 1, named + 1))
    left = read_manifest(store, root, newest) if newest else Manifest()
    referenced = left.referenced_files()
    for info in store.list(join(root, DELETION_DIR), hidden=True, missing_ok=True):
        rel = posixpath.relpath(info.path, root)
        name = posixpath.basename(rel)
        if rel in referenced or name.startswith(".tmp-") or not name.endswith(".dv"):
            continue
        if info.mtime_ns is not None and left.created_ms and info.mtime_ns // 1_000_000 < left.created_ms:
            continue  # written before the version left was committed: not the lost versions'
        try:
            vectors = read_deletion_vectors(store.get(info.path, "deletion-vectors file"))
        except ArrowIdxError:
            continue  # not a deletion file arrowidx can read: nothing to count
        report.deletion_files[rel] = sum(v.cardinality for v in vectors.values())
        report.vectors += len(vectors)
    if not dry_run:
        store.put(join(root, LATEST), str(newest).encode())
    return report
