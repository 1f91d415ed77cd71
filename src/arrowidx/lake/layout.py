"""Where an indexed Parquet dataset keeps its files, and the paths it may touch.

arrowidx writes nothing inside the data folder: its files live in the lake's **index root**,
by default a sidecar folder beside the data folder, named after it (every engine walks the
data folder, and Polars reads every file below it, hidden or not: docs/guide.md, "Layout on
disk")::

    data/lake/part-0.parquet ...                         the user's data files, never rewritten
    data/_lake.arrowidx/manifest-00000007.json           manifest versions, each created once
    data/_lake.arrowidx/LATEST                           a hint: the version last committed
    data/_lake.arrowidx/index/<data file>.<xxh64>-<writer>.index  containers above the in-manifest threshold
    data/_lake.arrowidx/deletion/<uuid>.dv               deletion-vectors index files

Inside arrowidx the index root keeps its logical name, ``<root>/_arrowidx`` (:data:`META_DIR`;
a manifest names ``_arrowidx/index/...``: relative to the index root, so a copy of both
folders keeps its indexes), and the lake's :class:`LakeStore` maps that name to where the
index root is. :func:`index_root_of` is the one place that decides it: ``index_root=``
when given, else an existing ``<root>/_arrowidx/`` (lakes indexed before the sidecar:
read and written there until ``arrowidx migrate``), else the sidecar.

What each file holds: :mod:`.manifest` (the manifest format), :mod:`.commit` (how a version
is committed and which one is current), :mod:`.freshness` (what a reader trusts). Every
path stays inside the dataset root or its index root, symlinks included (:func:`ensure_inside`).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import posixpath
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import INDEX_ROOTS, ArrowIdxError, CorruptIndexError, OptionError
from ..storage import FileStats, ObjectInfo, Store, local_path

if TYPE_CHECKING:
    import pyarrow as pa

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
    """Refuse ``path`` (under ``root``) when symlinks take it outside the root (the index
    root, for a path of the lake's index files)."""
    if isinstance(store, LakeStore) and store.maps(path):
        root, path = store.index_root, store.physical(path)
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
        real = physical(store, folder)
        if local_path(store.fs, real) is not None:
            os.makedirs(local_path(store.fs, real), exist_ok=True)
        ensure_inside(store, root, folder, "folder")
    store.put(path, data)



def file_infos(store: Store, root: str, rel_paths: Iterable[str]) -> dict[str, ObjectInfo | None]:
    """Per relative path, its :class:`~arrowidx.storage.ObjectInfo` (None: no such file)."""
    rel_paths = list(rel_paths)
    return dict(zip(rel_paths, store.stat([join(root, p) for p in rel_paths])))


# ------------------------------------------------------------------------------------------
# the index root: where a lake's files are (the one place that decides)
# ------------------------------------------------------------------------------------------

SIDECAR_SUFFIX = ".arrowidx"


def sidecar_of(root: str) -> str | None:
    """The sidecar index root of the data folder ``root``: ``<parent>/_<name>.arrowidx``
    (None for a folder without a parent: a bucket's or a disk's root)."""
    name = posixpath.basename(root.rstrip("/"))
    parent = posixpath.dirname(root.rstrip("/"))
    if not name or not parent:
        return None  # "bucket" (an object store's path is bucket/key) or "/": no folder to sit beside
    return posixpath.join(parent, f"_{name}{SIDECAR_SUFFIX}")


def legacy_root(root: str) -> str:
    """Where lakes indexed before the sidecar keep their files: ``<root>/_arrowidx``."""
    return join(root, META_DIR)


def _holds_files(store: Store, folder: str) -> bool:
    return bool(store.list(folder, recursive=False, hidden=True, missing_ok=True))


def index_root_of(store: Store, root: str, index_root: str | None = None, *, writing: bool = False) -> str | None:
    """Where the lake at ``root`` keeps its index files: ``index_root`` when given (a path on
    the same store), else ``<root>/_arrowidx`` when it holds a lake indexed before the
    sidecar, else the sidecar (:func:`sidecar_of`; None when ``root`` has none: readers see
    no index, writers are told to pass ``index_root=``). A folder holding both an old
    ``_arrowidx/`` and a sidecar is refused with the command that settles it."""
    if index_root is not None:
        chosen = os.fspath(index_root)
        if not isinstance(chosen, str) or not chosen:
            raise OptionError(f"index_root: expected a folder path, got {index_root!r}")
        return chosen.rstrip("/") or "/"
    side = sidecar_of(root)
    legacy = legacy_root(root)
    if _holds_files(store, legacy):
        if side is not None and _holds_files(store, side):
            raise ArrowIdxError(
                f"{root}: indexes in both {legacy}/ (the old layout) and {side}/ (the sidecar); run"
                f" `arrowidx migrate {root}` (Python: arrowidx.migrate(path)) to settle on the sidecar"
                f" (it refuses and says why if the two disagree), or remove the one you do not want"
            )
        if writing:
            warnings.warn(
                f"{root}: its indexes are in {legacy}/ (the old layout), where pl.scan_parquet({root!r})"
                f" meets them and fails; run `arrowidx migrate {root}` to move them beside the folder",
                stacklevel=3,
            )
        return legacy
    if side is None and writing:
        raise OptionError(
            f"{root}: a folder at the store's root has no folder beside it for its indexes; pass"
            " index_root= (CLI: --index-root) naming a folder on the same store outside the data"
        )
    if writing and "=" in posixpath.basename(root.rstrip("/")) and side is not None:
        raise OptionError(
            f"{root}: a Hive partition folder; indexing it on its own would put {side}/ inside the"
            " table's folder, where Polars reads it: index the table's folder (builds are incremental)"
            " or pass index_root= (CLI: --index-root)"
        )
    return side


class LakeStore(Store):
    """The lake's view of its store: data files where they are, the lake's index files
    (logically under ``<root>/_arrowidx``, :data:`META_DIR`) in its index root. Everything
    else (``fs``, ``can_create``, ``stamps``, ``describe``) is the store's own."""

    def __init__(self, inner: Store, root: str, index_root: str | None):
        self.inner, self.root, self.index_root = inner, root, index_root
        self.logical = legacy_root(root)
        self.key = f"{inner.key}|index={index_root}"
        self.fs = inner.fs
        self.can_create, self.stamps, self.quick_reads = inner.can_create, inner.stamps, inner.quick_reads
        self.plans_from_manifest = inner.plans_from_manifest
        if index_root is not None and index_root != self.logical:
            if len(INDEX_ROOTS) > 4096:
                INDEX_ROOTS.clear()
            INDEX_ROOTS[self.logical] = index_root

    def __getattr__(self, name: str) -> Any:  # the store's own attributes (bucket, os_path...)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __reduce__(self):
        return (LakeStore, (self.inner, self.root, self.index_root))

    def maps(self, path: str) -> bool:
        return path == self.logical or path.startswith(self.logical + "/")

    def physical(self, path: str) -> str:
        """Where ``path`` is: a path under ``<root>/_arrowidx`` moves to the index root."""
        if not self.maps(path) or self.index_root == self.logical:
            return path
        if self.index_root is None:
            raise OptionError(
                f"{self.root}: a folder at the store's root has no folder beside it for its indexes;"
                " pass index_root= (CLI: --index-root)"
            )
        return self.index_root + path[len(self.logical):]

    def _logical(self, info: ObjectInfo) -> ObjectInfo:
        base = self.index_root or ""
        if self.index_root == self.logical or not (info.path == base or info.path.startswith(base + "/")):
            return info
        return dataclasses.replace(info, path=self.logical + info.path[len(base):])

    def list(self, folder: str, *, recursive: bool = True, hidden: bool = False, missing_ok: bool = False) -> list[ObjectInfo]:
        if self.maps(folder) and self.index_root is None:
            return []
        found = self.inner.list(self.physical(folder), recursive=recursive, hidden=hidden, missing_ok=missing_ok)
        return [self._logical(i) for i in found] if self.maps(folder) else found

    def list_stats(self, folder: str, *, hidden: bool = False) -> FileStats:
        if self.maps(folder):
            return super().list_stats(folder, hidden=hidden)
        return self.inner.list_stats(folder, hidden=hidden)

    def list_names(self, folder: str, *, hidden: bool = False) -> tuple[list[str], list[str] | None]:
        if self.maps(folder):
            return super().list_names(folder, hidden=hidden)
        return self.inner.list_names(folder, hidden=hidden)

    def stat_many(self, paths: list[str]) -> FileStats:
        if any(map(str.startswith, paths, itertools.repeat(self.logical))):  # (some under the index root, rarely)
            return super().stat_many(paths)
        return self.inner.stat_many(paths)

    def stat(self, paths: list[str]) -> list[ObjectInfo | None]:
        if self.index_root is None and any(self.maps(p) for p in paths):
            return [None if self.maps(p) else self.inner.stat([p])[0] for p in paths]
        found = self.inner.stat([self.physical(p) for p in paths])
        return [None if i is None else dataclasses.replace(i, path=p) for p, i in zip(paths, found)]

    def get(self, path: str, what: str = "file") -> bytes:
        return self.inner.get(self.physical(path), what)

    def get_ranges(self, path: str, ranges: list[tuple[int, int]], what: str = "file") -> list[bytes]:
        return self.inner.get_ranges(self.physical(path), ranges, what)

    def get_if_same(self, path: str, expect: ObjectInfo, what: str = "file") -> bytes:
        return self.inner.get_if_same(self.physical(path), dataclasses.replace(expect, path=self.physical(expect.path)), what)

    def open_if_same(self, path: str, expect: ObjectInfo, what: str = "file") -> pa.NativeFile:
        return self.inner.open_if_same(self.physical(path), dataclasses.replace(expect, path=self.physical(expect.path)), what)

    def put(self, path: str, data: bytes) -> None:
        self.inner.put(self.physical(path), data)

    def create(self, path: str, data: bytes) -> bool:
        self.require_create(path)  # (in the index folder: with the probe the store keeps there)
        return self.inner.create(self.physical(path), data)

    def require_create(self, path: str, *, own_folder: bool = False) -> None:
        self.inner.require_create(self.physical(path), own_folder=own_folder or self.maps(path))

    def delete(self, path: str) -> bool:
        return self.inner.delete(self.physical(path))

    def describe(self) -> str:
        return self.inner.describe()


def lake_store(store: Store, root: str, index_root: str | None = None, *, writing: bool = False) -> LakeStore:
    """``store`` seen by the lake at ``root`` (its index files in :func:`index_root_of`)."""
    if isinstance(store, LakeStore):
        if store.root == root and (index_root is None or store.index_root == index_root):
            return store
        store = store.inner
    return LakeStore(store, root, index_root_of(store, root, index_root, writing=writing))


def physical(store: Store, path: str) -> str:
    """Where ``path`` is on the store underneath (for pyarrow filesystem calls)."""
    return store.physical(path) if isinstance(store, LakeStore) else path


def is_index_path(rel: str) -> bool:
    """Whether the relative path ``rel`` lies in arrowidx's own folders (an old ``_arrowidx/``
    or a sidecar ``_<name>.arrowidx/`` of a folder below)."""
    return any(part == META_DIR or (part.startswith("_") and part.endswith(SIDECAR_SUFFIX)) for part in rel.split("/")[:-1])
