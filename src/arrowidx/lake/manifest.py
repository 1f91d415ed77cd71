"""The manifest format: one version of an indexed dataset's manifest, as data classes with
their validation.

A manifest (``_arrowidx/manifest-<N>.json``, see :mod:`.layout`) lists every indexed data
file (:class:`FileEntry`): its size, change stamp and content fingerprint when it was
indexed, its row count, where its index container is (:class:`IndexRef`: embedded, or a
file under ``_arrowidx/index/``) and where its deletion vector is (:class:`DeletionRef`).

A manifest entry names its data file's content (:attr:`FileEntry.content_xxh64`, the XXH64
of the whole file) and its deletions belong to that content: an entry with deletions that
leaves the manifest (its file gone, or replaced by other content) leaves a
:class:`Tombstone`, and a file with that content that appears again gets its deletions back
(:mod:`arrowidx.lake.tombstones`), until ``vacuum`` drops the tombstone after its retention.

Every manifest carries an XXH64 of its own canonical content and of every index file and
deletion-vector range it references; all of it is validated when read
(:class:`~arrowidx.errors.CorruptManifestError` names the manifest and the field), and every
path must be a normalised path inside the dataset root (:func:`check_rel`).

How a manifest becomes a version: :mod:`.commit`; what a reader trusts of it: :mod:`.freshness`.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import xxhash

from ..errors import CorruptManifestError
from ..storage import ObjectInfo
from .layout import DELETION_DIR, INDEX_DIR, META_DIR

FORMAT = "arrowidx-manifest"
#: 2: checksums, fingerprints, exclusive-create commits; 3: content hashes, tombstones; 4: the
#: entries in file-table segments the manifest names (:mod:`.filetable`), not listed inline
FORMAT_VERSION = 4
#: the first format whose entries are in file-table segments
SEGMENTS_FORMAT = 4

_HEX16 = re.compile(r"[0-9a-f]{16}")
_FINGERPRINT = re.compile(r"(\d{1,19}):([0-9a-f]{16})")
#: field metadata of what a reader notes on an entry, never written to the manifest
_NOT_STORED = {"stored": False}


def checksum(data: bytes) -> str:
    """XXH64 of ``data`` as 16 hex digits: what a manifest records for index and deletion bytes."""
    return xxhash.xxh64_hexdigest(data)


def schema_to_b64(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def stored_fields(obj: Any) -> dict:
    """The fields of a manifest data class as the manifest stores them (nested references
    too; what a reader notes on them is left out)."""
    out = {}
    for f in dataclasses.fields(obj):
        if not f.metadata.get("stored", True):
            continue
        value = getattr(obj, f.name)
        if value is None and f.metadata.get("stored_if_set"):
            continue
        out[f.name] = stored_fields(value) if dataclasses.is_dataclass(value) else value
    return out


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
    #: the decoded :attr:`schema`, set when the manifest is read (validated there)
    arrow: pa.Schema | None = field(default=None, compare=False, repr=False, metadata=_NOT_STORED)

    def arrow_schema(self) -> pa.Schema:
        if self.arrow is not None:
            return self.arrow
        return _decode_schema(self.schema, "<manifest>", "index.schema", {})


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
    #: the file id the lake index keys this content under (:mod:`arrowidx.lake.lakeindex`;
    #: given by a build to each content it indexes, None: not keyed). Stored only when set.
    fid: int | None = field(default=None, metadata={"stored_if_set": True})
    #: the distinct key hashes a build collected while indexing the file, for the lake index
    #: (``{column: hashes or None}``; never stored)
    keys: dict | None = field(default=None, compare=False, repr=False, metadata=_NOT_STORED)
    #: ``(manifest, "files[i]")``: where the entry was read from, for errors about what it references
    listed: tuple[str, str] | None = field(default=None, compare=False, repr=False, metadata=_NOT_STORED)

    def matches(self, info: ObjectInfo | None) -> bool:
        """Size and mtime unchanged (only for entries without a fingerprint, written before
        fingerprints existed)."""
        if info is None or info.size != self.size:
            return False
        return self.mtime_ns is None or info.mtime_ns is None or info.mtime_ns == self.mtime_ns

    def where_listed(self) -> str:
        """`` (listed in <manifest> as files[i])`` for errors about what the entry references."""
        return f" (listed in {self.listed[0]} as {self.listed[1]})" if self.listed else ""

    def to_dict(self) -> dict:
        """The entry as the manifest stores it."""
        return stored_fields(self)

    @classmethod
    def from_dict(cls, d: dict) -> FileEntry:
        """The inverse of :meth:`to_dict` (no validation: see :meth:`Manifest.from_json`)."""
        index = IndexRef(**d["index"]) if d.get("index") else None
        deletion = DeletionRef(**d["deletion"]) if d.get("deletion") else None
        return cls(d["path"], d["size"], d["mtime_ns"], d["rows"], index, deletion, d.get("fingerprint"), d.get("stamp"),
                   d.get("content_xxh64"), d.get("fid"))  # fmt: skip


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
    #: the lake index of this version (:class:`arrowidx.lake.lakeindex.LakeIndex`; None: none),
    #: and the next file id a build gives (both stored only with a lake index)
    lake_index: Any = None
    next_fid: int = 0
    #: the file-table segments of this version (:class:`.filetable.SegmentRef`, oldest first;
    #: format 4): ``files`` is then the :class:`.filetable.FileTable` they hold (entries
    #: materialised when asked for), and a writer's copy a :class:`.filetable.FileOverlay`
    #: of it. A commit sets them to the segments of what it commits (:mod:`.commit`).
    segments: list = field(default_factory=list)
    #: the file table ``segments`` hold, as read (None: a format-3 manifest, or new)
    table: Any = field(default=None, compare=False, repr=False)
    #: the format it was read in (a build upgrades an older one; never stored)
    read_format: int = field(default=FORMAT_VERSION, compare=False, repr=False)

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
        if isinstance(self.files, dict):
            files = {rel: dataclasses.replace(e) for rel, e in self.files.items()}
        else:  # a file table, or a copy of one: entries copied when a writer reads them
            from .filetable import FileOverlay

            files = FileOverlay(self.files, dataclasses.replace)
        return dataclasses.replace(self, files=files, options=dict(self.options), tombstones=list(self.tombstones))

    def referenced_files(self) -> set[str]:
        """The index and deletion files (relative paths) this version references: those of
        its entries and of its tombstones."""
        out = {e.index.file for e in self.files.values() if e.index is not None and e.index.file is not None}
        out |= {e.deletion.file for e in self.files.values() if e.deletion is not None}
        out |= {run.file for run in self.lake_index.runs} if self.lake_index is not None else set()
        out |= {ref.file for ref in self.segments}
        return out | {t.deletion.file for t in self.tombstones}

    def _payload(self) -> dict:
        payload = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "version": self.version,
            "created_ms": self.created_ms,
            "options": self.options,
            "segments": [ref.to_json() for ref in self.segments],
            "tombstones": [stored_fields(t) for t in self.tombstones],
        }
        if self.lake_index is not None:  # (a reader before the lake index ignores both: it plans file by file)
            payload["lake_index"] = self.lake_index.to_json()
            payload["next_fid"] = self.next_fid
        return payload

    def to_json(self) -> str:
        payload = self._payload()
        payload["checksum"] = checksum(canonical(payload))
        return json.dumps(payload, indent=1)

    @classmethod
    def from_json(cls, text: str | bytes, source: str, expect_version: int | None = None) -> Manifest:
        """Parse and validate a manifest; any problem is a :class:`CorruptManifestError`
        naming ``source`` and the field. Format 4: its entries are in the segments it names
        (:attr:`segments`), opened by :func:`arrowidx.lake.commit.read_manifest`; ``files``
        is empty here."""
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


def canonical(payload: dict) -> bytes:
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
        if checksum(canonical(body)) != stored:
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
    schemas: dict[str, pa.Schema] = {}
    files: dict[str, FileEntry] = {}
    segments = []
    if fmt >= SEGMENTS_FORMAT:
        from .filetable import SegmentRef

        raw_segments = d.get("segments")
        if not isinstance(raw_segments, list):
            raise CorruptManifestError(f"expected a list, got {_show(raw_segments)}", source=source, field="segments")
        segments = [SegmentRef.from_json(r, source, f"segments[{i}]") for i, r in enumerate(raw_segments)]
    else:
        if not isinstance(raw_files, list):
            raise CorruptManifestError(f"expected a list, got {_show(raw_files)}", source=source, field="files")
        for i, f in enumerate(raw_files):
            where = f"files[{i}]"
            if not isinstance(f, dict):
                raise CorruptManifestError(f"expected an object, got {_show(f)}", source=source, field=where)
            entry = entry_from_dict(f, source, where, strict, schemas)
            if entry.path in files:
                raise CorruptManifestError(f"data file {entry.path!r} is listed twice", source=source, field=f"{where}.path")
            files[entry.path] = entry
    lake_index, next_fid = None, 0
    if d.get("lake_index") is not None:
        from .lakeindex import LakeIndex  # (numpy and the key types: only for a lake that has one)

        lake_index = LakeIndex.from_json(d["lake_index"], source)
        next_fid = _int(d, "next_fid", source, "")
        fids = [e.fid for e in files.values() if e.fid is not None]
        if fids and (max(fids) >= next_fid or len(set(fids)) != len(fids)):
            raise CorruptManifestError("file ids ('fid') must be distinct and below 'next_fid'", source=source, field="next_fid")
    return Manifest(version, files, options, created_ms, source, _tombstones(d, source), lake_index, next_fid, segments,
                    read_format=fmt)  # fmt: skip


#: a data-file path that is not a normalised relative path inside the root, outside META_DIR
#: (what :func:`check_rel` refuses), for every path of a file table at once (RE2)
_BAD_PATH = r"\x00|\\|^/|^[A-Za-z]:|://|(^|/)\.\.?(/|$)|//|/$|^$|^" + re.escape(META_DIR) + r"(/|$)"


def check_paths(paths: Any, source: str) -> None:
    """Every path of a file table (an Arrow string column) is a data-file path
    :func:`check_rel` accepts, checked at once; the first bad one raises its error."""
    import pyarrow.compute as pc

    bad = pc.match_substring_regex(paths, _BAD_PATH)
    if pc.any(bad).as_py():
        first = pc.filter(paths, bad)[0].as_py()
        check_rel(first, source, f"files[{first!r}].path")
        raise CorruptManifestError(f"path {first!r} is not a normalised path inside the dataset root", source=source,
                                   field=f"files[{first!r}].path")  # fmt: skip


def check_fids(fids: Any, next_fid: int, source: str) -> None:
    """The file ids of a file table (numpy, -1: none) are distinct and below ``next_fid``."""
    import numpy as np

    keyed = np.sort(fids[fids >= 0])  # (not np.unique: it imports numpy.ma, ~10-50 ms in a new process)
    if len(keyed) and (int(keyed[-1]) >= next_fid or bool((keyed[1:] == keyed[:-1]).any())):
        raise CorruptManifestError("file ids ('fid') must be distinct and below 'next_fid'", source=source, field="next_fid")


def entry_from_dict(f: dict, source: str, at: str, strict: bool = True, schemas: dict | None = None) -> FileEntry:
    """One entry (a manifest's ``files[i]``, or a file-table row's dict), validated;
    problems are a :class:`CorruptManifestError` naming ``source`` and the field below ``at``."""
    schemas = {} if schemas is None else schemas
    where = f"{at}."
    path = check_rel(f.get("path"), source, f"{where}path")
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
                         _layout(raw, index_size, source, w), _decode_schema(schema_text, source, f"{w}schema", schemas))  # fmt: skip
    deletion = None
    raw = _dict(f, "deletion", source, where, optional=True)
    if raw is not None:
        deletion = _deletion(raw, rows, source, f"{where}deletion.", strict)
    fid = _int(f, "fid", source, where, optional=True)
    return FileEntry(path, size, mtime_ns, rows, index, deletion, fingerprint, stamp, content, fid,
                     listed=(source, at))  # fmt: skip

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
