"""A user's source -> where its data is: ``(filesystem, root, explicit files)``, in one place
for lakes (:func:`arrowidx.dataset`, build, delete, vacuum, the adapters) and Paimon tables.

A source is a path or URI, a ``.parquet`` file, a list of paths or a
``pyarrow.dataset.FileSystemDataset``, with an optional ``filesystem`` (pyarrow or fsspec)
or ``storage_options`` (object-store URIs). Object stores named by URI are opened here and
nowhere else (:func:`arrowidx.objectstore.open_store`).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from typing import Any

import pyarrow.fs as pafs

from ..errors import ArrowIdxError, OptionError
from ..storage import Store, as_store, local_path
from .layout import LakeStore, is_index_path, lake_store, legacy_root, sidecar_of


def resolve(source: Any, filesystem: pafs.FileSystem | None = None,
            storage_options: Mapping[str, Any] | None = None) -> tuple[Store, str, list[str] | None]:  # fmt: skip
    """``(store, root, explicit files or None)`` for a path, a URI, a ``.parquet`` file, a
    list of paths or a Dataset (``filesystem``: pyarrow or fsspec).

    The one place a store is named: object-store URIs (``s3://bucket/lake``, ``gs://``,
    ``az://``) open their :class:`~arrowidx.objectstore.ObjectStore` with
    ``storage_options`` (or the ``AWS_*``/``GOOGLE_*``/``AZURE_*`` environment variables);
    any other filesystem becomes its :class:`~arrowidx.storage.Store` here
    (:func:`~arrowidx.storage.as_store`), which the layers below carry (a pyarrow
    filesystem only where pyarrow scans: ``store.fs``). A URI and ``filesystem=`` together
    are refused (which one names the store?), as are ``storage_options`` without an
    object-store URI. For a ``pyarrow.dataset.FileSystemDataset`` the root is the common
    directory of its files; for a list, the common directory of the paths.
    """
    where, root, files = _locate(source, filesystem, storage_options)
    return (where if isinstance(where, Store) else as_store(where)), root, files


def _locate(source: Any, filesystem, storage_options) -> tuple[Any, str, list[str] | None]:
    """:func:`resolve` with the object store, or the pyarrow filesystem, found."""
    from ..arrow_input import as_filesystem  # pyarrow or fsspec filesystems (ux, issue 14)
    from ..objectstore import is_object_store_uri, open_store

    uris = [source] if isinstance(source, str) else [os.fspath(p) for p in source] if isinstance(source, (list, tuple)) else []
    remote = [u for u in uris if is_object_store_uri(u)]
    if remote and filesystem is not None:
        raise ArrowIdxError(
            f"{remote[0].split('?', 1)[0]}: give either a URI (with storage_options for its endpoint and"
            " credentials) or filesystem= with a path in it, not both"
        )
    if storage_options is not None and not remote:
        if not isinstance(storage_options, Mapping):
            raise OptionError(f"storage_options: expected a dict of option names to values, got {type(storage_options).__name__}")
        if storage_options:
            raise OptionError(
                "storage_options apply to object-store URIs (s3://, gs://, az://); the source"
                f" {_show_source(source)} is not one (pass filesystem= for other filesystems)"
            )
    if remote:
        if len(remote) != len(uris):
            raise ArrowIdxError(f"a list mixing object-store URIs and other paths: {remote[0]} and others")
        store, first = open_store(remote[0], storage_options)
        paths = [first] + [_same_store(store, u, storage_options) for u in remote[1:]]
        if isinstance(source, str):
            if first.endswith(".parquet") and store.stat([first])[0] is not None:
                return store, posixpath.dirname(first), [first]
            return store, first.rstrip("/"), None
        root = posixpath.commonpath(paths) if len(set(paths)) > 1 else posixpath.dirname(paths[0])
        return store, root, paths
    filesystem = as_filesystem(filesystem)
    files = None
    if hasattr(source, "files") and hasattr(source, "filesystem"):
        filesystem = filesystem or source.filesystem
        files = list(source.files)
        root = posixpath.commonpath(files) if len(set(files)) > 1 else posixpath.dirname(files[0])
        return filesystem, root, files
    if isinstance(source, (list, tuple)):
        paths = [os.fspath(p) for p in source]
        if not paths:
            raise ArrowIdxError("an empty list of files")
        if filesystem is None:
            paths = [_strip_file_uri(p) for p in paths]
        if filesystem is None and any(_glob(p) is not None or os.path.isdir(p) for p in paths if "://" not in p):
            paths = [f for p in paths for f in (_glob(p) or _files_in(p) if "://" not in p else [p])]  # folders and globs: their files
        if filesystem is None:
            filesystem, first = pafs.FileSystem.from_uri(_as_uri(paths[0]))
            prefix = paths[0][: len(paths[0]) - len(first)] if paths[0].endswith(first) else ""
            paths = [p[len(prefix) :] if prefix and p.startswith(prefix) else _local(p) for p in paths]
        root = posixpath.commonpath(paths) if len(set(paths)) > 1 else posixpath.dirname(paths[0])
        return filesystem, root, paths
    if not isinstance(source, (str, os.PathLike)):
        from ..arrow_input import UnsupportedInputError

        data = hasattr(source, "__arrow_c_stream__") or type(source).__module__.split(".")[0] in ("pandas", "polars")
        raise UnsupportedInputError(
            f"source: expected a dataset: a directory path or URI, a .parquet file, a list of them or a"
            f" pyarrow dataset; got a {type(source).__name__}"
            + ("; to index data in memory, use arrowidx.write_file_index(data, options)" if data else "")
        )
    path = os.fspath(source)
    if filesystem is None:
        path = _strip_file_uri(path)
        matches = _glob(path)
        if matches is not None:  # a glob pattern (Polars' sources): the files it matches
            return _locate(matches, None, None)
        if "://" in path:
            filesystem, path = pafs.FileSystem.from_uri(path)
        else:  # a local path, taken as written (%, ? and [ are characters of its name)
            filesystem, path = pafs.LocalFileSystem(), os.path.abspath(path)
    elif isinstance(filesystem, pafs.LocalFileSystem) and not os.path.isabs(path):
        path = os.path.abspath(path)  # (relative to the working directory now, as pyarrow finds it when opened)
    local = local_path(filesystem, path)
    if (os.path.isfile(local) if local is not None else path.endswith(".parquet")) and as_store(filesystem).stat([path])[0] is not None:
        return filesystem, posixpath.dirname(path), [path]  # one data file (whatever its name): its folder, that file only
    return filesystem, path.rstrip("/") or "/", None


def _strip_file_uri(path: str) -> str:
    """A ``file://`` URI as the local path it names (``file:///x`` and ``file:/x``)."""
    if path.startswith("file://"):
        return os.path.abspath(path[len("file://") :] or "/")
    if path.startswith("file:/"):
        return os.path.abspath(path[len("file:") :])
    return path


def _glob(path: str) -> list[str] | None:
    """The files a local glob pattern (``*``, ``?``, ``[...]``, ``**``) matches, sorted, 0-byte
    files left out, as Polars expands them (None: not a pattern, or a path that exists as
    written). No match: FileNotFoundError."""
    if "://" in path and not path.startswith("file://"):
        return None
    path = path[len("file://") :] if path.startswith("file://") else path
    if not any(c in path for c in "*?[") or os.path.exists(path):
        return None
    import glob

    found = sorted({p for p in glob.glob(path, recursive=True, include_hidden=True)  # (a/**/**/x: once; 0-byte files skipped, as Polars does)
                    if os.path.isfile(p) and os.path.getsize(p) > 0 and not _in_index_folder(p)})  # fmt: skip
    if not found:
        raise FileNotFoundError(f"{path}: no file matches this pattern")
    return [os.path.abspath(p) for p in found]


def _files_in(path: str) -> list[str]:
    """A local folder's data files (as :func:`discover` finds them, 0-byte files left out as
    Polars leaves them out of a list), or ``[path]`` itself."""
    if not os.path.isdir(path):
        return [path]
    store = as_store(None)
    root = os.path.abspath(path)
    return [info.path for info in store.list(root, hidden=True)  # (Polars reads _ and . names, skips 0-byte files)
            if info.size > 0 and not is_index_path(posixpath.relpath(info.path, root))]  # fmt: skip


def _in_index_folder(path: str) -> bool:
    """Whether ``path`` is one of arrowidx's own files (in a sidecar or an old ``_arrowidx/``)."""
    return any(part == "_arrowidx" or (part.startswith("_") and part.endswith(".arrowidx")) for part in path.split(os.sep))


def _same_store(store, uri: str, storage_options) -> str:
    from ..objectstore import open_store

    other, path = open_store(uri, storage_options)
    if other is not store:
        raise ArrowIdxError(f"{uri}: a list of files in more than one bucket ({store.bucket} and {other.bucket})")
    return path


def _show_source(source: Any) -> str:
    text = os.fspath(source) if isinstance(source, (str, os.PathLike)) else type(source).__name__
    return repr(text if len(text) < 200 else text[:200] + "...")


def _as_uri(path: str) -> str:
    return path if "://" in path else os.path.abspath(path)


def _local(path: str) -> str:
    return os.path.abspath(path) if "://" not in path else path


def discover(store: Store, root: str) -> list[str]:
    """Data files under ``root`` as pyarrow.dataset finds them (skipping ``_``/``.`` names,
    and folders so named: ``_arrowidx/`` is never walked)."""
    return [info.path for info in store.list(root)]


def open_lake(source: Any, filesystem: pafs.FileSystem | None = None, storage_options: Mapping[str, Any] | None = None,
              index_root: Any = None, *, writing: bool = False) -> tuple[LakeStore, str, list[str] | None]:  # fmt: skip
    """:func:`resolve` for a lake: its store seen through the lake's index root
    (:func:`arrowidx.lake.layout.index_root_of`: ``index_root`` when given, a path or URI on
    the same store; else the old ``<root>/_arrowidx/`` or the sidecar ``_<folder>.arrowidx/``
    beside the data folder). ``writing``: build, delete and the writers (an old layout is
    warned about, a folder with no sidecar possible refused)."""
    store, root, files = resolve(source, filesystem, storage_options)
    return lake_store(store, root, index_path(store, index_root, storage_options), writing=writing), root, files


def index_path(store: Store, index_root: Any, storage_options: Mapping[str, Any] | None = None) -> str | None:
    """``index_root=`` as a path on ``store`` (a URI must name the same bucket)."""
    if index_root is None:
        return None
    if not isinstance(index_root, (str, os.PathLike)):
        raise OptionError(f"index_root: expected a folder path or URI, got a {type(index_root).__name__}")
    text = os.fspath(index_root)
    from ..objectstore import is_object_store_uri, open_store

    if is_object_store_uri(text):
        other, path = open_store(text, storage_options)
        if other is not (store.inner if isinstance(store, LakeStore) else store):
            raise OptionError(f"index_root={text!r}: not on the data's store ({store.describe()}); put the indexes on the same store")
        return path.rstrip("/")
    if "://" in text:
        _, path = pafs.FileSystem.from_uri(text)
        return path.rstrip("/")
    if local_path(store.fs, "/") is not None and "://" not in text:
        return os.path.abspath(text)
    return text.rstrip("/")


def manifest_root(store: Store, folder: str) -> str:
    """The nearest folder at or above ``folder`` whose indexes exist (sidecar or old
    ``_arrowidx/``; else ``folder``): the root of a Hive layout whose files all sit in one
    partition folder."""
    probe = folder
    while True:
        side = sidecar_of(probe)
        if any(store.list(p, recursive=False, hidden=True, missing_ok=True) for p in (legacy_root(probe), side) if p):
            return probe
        parent = posixpath.dirname(probe)
        if not parent or parent == probe:
            return folder
        probe = parent


def index_locations(folder: str) -> list[str]:
    """Where the indexes of the local data folder ``folder`` may be, without ``index_root=``:
    its sidecar and the old ``<folder>/_arrowidx`` (for tools that clean up after a build)."""
    folder = os.path.abspath(folder)
    return [p for p in (sidecar_of(folder), legacy_root(folder)) if p]
