"""Reading a Paimon table's metadata: snapshots, schemas, manifest lists, manifests and the
index manifest (Avro via ``fastavro``), and Paimon's ``BinaryRow`` (partitions, statistics).

Manifests written by Paimon 0.9 and by current releases are both read: fields added later
(``_VALUE_STATS_COLS``, ``_EXTERNAL_PATH``, ...) are optional.
"""

from __future__ import annotations

import datetime
import functools
import json
import mmap
import os
import posixpath
import re
import struct
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from ..errors import PaimonTableError, UnsupportedTableError
from .cache import MANIFESTS, file_key

SNAPSHOT_VERSIONS = (1, 2, 3)
SCHEMA_VERSIONS = (1, 2, 3)
MANIFEST_ENTRY_VERSIONS = (2,)
MANIFEST_FILE_VERSIONS = (2,)
INDEX_ENTRY_VERSIONS = (1,)
ADD, DELETE = 0, 1
DELETION_VECTORS = "DELETION_VECTORS"


def read_bytes(fs: pafs.FileSystem, path: str) -> bytes:
    try:
        if isinstance(fs, pafs.LocalFileSystem):  # small metadata files: Python's open() costs less
            with open(path, "rb") as f:
                return f.read()
        with fs.open_input_stream(path) as f:
            return f.read()
    except FileNotFoundError:
        raise PaimonTableError(f"{path}: file not found") from None


def map_bytes(fs: pafs.FileSystem, path: str) -> bytes | memoryview:
    """A file's bytes for reading in place: a read-only memory map of a local file (only the
    pages a reader touches are read, e.g. a bloom filter's few words of a large index
    file), else the bytes read whole. For immutable files only (Paimon never rewrites one)."""
    if not isinstance(fs, pafs.LocalFileSystem):
        return read_bytes(fs, path)
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return b""
            return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    except FileNotFoundError:
        raise PaimonTableError(f"{path}: file not found") from None
    except (OSError, ValueError):  # e.g. the process's limit of mappings reached: read it whole
        return read_bytes(fs, path)


def _exists(fs: pafs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def _json(fs: pafs.FileSystem, path: str) -> dict:
    try:
        return json.loads(read_bytes(fs, path))
    except (ValueError, UnicodeDecodeError) as e:
        raise PaimonTableError(f"{path}: not a valid JSON document ({e})") from None


# ----------------------------------------------------------------------------------------
# Snapshots and schemas
# ----------------------------------------------------------------------------------------
def snapshot_ids(fs: pafs.FileSystem, table: str) -> list[int]:
    """Every ``snapshot-N`` present, ascending (expired ones are gone)."""
    selector = pafs.FileSelector(posixpath.join(table, "snapshot"), allow_not_found=True)
    ids = []
    for info in fs.get_file_info(selector):
        m = re.fullmatch(r"snapshot-(\d+)", info.base_name)
        if m:
            ids.append(int(m.group(1)))
    return sorted(ids)


def latest_snapshot_id(fs: pafs.FileSystem, table: str) -> int | None:
    """The LATEST hint when it points at an existing snapshot, else the highest present."""
    hint = posixpath.join(table, "snapshot", "LATEST")
    if _exists(fs, hint):
        try:
            n = int(read_bytes(fs, hint).strip())
            # the hint may lag behind: Java also looks for snapshot-(n+1), ...
            while _exists(fs, posixpath.join(table, "snapshot", f"snapshot-{n + 1}")):
                n += 1
            if _exists(fs, posixpath.join(table, "snapshot", f"snapshot-{n}")):
                return n
        except ValueError:
            pass
    ids = snapshot_ids(fs, table)
    return ids[-1] if ids else None


def read_snapshot(fs: pafs.FileSystem, table: str, snapshot_id: int) -> dict:
    path = posixpath.join(table, "snapshot", f"snapshot-{snapshot_id}")
    if not _exists(fs, path):
        ids = snapshot_ids(fs, table)
        have = f"snapshots {ids[0]}..{ids[-1]} exist" if ids else "the table has no snapshot"
        raise PaimonTableError(f"{path}: snapshot {snapshot_id} not found ({have}; older ones may have expired)")
    snap = _json(fs, path)
    version = snap.get("version", 1)
    if version not in SNAPSHOT_VERSIONS:
        raise UnsupportedTableError(f"{path}: snapshot version {version} is not supported (known: {SNAPSHOT_VERSIONS})")
    for key in ("id", "schemaId", "baseManifestList", "deltaManifestList"):
        if key not in snap:
            raise PaimonTableError(f"{path}: snapshot has no {key!r} field")
    return snap


@dataclass(frozen=True)
class PaimonField:
    id: int
    name: str
    type: Any  # Paimon's JSON type: a string like "INT NOT NULL" or a dict for nested types


@dataclass
class TableSchema:
    id: int
    fields: list[PaimonField]
    partition_keys: list[str]
    primary_keys: list[str]
    options: dict[str, str]
    path: str = ""
    _by_id: dict[int, PaimonField] = field(default_factory=dict, repr=False)
    _arrow: pa.Schema | None = field(default=None, repr=False)

    def __post_init__(self):
        self._by_id = {f.id: f for f in self.fields}

    def field_by_id(self, field_id: int) -> PaimonField | None:
        return self._by_id.get(field_id)

    def field(self, name: str) -> PaimonField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def arrow_schema(self) -> pa.Schema:
        if self._arrow is None:
            self._arrow = pa.schema([pa.field(f.name, arrow_type(f.type, self.path)) for f in self.fields])
        return self._arrow


def latest_schema_id(fs: pafs.FileSystem, table: str) -> int:
    """The newest schema id of the table at ``table`` (its highest ``schema/schema-N``)."""
    infos = fs.get_file_info(pafs.FileSelector(posixpath.join(table, "schema"), allow_not_found=True))
    ids = [int(i.base_name[7:]) for i in infos if i.base_name.startswith("schema-") and i.base_name[7:].isdigit()]
    if not ids:
        raise PaimonTableError(f"{table}: not a Paimon table (no schema/schema-N)")
    return max(ids)


def read_schema(fs: pafs.FileSystem, table: str, schema_id: int) -> TableSchema:
    path = posixpath.join(table, "schema", f"schema-{schema_id}")
    if not _exists(fs, path):
        raise PaimonTableError(f"{path}: schema {schema_id} not found")
    doc = _json(fs, path)
    version = doc.get("version", 1)
    if version not in SCHEMA_VERSIONS:
        raise UnsupportedTableError(f"{path}: schema version {version} is not supported (known: {SCHEMA_VERSIONS})")
    try:
        fields = [PaimonField(int(f["id"]), str(f["name"]), f["type"]) for f in doc["fields"]]
        return TableSchema(
            int(doc.get("id", schema_id)),
            fields,
            list(doc.get("partitionKeys", [])),
            list(doc.get("primaryKeys", [])),
            {str(k): str(v) for k, v in (doc.get("options") or {}).items()},
            path,
        )
    except (KeyError, TypeError, ValueError) as e:
        raise PaimonTableError(f"{path}: malformed schema ({type(e).__name__}: {e})") from None


_SIMPLE = {
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "DATE": pa.date32(),
    "STRING": pa.string(),
    "BYTES": pa.binary(),
}


@functools.lru_cache(maxsize=1024)
def _base(ptype: str) -> tuple[str, list[int], bool]:
    """``("TIMESTAMP", [3], ltz)`` for ``"TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL"``."""
    s = " ".join(ptype.upper().split())
    if s.endswith(" NOT NULL"):
        s = s[: -len(" NOT NULL")]
    ltz = False
    for suffix in (" WITH LOCAL TIME ZONE",):
        if suffix in s:
            ltz, s = True, s.replace(suffix, "")
    if s.startswith("TIMESTAMP_LTZ"):
        ltz, s = True, "TIMESTAMP" + s[len("TIMESTAMP_LTZ") :]
    m = re.fullmatch(r"([A-Z ]+?)\s*(?:\(([\d,\s]*)\))?", s)
    if not m:
        return s, [], ltz
    args = [int(a) for a in (m.group(2) or "").split(",") if a.strip()]
    return m.group(1).strip(), args, ltz


def arrow_type(ptype: Any, where: str = "") -> pa.DataType:
    """The Arrow type Paimon's Parquet files hold for a Paimon type."""
    if isinstance(ptype, dict):
        kind = str(ptype.get("type", "")).split()[0].upper()
        if kind == "ARRAY":
            return pa.list_(arrow_type(ptype["element"], where))
        if kind == "MAP":
            return pa.map_(arrow_type(ptype["key"], where), arrow_type(ptype["value"], where))
        if kind == "ROW":
            return pa.struct([pa.field(f["name"], arrow_type(f["type"], where)) for f in ptype["fields"]])
        raise UnsupportedTableError(f"{where}: type {ptype.get('type')!r} is not supported")
    base, args, ltz = _base(str(ptype))
    if base in _SIMPLE:
        return _SIMPLE[base]
    if base in ("CHAR", "VARCHAR"):
        return pa.string()
    if base in ("BINARY", "VARBINARY"):
        return pa.binary()
    if base == "DECIMAL":
        precision = args[0] if args else 10
        scale = args[1] if len(args) > 1 else 0
        return pa.decimal128(precision, scale)
    if base == "TIMESTAMP":
        p = args[0] if args else 6
        unit = "ms" if p <= 3 else "us" if p <= 6 else "ns"
        return pa.timestamp(unit, tz="UTC" if ltz else None)
    if base == "TIME":
        return pa.time32("ms")
    raise UnsupportedTableError(f"{where}: Paimon type {ptype!r} is not supported")


# ----------------------------------------------------------------------------------------
# BinaryRow (partitions and min/max statistics)
# ----------------------------------------------------------------------------------------
class _Unknown:
    """A value that could not be decoded: statistics holding it never prune."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


def decode_binary_row(data: bytes, ptypes: list[Any], wanted: set[int] | None = None) -> list[Any] | None:
    """The values of a serialized ``BinaryRow`` (4-byte arity, then the row), as Python
    values; None for NULL, :data:`UNKNOWN` for types not decoded and for fields not in
    ``wanted`` (positions; None: all). None if the arity differs."""
    if len(data) < 4:
        return None
    arity = int.from_bytes(data[:4], "big")
    if arity != len(ptypes):
        return None
    row = memoryview(data)[4:]
    null_bytes = ((arity + 63 + 8) // 64) * 8
    if len(row) < null_bytes + 8 * arity:
        return None
    out: list[Any] = []
    for i, ptype in enumerate(ptypes):
        if wanted is not None and i not in wanted:
            out.append(UNKNOWN)
            continue
        bit = i + 8
        if row[bit >> 3] & (1 << (bit & 7)):
            out.append(None)
            continue
        slot = bytes(row[null_bytes + 8 * i : null_bytes + 8 * i + 8])
        try:
            out.append(_decode_slot(slot, row, ptype))
        except (ValueError, struct.error, UnicodeDecodeError, IndexError):
            out.append(UNKNOWN)
    return out


def _var_bytes(slot: bytes, row: memoryview) -> bytes:
    v = int.from_bytes(slot, "little")
    if v & (1 << 63):  # up to 7 bytes stored inline, length in the highest byte
        length = (v >> 56) & 0x7F
        if length > 7:
            raise ValueError("bad inline length")
        return slot[:length]
    offset, length = v >> 32, v & 0xFFFFFFFF
    if offset + length > len(row):
        raise ValueError("variable part out of range")
    return bytes(row[offset : offset + length])


def _decode_slot(slot: bytes, row: memoryview, ptype: Any) -> Any:
    if isinstance(ptype, dict):
        return UNKNOWN
    base, args, _ = _base(str(ptype))
    if base == "BOOLEAN":
        return slot[0] != 0
    if base == "TINYINT":
        return struct.unpack("<b", slot[:1])[0]
    if base == "SMALLINT":
        return struct.unpack("<h", slot[:2])[0]
    if base in ("INT", "INTEGER"):
        return struct.unpack("<i", slot[:4])[0]
    if base == "BIGINT":
        return struct.unpack("<q", slot)[0]
    if base == "FLOAT":
        return struct.unpack("<f", slot[:4])[0]
    if base == "DOUBLE":
        return struct.unpack("<d", slot)[0]
    if base == "DATE":
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=struct.unpack("<i", slot[:4])[0])
    if base in ("CHAR", "VARCHAR", "STRING"):
        return _var_bytes(slot, row).decode("utf-8")
    if base in ("BINARY", "VARBINARY", "BYTES"):
        return _var_bytes(slot, row)
    if base == "DECIMAL":
        precision = args[0] if args else 10
        scale = args[1] if len(args) > 1 else 0
        if precision <= 18:
            return Decimal(struct.unpack("<q", slot)[0]).scaleb(-scale)
        return UNKNOWN
    return UNKNOWN


# ----------------------------------------------------------------------------------------
# Manifests
# ----------------------------------------------------------------------------------------
def read_avro(fs: pafs.FileSystem, path: str) -> list[dict]:
    """Every record of an Avro file; a truncated or corrupt file raises PaimonTableError."""
    import io

    import fastavro

    data = read_bytes(fs, path)
    try:
        return list(fastavro.reader(io.BytesIO(data)))
    except Exception as e:  # noqa: BLE001 - fastavro raises many kinds on bad bytes
        raise PaimonTableError(f"{path}: not a readable Avro file ({type(e).__name__}: {e})") from None


def _check_version(record: dict, known: tuple, path: str, what: str) -> None:
    version = record.get("_VERSION")
    if version not in known:
        raise UnsupportedTableError(f"{path}: {what} version {version} is not supported (known: {known})")


@dataclass
class DataFile:
    """One live data file of a snapshot (a merged ``ManifestEntry``)."""

    partition: bytes
    bucket: int
    total_buckets: int
    name: str
    size: int
    rows: int
    level: int
    schema_id: int
    min_seq: int
    max_seq: int
    value_stats: tuple[bytes, bytes, list | None] | None
    value_stats_cols: list[str] | None
    extra_files: list[str]
    embedded_index: bytes | None
    external_path: str | None
    delete_row_count: int | None
    manifest: str
    write_cols: list[str] | None = None


def plain_name(value: Any, where: str, what: str) -> str:
    """A file name from table metadata, checked to be a plain name: Paimon writes generated
    names (``data-<uuid>-0.parquet``), so a separator or ``..`` is damage, and would make
    arrowidx read outside the table directory."""
    if not isinstance(value, str) or not value or value in (".", "..") or "/" in value or "\\" in value:
        raise PaimonTableError(f"{where}: {what} {value!r} is not a plain file name (damaged metadata)")
    return value


def read_manifest_list(fs: pafs.FileSystem, table: str, name: str | None, size: int | None = None) -> list[tuple[str, int | None]]:
    """``[(manifest name, its size or None)]`` of a manifest list (``size``: as the
    snapshot records it), shared by the table objects of the process when its size is known
    (recorded, or found by a stat on a local filesystem)."""
    if not name:
        return []
    path = posixpath.join(table, "manifest", plain_name(name, table, "manifest list"))
    recorded = size if isinstance(size, int) else None
    if recorded is None and not isinstance(fs, pafs.LocalFileSystem):
        return _read_manifest_list(fs, path)

    def parse() -> tuple[list[tuple[str, int | None]], int]:
        entries = _read_manifest_list(fs, path)
        return entries, 200 * len(entries) + 100  # (weight: roughly its Python objects)

    return MANIFESTS.get(file_key(fs, path, recorded), parse)


def _read_manifest_list(fs: pafs.FileSystem, path: str) -> list[tuple[str, int | None]]:
    """:func:`read_manifest_list` of the file at ``path``, parsed."""
    out = []
    for rec in read_avro(fs, path):
        _check_version(rec, MANIFEST_FILE_VERSIONS, path, "manifest file meta")
        try:
            size = rec.get("_FILE_SIZE")
            out.append((plain_name(rec["_FILE_NAME"], path, "manifest"), size if isinstance(size, int) else None))
        except KeyError:
            raise PaimonTableError(f"{path}: manifest list record has no _FILE_NAME") from None
    return out


def read_manifest(fs: pafs.FileSystem, table: str, name: str) -> list[tuple[int, DataFile]]:
    """``[(kind, file)]`` of one manifest, in file order."""
    path = posixpath.join(table, "manifest", plain_name(name, table, "manifest"))
    return [manifest_entry(rec, path, name) for rec in read_avro(fs, path)]


def manifest_entry(rec: dict, path: str, name: str) -> tuple[int, DataFile]:
    """``(kind, file)`` of one manifest record (read from ``path``, the manifest ``name``)."""
    _check_version(rec, MANIFEST_ENTRY_VERSIONS, path, "manifest entry")
    try:
        f = rec["_FILE"]
        stats = f.get("_VALUE_STATS")
        return (
            int(rec["_KIND"]),
            DataFile(
                partition=bytes(rec["_PARTITION"]),
                bucket=int(rec["_BUCKET"]),
                total_buckets=int(rec.get("_TOTAL_BUCKETS") or 0),
                name=plain_name(f["_FILE_NAME"], path, "data file"),
                size=int(f["_FILE_SIZE"]),
                rows=int(f["_ROW_COUNT"]),
                level=int(f["_LEVEL"]),
                schema_id=int(f["_SCHEMA_ID"]),
                min_seq=int(f.get("_MIN_SEQUENCE_NUMBER") or 0),
                max_seq=int(f.get("_MAX_SEQUENCE_NUMBER") or 0),
                value_stats=None if stats is None else (stats["_MIN_VALUES"], stats["_MAX_VALUES"], stats.get("_NULL_COUNTS")),
                value_stats_cols=f.get("_VALUE_STATS_COLS"),
                extra_files=[plain_name(x, path, "extra file") for x in f.get("_EXTRA_FILES") or []],
                embedded_index=f.get("_EMBEDDED_FILE_INDEX"),
                external_path=f.get("_EXTERNAL_PATH"),
                delete_row_count=f.get("_DELETE_ROW_COUNT"),
                manifest=name,
                write_cols=f.get("_WRITE_COLS"),
            ),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise PaimonTableError(f"{path}: malformed manifest entry ({type(e).__name__}: {e})") from None


def live_files(fs: pafs.FileSystem, table: str, snapshot: dict) -> list[DataFile]:
    """The data files of a snapshot: ADD and DELETE entries of base + delta manifests merged."""
    files: dict[tuple, DataFile] = {}
    names = read_manifest_list(fs, table, snapshot.get("baseManifestList"), snapshot.get("baseManifestListSize"))
    names = names + read_manifest_list(fs, table, snapshot.get("deltaManifestList"), snapshot.get("deltaManifestListSize"))
    for name, size in names:
        for kind, f in _manifest_entries(fs, table, name, size):
            key = (f.partition, f.bucket, f.level, f.name)
            if kind == ADD:
                files[key] = f
            elif kind == DELETE:
                files.pop(key, None)
            else:
                raise PaimonTableError(f"{posixpath.join(table, 'manifest', name)}: unknown entry kind {kind}")
    return list(files.values())


def _manifest_entries(fs: pafs.FileSystem, table: str, name: str, size: int | None) -> list[tuple[int, DataFile]]:
    """:func:`read_manifest`, shared by the table objects of the process when the manifest
    list records the manifest's size (see :mod:`arrowidx.paimon.cache`)."""
    if size is None:
        return read_manifest(fs, table, name)
    key = file_key(fs, posixpath.join(table, "manifest", name), size)
    return MANIFESTS.get(key, lambda: (read_manifest(fs, table, name), 8 * size))


@dataclass(frozen=True)
class DeletionRange:
    index_file: str  # path of the deletion-vectors index file
    offset: int
    length: int
    cardinality: int | None


def deletion_ranges(fs: pafs.FileSystem, table: str, snapshot: dict) -> dict[str, DeletionRange]:
    """``{data file name: where its deletion vector is}`` from the snapshot's index manifest.

    Other index kinds (the dynamic-bucket HASH index) are not needed for reading."""
    name = snapshot.get("indexManifest")
    if not name:
        return {}
    path = posixpath.join(table, "manifest", plain_name(name, table, "index manifest"))
    entries: dict[str, dict] = {}
    for rec in read_avro(fs, path):
        _check_version(rec, INDEX_ENTRY_VERSIONS, path, "index manifest entry")
        if rec.get("_INDEX_TYPE") != DELETION_VECTORS:
            continue
        key = plain_name(rec.get("_FILE_NAME"), path, "index file")
        if rec.get("_KIND") == DELETE:
            entries.pop(key, None)
        else:
            entries[key] = rec
    out: dict[str, DeletionRange] = {}
    for file_name, rec in entries.items():
        index_path = rec.get("_EXTERNAL_PATH") or posixpath.join(table, "index", file_name)
        for r in rec.get("_DELETIONS_VECTORS_RANGES") or []:
            if r is None:
                continue
            out[r["f0"]] = DeletionRange(index_path, int(r["f1"]), int(r["f2"]), r.get("_CARDINALITY"))
    return out


# ----------------------------------------------------------------------------------------
# Writing metadata (arrowidx.paimon.rewrite): Avro files as the table's own files are
# written, and the partition statistics of a new manifest
# ----------------------------------------------------------------------------------------
@dataclass
class AvroFile:
    """An Avro file's records exactly as stored (timestamps as the longs they are, no
    logical-type conversion), with the schema and codec it was written with, so records can
    be written again unchanged into a file any reader of the table reads."""

    schema: dict
    codec: str
    records: list[dict]


def _strip_logical(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_logical(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [_strip_logical(s) for s in schema]
    return schema


def read_avro_file(fs: pafs.FileSystem, path: str) -> AvroFile:
    """:class:`AvroFile` of ``path``; a truncated or corrupt file raises PaimonTableError."""
    import io

    import fastavro

    data = read_bytes(fs, path)
    try:
        head = fastavro.reader(io.BytesIO(data))
        schema = head.writer_schema
        raw = fastavro.reader(io.BytesIO(data), reader_schema=_strip_logical(schema))
        return AvroFile(schema, head.codec, list(raw))
    except Exception as e:  # noqa: BLE001 - fastavro raises many kinds on bad bytes
        raise PaimonTableError(f"{path}: not a readable Avro file ({type(e).__name__}: {e})") from None


def write_avro(schema: dict, records: list[dict], codec: str) -> bytes:
    """An Avro container of ``records`` with the writer ``schema`` and ``codec`` (as
    :func:`read_avro_file` returns them), one block, as Paimon writes its metadata files."""
    import io

    import fastavro

    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec, validator=True)
    return out.getvalue()


# Paimon types whose BinaryRow slot points into the variable part (others: the value itself)
_VAR_TYPES = ("CHAR", "VARCHAR", "STRING", "BINARY", "VARBINARY", "BYTES")


def _field_raw(row: memoryview, null_bytes: int, i: int, ptype: Any) -> tuple[bytes, bytes | None] | None:
    """Field ``i`` of a BinaryRow as ``(slot, variable bytes or None)``; None if NULL."""
    bit = i + 8
    if row[bit >> 3] & (1 << (bit & 7)):
        return None
    slot = bytes(row[null_bytes + 8 * i : null_bytes + 8 * i + 8])
    base, args, _ = _base(str(ptype)) if not isinstance(ptype, dict) else ("", [], False)
    if base in _VAR_TYPES:
        v = int.from_bytes(slot, "little")
        if v & (1 << 63):
            return slot, None  # inline
        return slot, _var_bytes(slot, row)
    fixed = base in ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "DATE", "TIME")
    if fixed or (base == "DECIMAL" and (args[0] if args else 10) <= 18) or (base == "TIMESTAMP" and (args[0] if args else 6) <= 3):
        return slot, None
    raise UnsupportedTableError(f"partition type {ptype!r} cannot be copied into manifest statistics")


def binary_row(arity: int, fields: list[tuple[bytes, bytes | None] | None]) -> bytes:
    """A serialized BinaryRow (4-byte arity, then the row) of raw fields as
    :func:`_field_raw` returns them."""
    null_bytes = ((arity + 63 + 8) // 64) * 8
    head = bytearray(null_bytes)
    slots = bytearray(8 * arity)
    var = bytearray()
    fixed_end = null_bytes + 8 * arity
    for i, raw in enumerate(fields):
        if raw is None:
            bit = i + 8
            head[bit >> 3] |= 1 << (bit & 7)
            continue
        slot, data = raw
        if data is not None:
            offset = fixed_end + len(var)
            slot = ((offset << 32) | len(data)).to_bytes(8, "little")
            var += data + bytes(-len(data) % 8)
        slots[8 * i : 8 * i + 8] = slot
    return arity.to_bytes(4, "big") + bytes(head) + bytes(slots) + bytes(var)


def partition_stats(partitions: list[bytes], ptypes: list[Any]) -> tuple[bytes, bytes, list[int]]:
    """``(min row, max row, null counts)`` of the partition values of a manifest's entries,
    as Paimon's ``SimpleStatsCollector`` collects them for the manifest list. Values are
    compared decoded; a field whose values cannot be decoded must hold the same bytes in
    every entry (else UnsupportedTableError)."""
    arity = len(ptypes)
    null_bytes = ((arity + 63 + 8) // 64) * 8
    mins: list = [None] * arity
    maxs: list = [None] * arity
    nulls = [0] * arity
    for data in partitions:
        values = decode_binary_row(data, ptypes)
        if values is None:
            raise PaimonTableError(f"a partition row does not decode with {arity} fields")
        row = memoryview(data)[4:]
        for i, ptype in enumerate(ptypes):
            raw = _field_raw(row, null_bytes, i, ptype)
            if raw is None:
                nulls[i] += 1
                continue
            value = values[i]
            if value is UNKNOWN:
                if mins[i] is not None and mins[i][1] != raw:
                    raise UnsupportedTableError(f"partition field {i} of type {ptype!r}: statistics over several values are not supported")
                mins[i] = maxs[i] = (value, raw)
                continue
            if mins[i] is None or value < mins[i][0]:
                mins[i] = (value, raw)
            if maxs[i] is None or value > maxs[i][0]:
                maxs[i] = (value, raw)
    low = binary_row(arity, [None if m is None else m[1] for m in mins])
    high = binary_row(arity, [None if m is None else m[1] for m in maxs])
    return low, high, nulls


_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^')


def escape_partition_text(text: str) -> str:
    """Hive-style partition path escaping, as Paimon's PartitionPathUtils."""
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED or ord(ch) < 0x20 else ch for ch in text)
