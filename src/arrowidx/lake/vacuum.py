"""``arrowidx.vacuum``: remove the manifests, index files and deletion files that no retained
version references.

Retained are the current version and every version that was still current less than
``older_than`` ago (its successor was committed within the retention), since a reader that
opened it may still be reading its files. Files no retained manifest references are removed
only when they are older than the retention too, so the files of a build or delete still
running (not committed yet) are never touched.

Tombstones (the deletions of files that left the lake, kept for their content:
:mod:`arrowidx.lake.tombstones`) older than the retention are dropped first, in a new
manifest version: a file with that content that returns afterwards is new data.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pyarrow.fs as pafs

from ..errors import ArrowIdxError, OptionError
from ..storage import Store
from .commit import (
    commit_manifest,
    current_manifest,
    latest_hint,
    load_manifest,
    manifest_versions,
    read_manifest,
    with_commit_retries,
)
from .filetable import SEGMENT_DIR
from .lakeindex import RUN_DIR as LAKE_INDEX_DIR
from .layout import DELETION_DIR, INDEX_DIR, LATEST, META_DIR, join, manifest_path, write_atomic
from .source import open_lake
from .tombstones import expire

DEFAULT_RETENTION = timedelta(days=7)


@dataclass
class VacuumReport:
    """What a vacuum kept and removed (``dry_run``: what it would remove)."""

    root: str
    version: int
    kept_versions: list[int] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # paths relative to the root
    bytes_freed: int = 0
    dry_run: bool = False
    latest_repaired: bool = False  # LATEST named another version and was rewritten
    # tombstones older than the retention (dropped: a file with that content that returns is
    # new data), by the path the file had, with their deleted rows
    tombstones_dropped: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        verb = "would remove" if self.dry_run else "removed"
        dropped = ""
        if self.tombstones_dropped:
            dropped = (f"; {'would drop' if self.dry_run else 'dropped'} {len(self.tombstones_dropped)} tombstone(s)"
                       f" ({sum(self.tombstones_dropped.values()):,} deleted row(s) of files that left:"
                       f" {', '.join(sorted(self.tombstones_dropped)[:3])}{' ...' if len(self.tombstones_dropped) > 3 else ''})")  # fmt: skip
        return (
            f"manifest v{self.version} at {self.root}: {verb} {len(self.removed)} file(s)"
            f" ({self.bytes_freed:,} bytes); kept version(s) {', '.join(map(str, self.kept_versions)) or 'none'}"
            + dropped
        )


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(older_than: float | str | timedelta, what: str = "older_than") -> float:
    """Seconds in ``older_than``: a number of seconds, a ``timedelta``, or text such as
    ``"3600"``, ``"90s"``, ``"30m"``, ``"12h"``, ``"7d"``. Anything else is an
    :class:`~arrowidx.errors.OptionError` naming ``what`` (the argument or flag)."""
    try:
        if isinstance(older_than, timedelta):
            seconds = older_than.total_seconds()
        elif isinstance(older_than, str):
            text = older_than.strip().lower()
            unit = text[-1:] if text[-1:] in _UNITS else "s"
            seconds = float(text[:-1] if text[-1:] in _UNITS else text) * _UNITS[unit]
        elif isinstance(older_than, bool):
            raise TypeError
        else:
            seconds = float(older_than)
    except (TypeError, ValueError):
        seconds = None
    if seconds is None or not seconds >= 0 or seconds == float("inf"):
        raise OptionError(f"{what}={older_than!r} is not a duration: give seconds (3600), a datetime.timedelta,"
                          " or text such as '30m', '12h' or '7d'")  # fmt: skip
    return seconds


def vacuum(
    source: Any,
    older_than: float | str | timedelta = DEFAULT_RETENTION,
    *,
    filesystem: pafs.FileSystem | None = None,
    dry_run: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    index_root: Any = None,
) -> VacuumReport:
    """Remove what no retained manifest version references (``older_than``: seconds, a
    ``timedelta`` or text such as ``"12h"`` or ``"7d"``; default 7 days). Never removes the
    current version's files. Tombstones (deletions kept for files that left the lake)
    dropped longer ago than ``older_than`` are dropped first, in a new manifest version
    (``report.tombstones_dropped``).
    ``storage_options``: endpoint, region and credentials of an object-store URI."""
    cutoff_ms = (time.time() - parse_duration(older_than)) * 1000
    store, root, _ = open_lake(source, filesystem, storage_options, index_root)
    current_manifest(store, root)  # a missing newest version: refused (MissingManifestError), nothing removed
    dropped = _drop_tombstones(store, root, cutoff_ms, dry_run)
    listed = store.list(join(root, META_DIR), hidden=True, missing_ok=True)  # one listing of everything of ours
    if not listed and not store.list(root, recursive=False, missing_ok=True) and not _is_folder(store.fs, root):
        raise ArrowIdxError(f"{root}: no such dataset directory; nothing to vacuum")
    versions = manifest_versions(store, root)
    report = VacuumReport(root, versions[-1] if versions else 0, dry_run=dry_run, tombstones_dropped=dropped)
    if not versions:
        return report
    kept: list[int] = []
    referenced: set[str] = set()
    successor_ms = None  # when the version above the one looked at was committed
    for version in reversed(versions):
        if successor_ms is not None and successor_ms < cutoff_ms:
            break  # superseded before the retention: no reader can still need it (nor older ones)
        manifest = read_manifest(store, root, version)  # a retained manifest must be readable
        kept.append(version)
        referenced |= manifest.referenced_files()  # (tombstones' deletion files too)
        successor_ms = manifest.created_ms
    report.kept_versions = sorted(kept)
    if latest_hint(store, root) != versions[-1] and not dry_run:  # a hint only, but keep it true
        write_atomic(store, join(root, LATEST), str(versions[-1]).encode(), root=root)
        report.latest_repaired = True
    doomed: list[tuple[str, int]] = [
        (manifest_path(v), -1) for v in versions if v < min(kept)
    ]
    for info in listed:
        rel = posixpath.relpath(info.path, root)
        folder = posixpath.dirname(rel)
        if not (folder == META_DIR or folder.startswith((INDEX_DIR + "/", DELETION_DIR + "/"))
                or folder in (INDEX_DIR, DELETION_DIR, LAKE_INDEX_DIR, SEGMENT_DIR)):  # fmt: skip
            continue
        name = posixpath.basename(rel)
        old = info.mtime_ns is None or info.mtime_ns / 1e6 < cutoff_ms
        if name.startswith(".tmp-"):
            if old:  # a writer's temporary file, abandoned by a crash
                doomed.append((rel, info.size))
        elif folder != META_DIR and rel not in referenced and old:
            doomed.append((rel, info.size))
    doomed = sorted(set(doomed))
    now = dict(zip((rel for rel, _ in doomed), store.stat([join(root, rel) for rel, _ in doomed])))
    for rel, size in doomed:
        info = now[rel]
        if info is None:
            continue
        if size >= 0 and info.mtime_ns is not None and info.mtime_ns / 1e6 >= cutoff_ms:
            continue  # rewritten since it was listed
        if not dry_run and not store.delete(join(root, rel)):
            continue
        report.removed.append(rel)
        report.bytes_freed += info.size
    return report


def _is_folder(fs: pafs.FileSystem, root: str) -> bool:
    try:
        return fs.get_file_info(root).type == pafs.FileType.Directory
    except OSError:
        return False


def _drop_tombstones(store: Store, root: str, cutoff_ms: float, dry_run: bool) -> dict[str, int]:
    """Drop the tombstones of the current manifest dropped before ``cutoff_ms`` (committed
    as a new version, unless ``dry_run``): ``{path the file had: deleted rows}``."""

    def attempt() -> dict[str, int]:
        manifest = load_manifest(store, root)
        base = manifest.version
        old = expire(manifest, cutoff_ms)
        if old and not dry_run:
            commit_manifest(store, root, manifest, base)
        rows: dict[str, int] = {}
        for t in old:
            rows[t.path] = rows.get(t.path, 0) + t.deletion.cardinality
        return rows

    return with_commit_retries(attempt)
