"""Where an indexed Parquet dataset keeps its files, and the paths it may touch.

Everything arrowidx writes lives under ``_arrowidx/`` at the dataset root, so plain readers
(pyarrow.dataset, Polars, Spark, DuckDB), which ignore names starting with ``_``, never
trip over it::

    <root>/part-0.parquet ...                       the user's data files, never rewritten
    <root>/_arrowidx/manifest-00000007.json         manifest versions, each created once
    <root>/_arrowidx/LATEST                         a hint: the version last committed
    <root>/_arrowidx/index/<data file>.<xxh64>-<writer>.index  containers above the in-manifest threshold
    <root>/_arrowidx/deletion/<uuid>.dv             deletion-vectors index files

What each file holds: :mod:`.manifest` (the manifest format), :mod:`.commit` (how a version
is committed and which one is current), :mod:`.freshness` (what a reader trusts). Every
path stays inside the dataset root, symlinks included (:func:`ensure_inside`).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable

from ..errors import ArrowIdxError, CorruptIndexError
from ..storage import ObjectInfo, Store, local_path

META_DIR = "_arrowidx"
INDEX_DIR = f"{META_DIR}/index"
DELETION_DIR = f"{META_DIR}/deletion"
LATEST = f"{META_DIR}/LATEST"


def manifest_path(version: int) -> str:
    """The manifest of ``version``, relative to the root."""
    return f"{META_DIR}/manifest-{version:08d}.json"


def join(root: str, rel: str) -> str:
    return posixpath.join(root, rel) if root not in ("", ".") else rel


def ensure_inside(store: Store, root: str, path: str, what: str) -> None:
    """Refuse ``path`` (under ``root``) when symlinks take it outside the root."""
    local = local_path(store.fs, path)
    if local is None:
        return  # object stores have no symlinks
    base = os.path.realpath(local_path(store.fs, root) or root)
    real = os.path.realpath(local)
    if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
        raise ArrowIdxError(
            f"{path}: {what} resolves to {real}, outside the dataset root {base} (a symlink?);"
            " arrowidx neither reads nor writes outside the root: remove the link"
        )


def read_bytes(store: Store, path: str, what: str = "file") -> bytes:
    """The bytes of ``path``; a missing file is a :class:`CorruptIndexError` naming it (the
    dataset lost it), any other failure a :class:`~arrowidx.errors.StorageError` (access,
    network) naming it."""
    try:
        return store.get(path, what)
    except FileNotFoundError:
        hint = "; rebuild with arrowidx build" if what == "index file" else ""
        raise CorruptIndexError(f"{what} is missing (deleted or never written){hint}", source=path) from None


def write_atomic(store: Store, path: str, data: bytes, root: str | None = None) -> None:
    """Write the complete object ``path`` (a temporary file moved into place on local disks,
    fsync'd first). With ``root``, refuse a folder that symlinks lead outside it."""
    if root is not None:
        folder = posixpath.dirname(path)
        if local_path(store.fs, folder) is not None:
            os.makedirs(local_path(store.fs, folder), exist_ok=True)
        ensure_inside(store, root, folder, "folder")
    store.put(path, data)



def file_infos(store: Store, root: str, rel_paths: Iterable[str]) -> dict[str, ObjectInfo | None]:
    """Per relative path, its :class:`~arrowidx.storage.ObjectInfo` (None: no such file)."""
    rel_paths = list(rel_paths)
    return dict(zip(rel_paths, store.stat([join(root, p) for p in rel_paths])))
