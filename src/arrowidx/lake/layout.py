"""Where an indexed Parquet dataset keeps its files, and the versioned manifest.

Everything arrowidx writes lives under ``_arrowidx/`` at the dataset root, so plain readers
(pyarrow.dataset, Polars, Spark, DuckDB), which ignore names starting with ``_``, never
trip over it::

    <root>/part-0.parquet ...                 the user's data files, never rewritten
    <root>/_arrowidx/LATEST                   the current manifest version (one integer)
    <root>/_arrowidx/manifest-00000007.json   manifest versions, each written once
    <root>/_arrowidx/index/<data file>.index  containers above the in-manifest threshold
    <root>/_arrowidx/deletion/<uuid>.dv       deletion-vectors index files

A new manifest version is written under a fresh name, then ``LATEST`` is replaced
atomically (write to a temporary name, then move), so readers see the old version or the
new one, never half of one. Works on any ``pyarrow.fs`` filesystem.
"""

from __future__ import annotations

import base64
import json
import os
import posixpath
import time
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from ..deletion import DeletionVector, read_deletion_vectors
from ..errors import ArrowIdxError, CorruptIndexError
from .footer import Footer

META_DIR = "_arrowidx"
INDEX_DIR = f"{META_DIR}/index"
DELETION_DIR = f"{META_DIR}/deletion"
LATEST = f"{META_DIR}/LATEST"
FORMAT = "arrowidx-manifest"
FORMAT_VERSION = 1


class CommitConflictError(ArrowIdxError):
    """Another writer committed a manifest version while this one was being prepared."""


def resolve(source: Any, filesystem: pafs.FileSystem | None = None) -> tuple[pafs.FileSystem, str, list[str] | None]:
    """``(filesystem, root, explicit files or None)`` for a path, a ``.parquet`` file, a list
    of paths or a Dataset (``filesystem``: pyarrow or fsspec).

    For a ``pyarrow.dataset.FileSystemDataset`` the root is the common directory of its
    files; for a list, the common directory of the paths.
    """
    from ..arrow_input import as_filesystem  # pyarrow or fsspec filesystems (ux, issue 14)

    filesystem = as_filesystem(filesystem)
    files = None
    if hasattr(source, "files") and hasattr(source, "filesystem"):
        filesystem = filesystem or source.filesystem
        files = list(source.files)
        root = posixpath.commonpath(files) if len(files) > 1 else posixpath.dirname(files[0])
        return filesystem, root, files
    if isinstance(source, (list, tuple)):
        paths = [os.fspath(p) for p in source]
        if not paths:
            raise ArrowIdxError("an empty list of files")
        if filesystem is None:
            filesystem, first = pafs.FileSystem.from_uri(_as_uri(paths[0]))
            prefix = paths[0][: len(paths[0]) - len(first)] if paths[0].endswith(first) else ""
            paths = [p[len(prefix) :] if prefix and p.startswith(prefix) else _local(p) for p in paths]
        root = posixpath.commonpath(paths) if len(paths) > 1 else posixpath.dirname(paths[0])
        return filesystem, root, paths
    path = os.fspath(source)
    if filesystem is None:
        filesystem, path = pafs.FileSystem.from_uri(_as_uri(path))
    if path.endswith(".parquet") and filesystem.get_file_info(path).type == pafs.FileType.File:
        return filesystem, posixpath.dirname(path), [path]  # one data file: its folder, that file only
    return filesystem, path.rstrip("/") or "/", None


def _as_uri(path: str) -> str:
    return path if "://" in path else os.path.abspath(path)


def _local(path: str) -> str:
    return os.path.abspath(path) if "://" not in path else path


def discover(fs: pafs.FileSystem, root: str) -> list[str]:
    """Data files under ``root`` as pyarrow.dataset finds them (skipping ``_``/``.`` names).

    Folders are listed one level at a time so ``_arrowidx/`` (and any other ignored folder)
    is never walked.
    """
    out, pending = [], [root]
    while pending:
        folder = pending.pop()
        for info in fs.get_file_info(pafs.FileSelector(folder)):
            if posixpath.basename(info.path).startswith(("_", ".")):
                continue
            if info.type == pafs.FileType.Directory:
                pending.append(info.path)
            elif info.type == pafs.FileType.File:
                out.append(info.path)
    return sorted(out)


@dataclass
class IndexRef:
    """Where one data file's index container is: embedded bytes or a file under ``_arrowidx/index``."""

    options: dict[str, str]
    schema: str  # base64 IPC schema of the indexed columns (the types the keys were built from)
    size: int  # container bytes
    embedded: str | None = None  # base64 container, when size <= threshold
    file: str | None = None  # path relative to the root

    def arrow_schema(self) -> pa.Schema:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(self.schema)))


@dataclass
class DeletionRef:
    """One data file's deletion vector inside a deletion-vectors index file."""

    file: str  # relative to the root
    offset: int
    length: int
    cardinality: int
    bitmap64: bool = False


@dataclass
class FileEntry:
    """What the manifest knows about one data file."""

    path: str  # relative to the root
    size: int
    mtime_ns: int | None
    rows: int
    index: IndexRef | None = None
    deletion: DeletionRef | None = None
    fingerprint: str | None = None  # lake.footer.fingerprint of the file when it was indexed

    def matches(self, info: pafs.FileInfo) -> bool:
        """False when the file changed since it was indexed (its index must not be trusted)."""
        if info.type != pafs.FileType.File or info.size != self.size:
            return False
        return self.mtime_ns is None or info.mtime_ns is None or info.mtime_ns == self.mtime_ns


@dataclass
class Manifest:
    """One version of an indexed dataset's manifest."""

    version: int = 0
    files: dict[str, FileEntry] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    created_ms: int = 0

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "version": self.version,
                "created_ms": self.created_ms,
                "options": self.options,
                "files": [asdict(e) for e in self.files.values()],
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str, source: str) -> Manifest:
        try:
            d = json.loads(text)
            if d.get("format") != FORMAT:
                raise ValueError("not an arrowidx manifest")
            if d.get("format_version", 0) > FORMAT_VERSION:
                raise ValueError(f"manifest format {d['format_version']} is newer than this arrowidx reads")
            files = {}
            for f in d["files"]:
                index = IndexRef(**f["index"]) if f.get("index") else None
                deletion = DeletionRef(**f["deletion"]) if f.get("deletion") else None
                files[f["path"]] = FileEntry(
                    f["path"], f["size"], f["mtime_ns"], f["rows"], index, deletion, f.get("fingerprint")
                )
            return cls(d["version"], files, d.get("options", {}), d.get("created_ms", 0))
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptIndexError(f"unreadable manifest: {e}", source=source) from None


def join(root: str, rel: str) -> str:
    return posixpath.join(root, rel) if root not in ("", ".") else rel


def read_bytes(fs: pafs.FileSystem, path: str) -> bytes:
    with fs.open_input_stream(path) as f:
        return f.read()


def write_atomic(fs: pafs.FileSystem, path: str, data: bytes) -> None:
    """Write under a temporary name in the same folder, then move into place."""
    fs.create_dir(posixpath.dirname(path), recursive=True)
    tmp = posixpath.join(posixpath.dirname(path), f".tmp-{uuid.uuid4().hex}-{posixpath.basename(path)}")
    try:
        with fs.open_output_stream(tmp) as out:
            out.write(data)
        fs.move(tmp, path)
    except BaseException:
        try:
            fs.delete_file(tmp)
        except OSError:
            pass
        raise


def manifest_path(version: int) -> str:
    return f"{META_DIR}/manifest-{version:08d}.json"


def latest_version(fs: pafs.FileSystem, root: str) -> int:
    """The committed manifest version (0 when the dataset has never been indexed)."""
    latest = join(root, LATEST)
    info = fs.get_file_info(latest)
    if info.type == pafs.FileType.File:
        text = read_bytes(fs, latest).decode().strip()
        if text.isdigit():
            return int(text)
    # No pointer (or an unreadable one): fall back to the highest manifest on disk.
    versions = _manifest_versions(fs, root)
    return max(versions) if versions else 0


def _manifest_versions(fs: pafs.FileSystem, root: str) -> list[int]:
    meta = join(root, META_DIR)
    if fs.get_file_info(meta).type != pafs.FileType.Directory:
        return []
    out = []
    for info in fs.get_file_info(pafs.FileSelector(meta)):
        name = posixpath.basename(info.path)
        if name.startswith("manifest-") and name.endswith(".json") and name[9:-5].isdigit():
            out.append(int(name[9:-5]))
    return out


def load_manifest(fs: pafs.FileSystem, root: str) -> Manifest:
    """The committed manifest, or an empty one (version 0) if there is none."""
    version = latest_version(fs, root)
    if version == 0:
        return Manifest()
    path = join(root, manifest_path(version))
    return Manifest.from_json(read_bytes(fs, path).decode(), path)


def commit_manifest(fs: pafs.FileSystem, root: str, manifest: Manifest, base_version: int) -> Manifest:
    """Write ``manifest`` as version ``base_version + 1`` and make it the current one.

    Raises :class:`CommitConflictError` if another writer committed after ``base_version``
    was read (their work is kept; run the command again).
    """
    if latest_version(fs, root) != base_version or base_version + 1 in _manifest_versions(fs, root):
        raise CommitConflictError(
            f"{join(root, META_DIR)} changed while this operation ran (another build or delete committed); run it again"
        )
    manifest.version = base_version + 1
    manifest.created_ms = int(time.time() * 1000)
    write_atomic(fs, join(root, manifest_path(manifest.version)), manifest.to_json().encode())
    write_atomic(fs, join(root, LATEST), str(manifest.version).encode())
    return manifest


def file_infos(fs: pafs.FileSystem, root: str, rel_paths: Iterable[str]) -> dict[str, pafs.FileInfo]:
    rel_paths = list(rel_paths)
    infos = fs.get_file_info([join(root, p) for p in rel_paths])
    return dict(zip(rel_paths, infos))


def schema_to_b64(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


# --------------------------------------------------------------------------------------
# What a reader trusts: the seam between the manifest (commits, integrity) and the scan.
# The scan calls only these three; how freshness and integrity are decided lives here.
# --------------------------------------------------------------------------------------


def entry_is_fresh(entry: FileEntry, info: pafs.FileInfo, footer: Footer | None = None) -> bool:
    """True when the data file is still the one ``entry`` describes (its index and deletion
    vector apply); False when it changed (read it in full, ignore its index)."""
    if footer is not None and entry.fingerprint is not None:
        return footer.fingerprint == entry.fingerprint
    return entry.matches(info)


def load_index_bytes(fs: pafs.FileSystem, root: str, entry: FileEntry) -> bytes | None:
    """The container bytes of ``entry``'s index (None if it has none or they cannot be trusted)."""
    ref = entry.index
    if ref is None:
        return None
    if ref.embedded is not None:
        return base64.b64decode(ref.embedded)
    data = read_bytes(fs, join(root, ref.file))
    return data if len(data) == ref.size else None


def load_deletion_vector(fs: pafs.FileSystem, root: str, entry: FileEntry, blobs: dict[str, bytes]) -> DeletionVector | None:
    """``entry``'s deletion vector (None if it has none). ``blobs`` caches whole deletion files
    by path, since one file holds the vectors of many data files."""
    ref = entry.deletion
    if ref is None:
        return None
    path = join(root, ref.file)
    data = blobs.get(path)
    if data is None:
        data = blobs[path] = read_bytes(fs, path)
    vectors = read_deletion_vectors(data, ranges={entry.path: (ref.offset, ref.length)}, bitmap64=ref.bitmap64)
    return vectors[entry.path]
