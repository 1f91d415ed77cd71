"""Deletions belong to a data file's content, not to its manifest entry: tombstones.

A committed delete is never undone by a file leaving the lake and coming back. When a
writer takes an entry with deletions out of the manifest (a build finds its file gone, a
file is re-indexed as other content with ``on_stale_deletions="read-full"``, a Spark
overwrite replaces it), its deletions stay in the manifest as a
:class:`~arrowidx.lake.manifest.Tombstone`, keyed by the file's content (its size and the
XXH64 of the whole file). A data file with that content that appears again, at any path
(moved back, restored from a backup, synced again), gets those deletions back:

* readers see it at once (:func:`with_returned_files`: its deleted rows stay deleted even
  before the next build);
* the next ``build`` (or ``delete``) commits them on its entry and the tombstone goes
  (:func:`reapply`); the build report names both what it kept and what it re-applied;
* ``vacuum`` drops tombstones older than its retention (:func:`expire`), and with them the
  promise: after that a returning file is new data.

An entry indexed before content hashes existed has no content to key a tombstone by: its
deletions are forgotten when it leaves, and the build report says so (:func:`bury` returns
None for it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from ..storage import ObjectInfo
from .manifest import FileEntry, Manifest, Tombstone


def bury(manifest: Manifest, entry: FileEntry, version: int, now_ms: int | None = None) -> Tombstone | None:
    """Keep ``entry``'s deletions in ``manifest`` as a tombstone (``entry`` is leaving the
    manifest, or being replaced by other content, in ``version``); None when it has no
    deletions, or no content hash to key them by (then they are forgotten)."""
    if entry.deletion is None or entry.content_xxh64 is None:
        return None
    tombstone = Tombstone(entry.path, entry.size, entry.rows, entry.content_xxh64, entry.deletion, version,
                          int(time.time() * 1000) if now_ms is None else now_ms)  # fmt: skip
    manifest.tombstones.append(tombstone)
    return tombstone


def drop(manifest: Manifest, rel: str, version: int) -> FileEntry:
    """Take ``rel``'s entry out of ``manifest`` (its data file is gone), burying its deletions."""
    entry = manifest.files.pop(rel)
    bury(manifest, entry, version)
    return entry


def matching(manifest: Manifest, rel: str, size: int, content: str | None) -> Tombstone | None:
    """The tombstone holding the content ``(size, content)``, one left at ``rel`` first."""
    if content is None:
        return None
    same = [t for t in manifest.tombstones if t.size == size and t.content_xxh64 == content]
    return next((t for t in same if t.path == rel), same[0] if same else None)


def reapply(manifest: Manifest, entry: FileEntry) -> Tombstone | None:
    """When a tombstone of ``manifest`` holds ``entry``'s content, give ``entry`` its
    deletions and take the tombstone out (returned); else None."""
    tombstone = matching(manifest, entry.path, entry.size, entry.content_xxh64)
    if tombstone is None or tombstone.rows != entry.rows:
        return None
    manifest.tombstones.remove(tombstone)
    entry.deletion = tombstone.deletion
    return tombstone


def with_returned_files(manifest: Manifest, infos: Mapping[str, ObjectInfo | None],
                        content: Callable[[str], str]) -> Manifest:  # fmt: skip
    """``manifest`` as a reader sees it: each data file of ``infos`` (relative path ->
    listing) that it does not list and whose content a tombstone holds is listed with that
    tombstone's deletions (no index: it is read in full, minus its deleted rows), and the
    tombstone is gone. ``content(rel)`` hashes a file: asked only of files whose size is a
    tombstone's. ``manifest`` itself when nothing returned (a look at the sizes)."""
    if not manifest.tombstones:
        return manifest
    sizes = {t.size for t in manifest.tombstones}
    view: Manifest | None = None
    for rel, info in infos.items():
        if info is None or rel in manifest.files or info.size not in sizes:
            continue
        current = view if view is not None else manifest
        try:
            digest = content(rel)
        except FileNotFoundError:
            continue  # gone since it was listed
        tombstone = matching(current, rel, info.size, digest)
        if tombstone is None:
            continue
        if view is None:
            view = manifest.copy()  # (the same tombstone objects, in a list of its own)
        view.tombstones.remove(tombstone)
        view.files[rel] = FileEntry(rel, info.size, info.mtime_ns, tombstone.rows, None, tombstone.deletion,
                                    stamp=info.stamp, content_xxh64=tombstone.content_xxh64)  # fmt: skip
    if view is None:
        return manifest
    view.files = {rel: view.files[rel] for rel in sorted(view.files)}
    return view


def expire(manifest: Manifest, cutoff_ms: float) -> list[Tombstone]:
    """Take the tombstones dropped before ``cutoff_ms`` out of ``manifest`` (returned)."""
    old = [t for t in manifest.tombstones if t.dropped_ms < cutoff_ms]
    manifest.tombstones = [t for t in manifest.tombstones if t.dropped_ms >= cutoff_ms]
    return old
