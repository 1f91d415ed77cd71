"""Move a lake's indexes out of the data folder: ``<root>/_arrowidx/`` (arrowidx's layout before
the sidecar) to the sidecar ``_<folder>.arrowidx/`` beside it, or to ``index_root=``.

Why: Polars reads every file below a folder and refuses one holding files of another kind,
so ``pl.scan_parquet(root)`` fails while ``_arrowidx/`` is inside (docs/guide.md, "Layout on
disk"). Every file is copied as it is (a manifest names its files relative to the index
root, so nothing is rewritten), each copy is read back and compared, then the old folder is
removed. Run it when no build or delete is running: one that commits meanwhile is noticed
(the old folder changed) and the old folder is then kept, with both folders refused by
readers until ``migrate`` runs again.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from typing import Any

from ..errors import ArrowIdxError, OptionError
from ..storage import Store, local_path
from .layout import legacy_root, sidecar_of
from .source import index_path, resolve


@dataclass
class MigrateReport:
    """What :func:`migrate` moved: ``files`` (relative to the index root) from ``source`` to
    ``target``; ``dry_run``: nothing was written."""

    root: str
    source: str
    target: str | None
    files: list[str] = field(default_factory=list)
    bytes: int = 0
    dry_run: bool = False

    def __str__(self) -> str:
        if not self.files:
            return f"nothing to migrate: {self.root} has no {self.source}/ (its indexes are already beside it, or none)"
        verb = "would move" if self.dry_run else "moved"
        return f"{verb} {len(self.files)} file(s), {self.bytes:,} bytes, from {self.source}/ to {self.target}/"


def _order(rel: str) -> tuple[int, str]:
    """Index and deletion files first, then the manifests, ``LATEST`` last: a reader of the
    target never meets a manifest whose files are not there yet."""
    name = posixpath.basename(rel)
    return (2 if name == "LATEST" else 1 if name.startswith("manifest-") else 0, rel)


def migrate(source: Any, *, filesystem: Any = None, storage_options: dict[str, Any] | None = None,
            index_root: Any = None, dry_run: bool = False) -> MigrateReport:  # fmt: skip
    """Move the indexes of the lake at ``source`` from ``<root>/_arrowidx/`` to the sidecar
    ``_<folder>.arrowidx/`` beside the data folder (or to ``index_root``), in one command
    (CLI: ``arrowidx migrate PATH [--index-root DIR]``). Copies every version, checks each
    copy byte for byte, then removes ``_arrowidx/``. A lake already migrated (or never
    indexed) reports nothing to do. A target holding other files is refused."""
    store, root, _ = resolve(source, filesystem, storage_options)
    old = legacy_root(root)
    target = index_path(store, index_root, storage_options) if index_root is not None else sidecar_of(root)
    listed = store.list(old, hidden=True, missing_ok=True)
    report = MigrateReport(root=root, source=old, target=target, dry_run=dry_run)
    if not listed:
        return report
    if target is None:
        raise OptionError(f"{root}: a folder at the store's root has no folder beside it; pass index_root= (CLI: --index-root)")
    if target == old or target.startswith(root.rstrip("/") + "/"):
        raise OptionError(f"index_root={target!r}: inside the data folder {root}, where Polars would read it; name a folder outside it")
    files = {posixpath.relpath(i.path, old): i for i in listed if not posixpath.basename(i.path).startswith(".tmp-")}
    present = {posixpath.relpath(i.path, target): i for i in store.list(target, hidden=True, missing_ok=True)}
    strangers = sorted(set(present) - set(files))
    if strangers:
        raise ArrowIdxError(
            f"{target}: already holds files {old}/ does not ({strangers[0]}, ...): another lake's indexes, or a"
            f" build after an earlier migrate; move {target}/ away or pass another index_root="
        )
    report.files = sorted(files, key=_order)
    report.bytes = sum(i.size for i in files.values())
    if dry_run:
        return report
    for rel in report.files:
        data = store.get(posixpath.join(old, rel), "index file")
        dst = posixpath.join(target, rel)
        if rel in present:
            if store.get(dst, "index file") != data and rel != "LATEST":
                raise ArrowIdxError(f"{dst}: differs from {posixpath.join(old, rel)}; move {target}/ away and run migrate again")
        _write(store, dst, data)
        if store.get(dst, "index file") != data:
            raise ArrowIdxError(f"{dst}: the copy does not read back as written; {old}/ is kept, run migrate again")
    again = {posixpath.relpath(i.path, old): i.size for i in store.list(old, hidden=True, missing_ok=True)}
    if {r: files[r].size for r in files} != {r: s for r, s in again.items() if r in files} or set(again) - set(files):
        raise ArrowIdxError(
            f"{old}/ changed while migrating (a build or delete committed): it is kept; run migrate again when no"
            " writer is running (until then readers refuse the folder, naming this command)"
        )
    for rel in sorted(report.files, key=_order, reverse=True):  # LATEST and the manifests first: no half-visible old lake
        store.delete(posixpath.join(old, rel))
    _remove_empty_folders(store, old)
    return report


def _write(store: Store, path: str, data: bytes) -> None:
    folder = local_path(store.fs, posixpath.dirname(path))
    if folder is not None:
        os.makedirs(folder, exist_ok=True)
    if posixpath.basename(path) == "LATEST" or not store.can_create:
        store.put(path, data)  # (LATEST is a hint rewritten by every commit)
    elif not store.create(path, data) and store.get(path, "index file") != data:
        raise ArrowIdxError(f"{path}: already exists with other content; move it away and run migrate again")


def _remove_empty_folders(store: Store, folder: str) -> None:
    local = local_path(store.fs, folder)
    if local is None or not os.path.isdir(local):
        return  # object stores have no folders
    for dirpath, _, _ in sorted(os.walk(local), key=lambda w: -len(w[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass  # not empty (a stray file arrowidx did not write): left alone
