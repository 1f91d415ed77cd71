"""Where an indexed Parquet dataset keeps its files, the versioned manifest, and how a new
version is committed.

Everything arrowidx writes lives under ``_arrowidx/`` at the dataset root, so plain readers
(pyarrow.dataset, Polars, Spark, DuckDB), which ignore names starting with ``_``, never
trip over it::

    <root>/part-0.parquet ...                       the user's data files, never rewritten
    <root>/_arrowidx/manifest-00000007.json         manifest versions, each created once
    <root>/_arrowidx/LATEST                         the version last committed (a hint, and a check)
    <root>/_arrowidx/index/<data file>.<xxh64>-<writer>.index  containers above the in-manifest threshold
    <root>/_arrowidx/deletion/<uuid>.dv             deletion-vectors index files

Commit protocol (see docs/reliability.md): every file is written under a temporary name and
moved into place (one PUT on object stores); index files are named by their content and the
writer (one build call) and deletion files by a fresh uuid, so no committed file is ever
overwritten and a writer that fails for good removes only its own files. A version is committed by *one exclusive
create*: ``manifest-<N+1>`` is created from a fully written temporary file only if it does
not exist yet (a hard link on local disks). The newest manifest on disk is the current
version; ``LATEST`` is rewritten after each commit for people and tools. Readers never obey
it, but when it names a version *newer* than any on disk, that version was lost (a partial
sync, a lifecycle rule, an ``rm``) and reading the one left would undo its deletions: every
read and write then raises :class:`~arrowidx.errors.MissingManifestError` until the
manifest is restored or the rollback accepted (:func:`arrowidx.accept_rollback`). A crash at
any instant leaves the previous or the new version; of two writers racing for the same
version exactly one wins, the other gets :class:`CommitConflictError`.

A manifest entry names its data file's content (:attr:`FileEntry.content_xxh64`, the XXH64
of the whole file) and its deletions belong to that content: an entry with deletions that
leaves the manifest (its file gone, or replaced by other content) leaves a
:class:`Tombstone`, and a file with that content that appears again gets its deletions back
(:mod:`arrowidx.lake.tombstones`), until ``vacuum`` drops the tombstone after its retention.

Every manifest carries an XXH64 of its own canonical content and of every index file and
deletion-vector range it references; all of it is validated when read
(:class:`~arrowidx.errors.CorruptManifestError` names the manifest and the field), and every
path must stay inside the dataset root, symlinks included.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import os
import posixpath
import random
import re
import signal
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs
import xxhash

from ..deletion import DeletionVector, read_deletion_vectors
from ..errors import (
    ArrowIdxError,
    CommitConflictError,
    CorruptIndexError,
    CorruptManifestError,
    MissingManifestError,
    OptionError,
    StaleDeletionError,
)
from ..storage import ObjectInfo, Store, as_store, local_path
from .footer import Footer

META_DIR = "_arrowidx"
INDEX_DIR = f"{META_DIR}/index"
DELETION_DIR = f"{META_DIR}/deletion"
LATEST = f"{META_DIR}/LATEST"
FORMAT = "arrowidx-manifest"
FORMAT_VERSION = 3  # 2: checksums, fingerprints, exclusive-create commits; 3: content hashes, tombstones
COMMIT_TRIES = 8  # build/delete re-plan this many times when another writer commits first
STALE_DELETIONS = ("raise", "read-full")
FAULTS_ENV = "ARROWIDX_FAULTS"  # test hooks: "point=kill", "point=kill@2", "point=sleep:0.3", "point=wait:/path", "point=touch:/path"

_MANIFEST_NAME = re.compile(r"manifest-(\d{1,18})\.json")
_HEX16 = re.compile(r"[0-9a-f]{16}")
_FINGERPRINT = re.compile(r"(\d{1,19}):([0-9a-f]{16})")
T = TypeVar("T")


def resolve(source: Any, filesystem: pafs.FileSystem | None = None,
            storage_options: Mapping[str, Any] | None = None) -> tuple[pafs.FileSystem, str, list[str] | None]:  # fmt: skip
    """``(filesystem, root, explicit files or None)`` for a path, a URI, a ``.parquet`` file,
    a list of paths or a Dataset (``filesystem``: pyarrow or fsspec).

    The one place a store is named: object-store URIs (``s3://bucket/lake``, ``gs://``,
    ``az://``) open their :class:`~arrowidx.objectstore.ObjectStore` with
    ``storage_options`` (or the ``AWS_*``/``GOOGLE_*``/``AZURE_*`` environment variables);
    the filesystem returned is its pyarrow filesystem, which
    :func:`~arrowidx.storage.as_store` maps back to the store. A URI and ``filesystem=``
    together are refused (which one names the store?), as are ``storage_options`` without
    an object-store URI. For a ``pyarrow.dataset.FileSystemDataset`` the root is the common
    directory of its files; for a list, the common directory of the paths.
    """
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
                return store.fs, posixpath.dirname(first), [first]
            return store.fs, first.rstrip("/"), None
        root = posixpath.commonpath(paths) if len(paths) > 1 else posixpath.dirname(paths[0])
        return store.fs, root, paths
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
        filesystem, path = pafs.FileSystem.from_uri(_as_uri(path))
    if path.endswith(".parquet") and as_store(filesystem).stat([path])[0] is not None:
        return filesystem, posixpath.dirname(path), [path]  # one data file: its folder, that file only
    return filesystem, path.rstrip("/") or "/", None


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


def discover(fs: pafs.FileSystem | Store, root: str) -> list[str]:
    """Data files under ``root`` as pyarrow.dataset finds them (skipping ``_``/``.`` names,
    and folders so named: ``_arrowidx/`` is never walked)."""
    return [info.path for info in as_store(fs).list(root)]


# --------------------------------------------------------------------------------------
# Test hooks: named write points where a test process can be killed or paused
# --------------------------------------------------------------------------------------

_fault_hits: dict[str, int] = {}


def fault_point(name: str) -> None:
    """A named write point. With ``ARROWIDX_FAULTS="name=kill"`` (or ``kill@N`` for the N-th
    time, ``sleep:SECONDS``, ``wait:PATH``: until that file exists, or ``touch:PATH``: create
    that file) the process is killed with SIGKILL, paused or says it got there; several
    items for one point run in order (``p=touch:/a,p=wait:/b``: a rendezvous of two
    processes). Used by the crash and race tests in ``integration/``; a no-op otherwise."""
    spec = os.environ.get(FAULTS_ENV)
    if not spec:
        return
    for item in spec.split(","):
        point, _, action = item.partition("=")
        if point.strip() != name:
            continue
        _fault_hits[name] = hits = _fault_hits.get(name, 0) + 1
        action = action.strip()
        if action.startswith("sleep:"):
            time.sleep(float(action[6:]))
        elif action.startswith("touch:"):
            with open(action[6:], "a"):
                pass
        elif action.startswith("wait:"):  # until the file exists (another process says go), at most 120 s
            deadline = time.monotonic() + 120
            while not os.path.exists(action[5:]) and time.monotonic() < deadline:
                time.sleep(0.02)
        elif action.startswith("kill"):
            _, _, nth = action.partition("@")
            if hits == int(nth or 1):
                os.kill(os.getpid(), signal.SIGKILL)


# --------------------------------------------------------------------------------------
# Paths: relative, normalised, inside the root (symlinks resolved on local disks)
# --------------------------------------------------------------------------------------


def check_rel(rel: Any, source: str, where: str, under: str | None = None) -> str:
    """``rel`` if it is a normalised relative path inside the root (below ``under``), else
    :class:`CorruptManifestError` naming ``source`` and the field ``where``."""
    if not isinstance(rel, str) or not rel:
        raise CorruptManifestError(f"expected a non-empty relative path, got {_show(rel)}", source=source, field=where)
    bad = (
        "\x00" in rel or "\\" in rel or rel.startswith("/") or re.match(r"^[A-Za-z]:", rel) is not None
        or "://" in rel or posixpath.normpath(rel) != rel or rel == ".." or rel.startswith("../")
    )  # fmt: skip
    if bad:
        raise CorruptManifestError(f"path {rel!r} is not a normalised path inside the dataset root", source=source, field=where)
    if under is not None and not rel.startswith(under + "/"):
        raise CorruptManifestError(f"path {rel!r} must be below {under}/", source=source, field=where)
    if under is None and (rel == META_DIR or rel.startswith(META_DIR + "/")):
        raise CorruptManifestError(f"data file path {rel!r} is inside {META_DIR}/", source=source, field=where)
    return rel


def ensure_inside(fs: pafs.FileSystem, root: str, path: str, what: str) -> None:
    """Refuse ``path`` (under ``root``) when symlinks take it outside the root."""
    local = local_path(fs, path)
    if local is None:
        return  # object stores have no symlinks
    base = os.path.realpath(local_path(fs, root) or root)
    real = os.path.realpath(local)
    if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
        raise ArrowIdxError(
            f"{path}: {what} resolves to {real}, outside the dataset root {base} (a symlink?);"
            " arrowidx neither reads nor writes outside the root: remove the link"
        )


def join(root: str, rel: str) -> str:
    return posixpath.join(root, rel) if root not in ("", ".") else rel


def read_bytes(fs: pafs.FileSystem, path: str, what: str = "file") -> bytes:
    """The bytes of ``path``; a missing file is a :class:`CorruptIndexError` naming it (the
    dataset lost it), any other failure a :class:`~arrowidx.errors.StorageError` (access,
    network) naming it."""
    try:
        return as_store(fs).get(path, what)
    except FileNotFoundError:
        hint = "; rebuild with arrowidx build" if what == "index file" else ""
        raise CorruptIndexError(f"{what} is missing (deleted or never written){hint}", source=path) from None


def checksum(data: bytes) -> str:
    """XXH64 of ``data`` as 16 hex digits: what a manifest records for index and deletion bytes."""
    return xxhash.xxh64_hexdigest(data)


def write_atomic(fs: pafs.FileSystem | Store, path: str, data: bytes, root: str | None = None) -> None:
    """Write the complete object ``path`` (a temporary file moved into place on local disks,
    fsync'd first). With ``root``, refuse a folder that symlinks lead outside it."""
    store = as_store(fs)
    if root is not None:
        folder = posixpath.dirname(path)
        if isinstance(store.fs, pafs.LocalFileSystem) or local_path(store.fs, folder) is not None:
            os.makedirs(local_path(store.fs, folder), exist_ok=True)
        ensure_inside(store.fs, root, folder, "folder")
    store.put(path, data)


# --------------------------------------------------------------------------------------
# The manifest and its validation
# --------------------------------------------------------------------------------------


@dataclass
class IndexRef:
    """Where one data file's index container is: embedded bytes or a file under ``_arrowidx/index``."""

    options: dict[str, str]
    schema: str  # base64 IPC schema of the indexed columns (the types the keys were built from)
    size: int  # container bytes
    embedded: str | None = None  # base64 container, when size <= threshold
    file: str | None = None  # path relative to the root
    xxh64: str | None = None  # checksum of the container bytes
    # {column: {index type: [start, length, xxh64]}} of a container in a file: a reader
    # fetches one column's index alone, checked by its own checksum (index.container.SparseContainer)
    layout: dict | None = None

    def arrow_schema(self) -> pa.Schema:
        cached = getattr(self, "_schema", None)
        if cached is None:
            cached = _decode_schema(self.schema, "<manifest>", "index.schema", {})
        return cached


@dataclass
class DeletionRef:
    """One data file's deletion vector inside a deletion-vectors index file."""

    file: str  # relative to the root
    offset: int
    length: int
    cardinality: int
    bitmap64: bool = False
    xxh64: str | None = None  # checksum of the bytes [offset, offset + length)


@dataclass
class FileEntry:
    """What the manifest knows about one data file."""

    path: str  # relative to the root
    size: int
    mtime_ns: int | None
    rows: int
    index: IndexRef | None = None
    deletion: DeletionRef | None = None
    fingerprint: str | None = None  # lake.footer.fingerprint of the file when it was indexed (size and tail)
    stamp: str | None = None  # the store's change stamp when it was indexed (storage.ObjectInfo.stamp)
    content_xxh64: str | None = None  # XXH64 of the whole file when it was indexed (lake.footer.content_xxh64)

    def matches(self, info: ObjectInfo | None) -> bool:
        """Size and mtime unchanged (only for entries without a fingerprint, written before
        fingerprints existed)."""
        if info is None or info.size != self.size:
            return False
        return self.mtime_ns is None or info.mtime_ns is None or info.mtime_ns == self.mtime_ns

    @classmethod
    def from_dict(cls, d: dict) -> FileEntry:
        """The inverse of ``dataclasses.asdict`` (no validation: see :meth:`Manifest.from_json`)."""
        index = IndexRef(**d["index"]) if d.get("index") else None
        deletion = DeletionRef(**d["deletion"]) if d.get("deletion") else None
        return cls(d["path"], d["size"], d["mtime_ns"], d["rows"], index, deletion, d.get("fingerprint"), d.get("stamp"),
                   d.get("content_xxh64"))  # fmt: skip


@dataclass
class Tombstone:
    """The deletions of a data file whose entry left the manifest with them (its file was gone
    at a build, or replaced by other content, or an overwrite replaced it), kept for the
    file's content: a data file with that content (``size`` and ``content_xxh64``) that
    appears again, at any path, gets them back (:mod:`arrowidx.lake.tombstones`). A committed
    delete is never undone by a file leaving and coming back. ``vacuum`` drops a tombstone
    ``dropped_ms`` plus its retention later."""

    path: str  # where the file was (relative to the root)
    size: int
    rows: int
    content_xxh64: str
    deletion: DeletionRef
    version: int  # the manifest version that dropped the entry
    dropped_ms: int  # when it was dropped (vacuum's retention counts from here)


@dataclass
class Manifest:
    """One version of an indexed dataset's manifest."""

    version: int = 0
    files: dict[str, FileEntry] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    created_ms: int = 0
    source: str = ""  # the manifest file it was read from ("" when new)
    tombstones: list[Tombstone] = field(default_factory=list)  # deletions kept for content that left

    def __repr__(self) -> str:
        indexed = sum(e.index is not None for e in self.files.values())
        deleted = sum(e.deletion.cardinality for e in self.files.values() if e.deletion is not None)
        options = ", ".join(f"{k}={v}" for k, v in sorted(self.options.items())) or "none"
        where = f" from {self.source}" if self.source else ""
        return (f"Manifest(version {self.version}{where}: {len(self.files)} file(s), {indexed} indexed,"
                f" {deleted:,} row(s) deleted; options {options})")  # fmt: skip

    def copy(self) -> Manifest:
        """A copy whose files, entries and tombstones a writer may change (index and deletion
        references are shared: they are replaced, never changed)."""
        files = {rel: dataclasses.replace(e) for rel, e in self.files.items()}
        for rel, e in files.items():
            listed = getattr(self.files[rel], "_listed", None)
            if listed is not None:
                e._listed = listed  # type: ignore[attr-defined]
        return dataclasses.replace(self, files=files, options=dict(self.options), tombstones=list(self.tombstones))

    def referenced_files(self) -> set[str]:
        """The index and deletion files (relative paths) this version references: those of
        its entries and of its tombstones."""
        out = {e.index.file for e in self.files.values() if e.index is not None and e.index.file is not None}
        out |= {e.deletion.file for e in self.files.values() if e.deletion is not None}
        return out | {t.deletion.file for t in self.tombstones}

    def _payload(self) -> dict:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "version": self.version,
            "created_ms": self.created_ms,
            "options": self.options,
            "files": [asdict(e) for e in self.files.values()],
            "tombstones": [asdict(t) for t in self.tombstones],
        }

    def to_json(self) -> str:
        payload = self._payload()
        payload["checksum"] = checksum(_canonical(payload))
        return json.dumps(payload, indent=1)

    @classmethod
    def from_json(cls, text: str | bytes, source: str, expect_version: int | None = None) -> Manifest:
        """Parse and validate a manifest; any problem is a :class:`CorruptManifestError`
        naming ``source`` and the field."""
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as e:
                raise CorruptManifestError(f"not UTF-8 text (byte {e.start})", source=source) from None
        try:
            d = json.loads(text)
        except (ValueError, RecursionError) as e:
            raise CorruptManifestError(f"not JSON: {e}", source=source) from None
        return _validate(d, source, expect_version)


def _show(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def _canonical(payload: dict) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _int(d: dict, key: str, source: str, where: str, low: int = 0, optional: bool = False) -> int | None:
    if key not in d:
        if optional:
            return None
        raise CorruptManifestError("required field is missing", source=source, field=f"{where}{key}")
    value = d[key]
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value < 2**63:
        raise CorruptManifestError(f"expected an integer >= {low}, got {_show(value)}", source=source, field=f"{where}{key}")
    return value


def _str(d: dict, key: str, source: str, where: str, optional: bool = False) -> str | None:
    if key not in d or (d[key] is None and optional):
        if optional:
            return None
        raise CorruptManifestError("required field is missing", source=source, field=f"{where}{key}")
    if not isinstance(d[key], str):
        raise CorruptManifestError(f"expected a string, got {_show(d[key])}", source=source, field=f"{where}{key}")
    return d[key]


def _dict(d: dict, key: str, source: str, where: str, optional: bool = False) -> dict | None:
    if key not in d or (d[key] is None and optional):
        if optional:
            return None
        raise CorruptManifestError("required field is missing", source=source, field=f"{where}{key}")
    if not isinstance(d[key], dict):
        raise CorruptManifestError(f"expected an object, got {_show(d[key])}", source=source, field=f"{where}{key}")
    return d[key]


def _str_map(value: dict, source: str, where: str) -> dict[str, str]:
    for k, v in value.items():
        if not isinstance(v, str):
            raise CorruptManifestError(f"expected a string, got {_show(v)}", source=source, field=f"{where}[{k!r}]")
    return dict(value)


def _hex(d: dict, key: str, source: str, where: str, required: bool) -> str | None:
    value = _str(d, key, source, where, optional=not required)
    if value is not None and not _HEX16.fullmatch(value):
        raise CorruptManifestError(f"expected 16 hex digits (XXH64), got {value[:40]!r}", source=source, field=f"{where}{key}")
    return value


def _layout(raw: dict, size: int, source: str, where: str) -> dict | None:
    """An index's ``layout`` (optional), each window inside the container and checksummed."""
    layout = _dict(raw, "layout", source, where, optional=True)
    if layout is None:
        return None
    for column, by_type in layout.items():
        if not isinstance(by_type, dict):
            raise CorruptManifestError(f"expected an object, got {_show(by_type)}", source=source, field=f"{where}layout.{column}")
        for index_type, window in by_type.items():
            w = f"{where}layout.{column}.{index_type}"
            ok = isinstance(window, list) and len(window) == 3 and all(type(x) is int for x in window[:2])
            ok = ok and isinstance(window[2], str) and (
                (window[0] == -1 and window[1] == 0) or (0 <= window[0] and 0 <= window[1] and window[0] + window[1] <= size
                                                         and _HEX16.fullmatch(window[2]) is not None))  # fmt: skip
            if not ok:
                raise CorruptManifestError(f"expected [start, length, xxh64] inside {size} bytes, got {_show(window)}",
                                           source=source, field=w)  # fmt: skip
    return layout


def _decode_schema(text: str, source: str, where: str, cache: dict[str, pa.Schema]) -> pa.Schema:
    schema = cache.get(text)
    if schema is None:
        try:
            schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text, validate=True)))
        except (binascii.Error, ValueError, OSError, pa.ArrowException) as e:
            raise CorruptManifestError(f"not a base64 Arrow IPC schema: {e}", source=source, field=where) from None
        cache[text] = schema
    return schema


def _validate(d: Any, source: str, expect_version: int | None) -> Manifest:
    if not isinstance(d, dict):
        raise CorruptManifestError(f"expected a JSON object at the top level, got {_show(d)}", source=source)
    if d.get("format") != FORMAT:
        raise CorruptManifestError(f"not an arrowidx manifest (format {d.get('format')!r})", source=source, field="format")
    fmt = _int(d, "format_version", source, "", low=1)
    if fmt > FORMAT_VERSION:
        raise CorruptManifestError(
            f"manifest format {fmt} is newer than this arrowidx reads ({FORMAT_VERSION}): upgrade arrowidx",
            source=source, field="format_version",
        )  # fmt: skip
    strict = fmt >= 2
    if strict:
        stored = _hex(d, "checksum", source, "", required=True)
        body = {k: v for k, v in d.items() if k != "checksum"}
        if checksum(_canonical(body)) != stored:
            raise CorruptManifestError(
                "content does not match its checksum (the file was damaged or edited);"
                " restore it from a backup, or delete it to fall back to the previous version",
                source=source, field="checksum",
            )  # fmt: skip
    version = _int(d, "version", source, "", low=1)
    if expect_version is not None and version != expect_version:
        raise CorruptManifestError(f"says version {version} but its name says {expect_version}", source=source, field="version")
    created_ms = _int(d, "created_ms", source, "", optional=True) or 0
    options = _str_map(_dict(d, "options", source, "", optional=True) or {}, source, "options")
    raw_files = d.get("files")
    if not isinstance(raw_files, list):
        raise CorruptManifestError(f"expected a list, got {_show(raw_files)}", source=source, field="files")
    schemas: dict[str, pa.Schema] = {}
    files: dict[str, FileEntry] = {}
    for i, f in enumerate(raw_files):
        where = f"files[{i}]."
        if not isinstance(f, dict):
            raise CorruptManifestError(f"expected an object, got {_show(f)}", source=source, field=f"files[{i}]")
        path = check_rel(f.get("path"), source, f"{where}path")
        if path in files:
            raise CorruptManifestError(f"data file {path!r} is listed twice", source=source, field=f"{where}path")
        size = _int(f, "size", source, where)
        mtime_ns = _int(f, "mtime_ns", source, where, low=-(2**62), optional=True)
        rows = _int(f, "rows", source, where)
        fingerprint = _str(f, "fingerprint", source, where, optional=True)
        stamp = _str(f, "stamp", source, where, optional=True)
        content = _hex(f, "content_xxh64", source, where, required=False)
        if fingerprint is not None:
            m = _FINGERPRINT.fullmatch(fingerprint)
            if m is None or int(m.group(1)) != size:
                raise CorruptManifestError(f"fingerprint {fingerprint[:40]!r} is not '<size>:<xxh64>' for size {size}",
                                           source=source, field=f"{where}fingerprint")  # fmt: skip
        index = None
        raw = _dict(f, "index", source, where, optional=True)
        if raw is not None:
            w = f"{where}index."
            index_options = _str_map(_dict(raw, "options", source, w), source, f"{w}options")
            schema_text = _str(raw, "schema", source, w)
            index_size = _int(raw, "size", source, w)
            embedded = _str(raw, "embedded", source, w, optional=True)
            index_file = _str(raw, "file", source, w, optional=True)
            if (embedded is None) == (index_file is None):
                raise CorruptManifestError("exactly one of 'embedded' and 'file' must be set", source=source, field=f"{w}file")
            if index_file is not None:
                check_rel(index_file, source, f"{w}file", under=INDEX_DIR)
            if embedded is not None and len(embedded) != 4 * ((index_size + 2) // 3):
                raise CorruptManifestError(f"{len(embedded)} base64 characters cannot hold {index_size} bytes",
                                           source=source, field=f"{w}embedded")  # fmt: skip
            index = IndexRef(index_options, schema_text, index_size, embedded, index_file, _hex(raw, "xxh64", source, w, strict),
                             _layout(raw, index_size, source, w))  # fmt: skip
            index._schema = _decode_schema(schema_text, source, f"{w}schema", schemas)  # type: ignore[attr-defined]
        deletion = None
        raw = _dict(f, "deletion", source, where, optional=True)
        if raw is not None:
            deletion = _deletion(raw, rows, source, f"{where}deletion.", strict)
        entry = files[path] = FileEntry(path, size, mtime_ns, rows, index, deletion, fingerprint, stamp, content)
        entry._listed = (source, f"files[{i}]")  # type: ignore[attr-defined]  # for errors found when loading
    return Manifest(version, files, options, created_ms, source, _tombstones(d, source))


def _deletion(raw: dict, rows: int, source: str, w: str, strict: bool) -> DeletionRef:
    """A ``deletion`` object (of an entry or a tombstone), validated."""
    dv_file = check_rel(_str(raw, "file", source, w), source, f"{w}file", under=DELETION_DIR)
    offset = _int(raw, "offset", source, w, low=1)
    length = _int(raw, "length", source, w, low=1)
    cardinality = _int(raw, "cardinality", source, w)
    bitmap64 = raw.get("bitmap64", False)
    if not isinstance(bitmap64, bool):
        raise CorruptManifestError(f"expected true or false, got {_show(bitmap64)}", source=source, field=f"{w}bitmap64")
    if cardinality > rows:
        raise CorruptManifestError(f"{cardinality} deleted rows in a file of {rows} rows", source=source,
                                   field=f"{w}cardinality")  # fmt: skip
    return DeletionRef(dv_file, offset, length, cardinality, bitmap64, _hex(raw, "xxh64", source, w, strict))


def _tombstones(d: dict, source: str) -> list[Tombstone]:
    raw = d.get("tombstones", [])
    if not isinstance(raw, list):
        raise CorruptManifestError(f"expected a list, got {_show(raw)}", source=source, field="tombstones")
    out = []
    for i, t in enumerate(raw):
        w = f"tombstones[{i}]."
        if not isinstance(t, dict):
            raise CorruptManifestError(f"expected an object, got {_show(t)}", source=source, field=f"tombstones[{i}]")
        path = check_rel(t.get("path"), source, f"{w}path")
        size, rows = _int(t, "size", source, w), _int(t, "rows", source, w)
        content = _hex(t, "content_xxh64", source, w, required=True)
        deletion = _deletion(_dict(t, "deletion", source, w), rows, source, f"{w}deletion.", True)
        out.append(Tombstone(path, size, rows, content, deletion, _int(t, "version", source, w, low=1),
                             _int(t, "dropped_ms", source, w)))  # fmt: skip
    return out


# --------------------------------------------------------------------------------------
# Versions: the newest committed manifest wins; LATEST is a hint
# --------------------------------------------------------------------------------------


def manifest_path(version: int) -> str:
    return f"{META_DIR}/manifest-{version:08d}.json"


def manifest_versions(fs: pafs.FileSystem | Store, root: str) -> list[int]:
    """Committed manifest versions on disk, ascending."""
    return sorted(manifest_infos(fs, root))


def manifest_infos(fs: pafs.FileSystem | Store, root: str) -> dict[int, ObjectInfo]:
    """The committed manifests on disk by version, as one listing finds them (their size
    and change stamp tell a manifest edited in place from the one parsed before)."""
    return metadata_listing(fs, root)[0]


def metadata_listing(fs: pafs.FileSystem | Store, root: str) -> tuple[dict[int, ObjectInfo], ObjectInfo | None]:
    """One listing of ``_arrowidx/``: the manifests by version, and ``LATEST`` (None: absent)."""
    meta = join(root, META_DIR)
    out, latest = {}, None
    for info in as_store(fs).list(meta, recursive=False, hidden=True, missing_ok=True):
        name = posixpath.basename(info.path)
        m = _MANIFEST_NAME.fullmatch(name)
        if m and int(m.group(1)) > 0:
            out[int(m.group(1))] = info
        elif name == "LATEST":
            latest = info
    return out, latest


def current_manifest(fs: pafs.FileSystem | Store, root: str) -> tuple[int, ObjectInfo | None]:
    """The current manifest version and its listing (``(0, None)``: never indexed): the
    newest manifest on disk, unless ``LATEST`` names a newer one that is missing, which
    raises :class:`~arrowidx.errors.MissingManifestError` (reading the version left would
    silently undo the deletions of the lost one). One listing; ``LATEST`` itself is read
    only when it changed (its stamp) since this process last read it."""
    store = as_store(fs)
    infos, latest = metadata_listing(store, root)
    newest = max(infos) if infos else 0
    if latest is not None:
        check_latest(store, root, newest, latest)
    return newest, infos.get(newest)


def check_latest(store: Store, root: str, newest: int, latest: ObjectInfo | None = None) -> None:
    """Raise :class:`~arrowidx.errors.MissingManifestError` when ``LATEST`` names a version
    above ``newest`` (the newest listed) whose manifest is not on disk. A version committed
    after the listing was made is not missing (its manifest exists when looked at)."""
    named = _latest_named(store, root, latest)
    if named is None or named <= newest:
        return
    if store.stat([join(root, manifest_path(named))])[0] is not None:
        return  # committed after our listing: this reader reads the version it listed
    raise MissingManifestError(
        f"names manifest version {named}, but {posixpath.basename(manifest_path(named))} is not on disk (the"
        f" newest there is version {newest}): reading version {newest} would bring back every row deleted after"
        f" it. Restore the missing manifest(s) (a backup, the rest of a sync), or accept the rollback to version"
        f" {newest}: arrowidx.accept_rollback({root!r}) (CLI: arrowidx accept-rollback {root}), which says which"
        " deletions it undoes",
        source=join(root, LATEST), version=named, newest=newest,
    )  # fmt: skip


def _latest_named(store: Store, root: str, info: ObjectInfo | None) -> int | None:
    """The version ``LATEST`` names (None: missing or not a version number), read once per
    change stamp of the file where the store gives stamps."""
    key = ("LATEST", store.key, root, info.size, info.mtime_ns, info.stamp) if info is not None and info.stamp else None

    def read() -> tuple[int | None, int]:
        return latest_hint(store, root), 64

    from .. import facts

    return facts.MANIFESTS.get(key, read)


def latest_hint(fs: pafs.FileSystem, root: str) -> int | None:
    """What ``LATEST`` says (None if missing or unreadable): a hint only, never obeyed."""
    try:
        text = read_bytes(fs, join(root, LATEST)).decode("ascii").strip()
    except (ArrowIdxError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() and len(text) < 19 else None


def latest_version(fs: pafs.FileSystem, root: str) -> int:
    """The current manifest version: the newest on disk (0 when never indexed). ``LATEST``
    is a hint that cannot roll the dataset back; naming a newer version that is missing, it
    raises :class:`~arrowidx.errors.MissingManifestError` (:func:`current_manifest`)."""
    return current_manifest(fs, root)[0]


def load_manifest(fs: pafs.FileSystem, root: str) -> Manifest:
    """The current manifest, validated, or an empty one (version 0) if there is none.

    The newest manifest is the current one even when it does not validate: then this raises
    :class:`CorruptManifestError` rather than silently returning an older version (which
    would bring deleted rows back).
    """
    version = latest_version(fs, root)
    if version == 0:
        return Manifest()
    return read_manifest(fs, root, version)


def read_manifest(fs: pafs.FileSystem, root: str, version: int) -> Manifest:
    path = join(root, manifest_path(version))
    ensure_inside(fs, root, path, "manifest")
    try:
        return Manifest.from_json(read_bytes(fs, path, "manifest"), path, expect_version=version)
    except CorruptManifestError as e:
        advice = _damaged_manifest_advice(fs, root, version)
        if not advice:
            raise
        message = e.detail[len(e.field) + 2 :] if e.field and e.detail.startswith(f"{e.field}: ") else e.detail
        raise CorruptManifestError(f"{message}; {advice}", source=e.source, field=e.field) from None


def _damaged_manifest_advice(fs: pafs.FileSystem, root: str, version: int) -> str:
    """What to do when the newest manifest does not validate (the lake cannot be read: an
    older version would bring deleted rows back, so none is read in its place)."""
    versions = manifest_versions(fs, root)
    if not versions or versions[-1] != version:
        return ""
    older = [v for v in versions if v < version]
    if not older:
        return (f"the dataset's only manifest version is damaged: restore {manifest_path(version)} from a backup,"
                f" or move it out of {META_DIR}/, accept the rollback (arrowidx.accept_rollback({root!r}), CLI:"
                f" arrowidx accept-rollback {root}) and run arrowidx build again (deleted rows then come back)")  # fmt: skip
    previous = older[-1]
    try:
        Manifest.from_json(read_bytes(fs, join(root, manifest_path(previous)), "manifest"), "", expect_version=previous)
    except ArrowIdxError:
        return f"version {previous} is damaged too: restore {manifest_path(version)} from a backup"
    return (f"the dataset cannot be read while its newest version ({version}) is damaged: restore the file"
            f" from a backup, or go back to version {previous} (intact) by moving the file out of {META_DIR}/ and"
            f" accepting the rollback (arrowidx.accept_rollback({root!r}), CLI: arrowidx accept-rollback {root});"
            f" what version {version} committed, a build or a delete, is then undone: run it again")  # fmt: skip


def commit_manifest(fs: pafs.FileSystem | Store, root: str, manifest: Manifest, base_version: int) -> Manifest:
    """Commit ``manifest`` as version ``base_version + 1`` with one exclusive create
    (:meth:`Store.create <arrowidx.storage.Store.create>`: a hard link of a complete file on
    local disks, put-if-absent on object stores).

    Raises :class:`CommitConflictError` if another writer committed after ``base_version``
    was read (their work is kept; :func:`build` and :func:`delete` retry by themselves), and
    :class:`~arrowidx.errors.CommitUnsupportedError` where the store cannot create a file
    only if it is absent.
    """
    store = as_store(fs)
    conflict = CommitConflictError(
        f"{join(root, META_DIR)}: another build or delete committed version {base_version + 1} first;"
        " nothing was lost: run it again (build and delete retry by themselves)"
    )
    meta = join(root, META_DIR)
    if local_path(store.fs, meta) is not None:
        os.makedirs(local_path(store.fs, meta), exist_ok=True)
        ensure_inside(store.fs, root, meta, "folder")
    if latest_version(store, root) != base_version:
        raise conflict
    manifest.version = base_version + 1
    manifest.created_ms = int(time.time() * 1000)
    final = join(root, manifest_path(manifest.version))
    data = manifest.to_json().encode()
    fault_point("before-commit")
    if not store.create(final, data):
        raise conflict
    fault_point("committed")
    newest = latest_version(store, root)
    if newest != manifest.version:  # a version above ours existed (ours was vacuumed below it)
        store.delete(final)
        raise conflict
    manifest.source = final
    try:
        store.put(join(root, LATEST), str(manifest.version).encode())
    except (OSError, ArrowIdxError):
        pass  # only a hint: readers never need it
    fault_point("latest-written")
    return manifest


def require_commit(fs: pafs.FileSystem | Store, root: str) -> None:
    """Raise :class:`~arrowidx.errors.CommitUnsupportedError` unless the store can commit a
    manifest version (put-if-absent): asked by writers before they upload anything."""
    as_store(fs).require_create(join(root, manifest_path(1)))


def check_base(fs: pafs.FileSystem | Store, root: str, base_version: int) -> None:
    """The cheap conflict check a writer makes before uploading what only its own commit
    would reference (one listing of ``_arrowidx/``): :class:`CommitConflictError` when
    another writer committed after ``base_version``."""
    if latest_version(fs, root) != base_version:
        raise CommitConflictError(
            f"{join(root, META_DIR)}: another build or delete committed after version {base_version};"
            " nothing was lost: run it again (build and delete retry by themselves)"
        )


def with_commit_retries(attempt: Callable[[], T], tries: int = COMMIT_TRIES) -> T:
    """Run ``attempt`` (plan + write + commit) again when another writer committed first."""
    for i in range(tries):
        try:
            return attempt()
        except CommitConflictError:
            if i == tries - 1:
                raise
            time.sleep(random.uniform(0.01, 0.05) * (i + 1))
    raise AssertionError("unreachable")


def check_stale_option(value: str) -> str:
    if value not in STALE_DELETIONS:
        raise OptionError(f"on_stale_deletions must be one of {', '.join(STALE_DELETIONS)}, got {value!r}")
    return value


def file_infos(fs: pafs.FileSystem | Store, root: str, rel_paths: Iterable[str]) -> dict[str, ObjectInfo | None]:
    """Per relative path, its :class:`~arrowidx.storage.ObjectInfo` (None: no such file)."""
    rel_paths = list(rel_paths)
    return dict(zip(rel_paths, as_store(fs).stat([join(root, p) for p in rel_paths])))


def schema_to_b64(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


# --------------------------------------------------------------------------------------
# What a reader trusts: the seam between the manifest (commits, integrity) and the scan.
# The scan calls only these three; how freshness and integrity are decided lives here.
# --------------------------------------------------------------------------------------


def same_by_stamp(entry: FileEntry, info: ObjectInfo | None) -> bool:
    """The store says the file was not written or replaced since it was indexed: the same
    size, modification time and change stamp (local disks: inode and change time, which
    ``cp -p`` and ``rsync -t`` cannot set back; object stores: the ETag, a hash of the
    content). No byte of the file needs reading."""
    return (
        info is not None and entry.stamp is not None and info.stamp == entry.stamp and info.size == entry.size
        and (entry.mtime_ns is None or info.mtime_ns is None or info.mtime_ns == entry.mtime_ns)
    )  # fmt: skip


def by_tail(entry: FileEntry, info: ObjectInfo) -> bool:
    """Whether :func:`entry_is_fresh` decides by the file's tail fingerprint (its footer)
    rather than its whole content: for an entry indexed before content hashes existed, and on
    a store without change stamps when the modification time is the one indexed (a copy
    changes it, and then the content decides)."""
    if entry.fingerprint is None:
        return False
    if entry.content_xxh64 is None:
        return True
    return entry.stamp is None and info.stamp is None and entry.mtime_ns is not None and info.mtime_ns == entry.mtime_ns


def entry_is_fresh(entry: FileEntry, info: ObjectInfo | None, footer: Footer | Callable[[], Footer] | None = None, *,
                   content: Callable[[], str] | None = None, on_stale_deletions: str = "raise") -> bool:  # fmt: skip
    """True when the data file is still the one ``entry`` describes (its index and deletion
    vector apply); False when it changed (read it in full, ignore its index).

    Identity is the content: the store's change stamp when it is the one recorded
    (:func:`same_by_stamp`: nothing read); else the XXH64 of the whole file (``content``, a
    function computing it, called only then: a copied lake is hashed once per process), so a
    rewrite is caught whatever it keeps (size, mtime, footer). Two cases use the file's tail
    fingerprint instead (``footer``: the footer or a function reading it; :func:`by_tail`):
    an entry indexed before content hashes existed (``build`` re-indexes those), and a store
    without change stamps whose modification time is the one indexed (the limit written in
    docs/reliability.md). Entries without any fingerprint fall back to size + mtime. A
    changed file that has deletions raises :class:`StaleDeletionError` unless
    ``on_stale_deletions="read-full"``.
    """
    where = info.path if info is not None else entry.path
    if info is None or info.size != entry.size:
        fresh = False  # gone, or another size: nothing to read to see it
    elif same_by_stamp(entry, info):
        fresh = True
    elif by_tail(entry, info):
        if footer is None:
            raise ValueError("entry_is_fresh: this entry's identity is its fingerprint: pass the footer")
        footer = footer() if callable(footer) else footer
        fresh = footer.fingerprint == entry.fingerprint
        if fresh and footer.num_rows != entry.rows:
            raise CorruptIndexError(
                f"the manifest says {entry.rows} rows but the file has {footer.num_rows}; rebuild with arrowidx build",
                source=where,
            )
    elif entry.content_xxh64 is not None:
        if content is None:
            raise ValueError("entry_is_fresh: this entry's identity is its content: pass content=")
        fresh = content() == entry.content_xxh64
    else:
        fresh = entry.matches(info)
    if not fresh and entry.deletion is not None and on_stale_deletions != "read-full":
        raise StaleDeletionError(
            f"changed since {entry.deletion.cardinality} row(s) were deleted from it (its content no longer"
            " matches the manifest's), so its deletion vector no longer applies. Restore the file,"
            " or pass on_stale_deletions='read-full' to read it in full (the deleted rows come back), or"
            " rebuild with build(..., on_stale_deletions='read-full') to forget those deletions",
            path=where,
        )
    return fresh


def same_content(old: FileEntry, new: FileEntry) -> bool:
    """Whether two entries describe the same content: by their content hashes, or (``old``
    indexed before content hashes existed) by their tail fingerprints, else size + mtime."""
    if old.content_xxh64 is not None and new.content_xxh64 is not None:
        return old.size == new.size and old.content_xxh64 == new.content_xxh64
    if old.fingerprint is not None:
        return old.fingerprint == new.fingerprint
    return old.size == new.size and (old.mtime_ns is None or new.mtime_ns is None or old.mtime_ns == new.mtime_ns)


def _listed(entry: FileEntry) -> str:
    """`` (listed in <manifest> as files[i])`` for errors about what an entry references."""
    where = getattr(entry, "_listed", None)
    return f" (listed in {where[0]} as {where[1]})" if where else ""


def load_index_bytes(fs: pafs.FileSystem, root: str, entry: FileEntry) -> bytes | None:
    """The verified container bytes of ``entry``'s index (None if it has none).

    Raises :class:`CorruptIndexError` naming the index file when it is missing, outside the
    root, of another size or fails its checksum.
    """
    ref = entry.index
    if ref is None:
        return None
    if ref.embedded is not None:
        source = f"{join(root, entry.path)} (embedded index)"
        try:
            data = base64.b64decode(ref.embedded, validate=True)
        except (binascii.Error, ValueError) as e:
            raise CorruptIndexError(f"embedded index is not base64: {e}", source=source) from None
    else:
        source = join(root, ref.file)
        ensure_inside(fs, root, source, "index file")
        data = read_bytes(fs, source, "index file")
    if len(data) != ref.size:
        raise CorruptIndexError(f"index holds {len(data)} bytes, the manifest says {ref.size}{_listed(entry)};"
                                " rebuild with arrowidx build", source=source)  # fmt: skip
    if ref.xxh64 is not None and checksum(data) != ref.xxh64:
        raise CorruptIndexError(f"index bytes do not match their checksum in the manifest{_listed(entry)} (damaged);"
                                " rebuild with arrowidx build", source=source)  # fmt: skip
    return data


def deletion_record_length(ref: DeletionRef) -> int:
    """Bytes of the deletion file holding ``ref``'s vector: a 32-bit record is its length
    field, that many bytes and a CRC (the range's length is the length field's value, as
    Paimon's index manifest records it); a 64-bit record is the range."""
    return ref.length if ref.bitmap64 else ref.length + 8


def deletion_vector_of(entry: FileEntry, path: str, record: bytes) -> DeletionVector:
    """``entry``'s deletion vector from the bytes of its record (read alone from the
    deletion file ``path``), verified: the range must lie in the file and match its
    checksum in the manifest, and the record must parse. Errors name the deletion file (or
    the manifest, when its range is what is wrong)."""
    ref = entry.deletion
    end = ref.offset + ref.length
    if len(record) != deletion_record_length(ref):
        message = f"deletion vector of {entry.path} at bytes [{ref.offset}, {ref.offset + deletion_record_length(ref)}) is past the end of {path}"
        where = getattr(entry, "_listed", None)
        if where:  # the manifest's range is what is wrong
            raise CorruptManifestError(message, source=where[0], field=f"{where[1]}.deletion.offset")
        raise CorruptIndexError(message, source=path, offset=ref.offset)
    if ref.xxh64 is not None and checksum(record[: ref.length]) != ref.xxh64:
        raise CorruptIndexError(
            f"deletion vector of {entry.path} at bytes [{ref.offset}, {end}) does not match its checksum in the"
            f" manifest{_listed(entry)} (the file is damaged, or the manifest points at another vector);"
            " restore them from a backup",
            source=path, offset=ref.offset,
        )  # fmt: skip
    try:  # the record alone, behind a deletion file's version byte
        vectors = read_deletion_vectors(b"\x01" + record, ranges={entry.path: (1, ref.length, ref.cardinality)}, bitmap64=ref.bitmap64)
    except CorruptIndexError as e:
        raise CorruptIndexError(e.detail, source=path, offset=ref.offset + max(0, (e.offset or 1) - 1)) from None
    return vectors[entry.path]
