"""A Paimon table's deletion vectors as Java Paimon writes them: the deletion-vectors index
files (``index/index-<uuid>-<n>``) and the index manifest that lists them.

Specification: Java Paimon's ``BaseAppendDeleteFileMaintainer`` (and its unaware-bucket and
bucketed implementations), ``BucketedDvMaintainer``, ``DeletionVectorIndexFileWriter`` and
``IndexManifestFileHandler`` (0.9.0 and master), read, not copied:

* **unaware-bucket append tables** (``bucket = -1``, no primary key): an index file holds the
  vectors of any data files of one partition (bucket 0). A changed vector is written, merged
  with the one it replaces, into a new index file (rolled at ``dv-index-file.target-size``);
  every old index file that held a changed vector is removed from the index manifest, its
  other vectors written again into a new file. Entries combine by file name.
* **bucketed tables** (primary-key tables, append tables with a fixed bucket count): one index
  file per bucket holds every vector of the bucket; a change writes the bucket's whole set
  again into one new file, which replaces the bucket's entry (entries combine by partition,
  bucket and index type).

Vectors are written in the order Java's ``HashMap`` of data-file names iterates, so the files
come out as Java's do (same records, same order) where the map's history is the usual one.
The index manifest keeps every other entry (hash index, global indexes) as it was.
"""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs

from ..deletion import DeletionVector, read_deletion_vectors, write_deletion_vectors
from ..index.container import java_hashmap_order
from ..options import parse_memory_size
from .commit import IndexManifest, delete_quietly, write_new_file
from .metadata import AvroFile, plain_name, read_avro_file, read_bytes

DV_INDEX = "DELETION_VECTORS"
UNAWARE_BUCKET = 0
ADD, DELETE = 0, 1
TARGET_SIZE_OPTION = "dv-index-file.target-size"
DEFAULT_TARGET_SIZE = 2 * 1024 * 1024  # Java's default: 2 mb

_RANGE_FIELDS = [{"name": "f0", "type": "string"}, {"name": "f1", "type": "int"}, {"name": "f2", "type": "int"}]
_CARDINALITY = {"default": None, "name": "_CARDINALITY", "type": ["null", "long"]}
_GLOBAL_INDEX = {
    "default": None, "name": "_GLOBAL_INDEX",
    "type": ["null", {"type": "record", "name": "org.apache.paimon.avro.generated.record__GLOBAL_INDEX", "fields": [
        {"name": "_ROW_RANGE_START", "type": "long"}, {"name": "_ROW_RANGE_END", "type": "long"},
        {"name": "_INDEX_FIELD_ID", "type": "int"},
        {"default": None, "name": "_EXTRA_FIELD_IDS", "type": ["null", {"type": "array", "items": "int"}]},
        {"default": None, "name": "_INDEX_META", "type": ["null", "bytes"]},
        {"default": None, "name": "_SOURCE_META", "type": ["null", "bytes"]},
    ]}],
}  # fmt: skip


def index_manifest_schema(generation: str) -> dict:
    """The Avro schema of an index manifest written by the table's Paimon generation (for a
    table that has none yet): 0.9's, else master's (a superset: Paimon >= 1.0 reads fields
    by name and skips those it does not know)."""
    ranges = list(_RANGE_FIELDS) if generation == "Paimon 0.9" else [*_RANGE_FIELDS, _CARDINALITY]
    fields: list[dict[str, Any]] = [
        {"name": "_VERSION", "type": "int"}, {"name": "_KIND", "type": "int"}, {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"}, {"name": "_INDEX_TYPE", "type": "string"}, {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"}, {"name": "_ROW_COUNT", "type": "long"},
        {"default": None, "name": "_DELETIONS_VECTORS_RANGES", "type": ["null", {"type": "array", "items": ["null", {
            "type": "record", "name": "org.apache.paimon.avro.generated.record__DELETIONS_VECTORS_RANGES", "fields": ranges}]}]},
    ]  # fmt: skip
    if generation != "Paimon 0.9":
        fields += [{"default": None, "name": "_EXTERNAL_PATH", "type": ["null", "string"]}, _GLOBAL_INDEX]
    return {"type": "record", "name": "org.apache.paimon.avro.generated.record", "fields": fields}


def target_size(options: Mapping[str, str]) -> int:
    """``dv-index-file.target-size`` in bytes (Java's default 2 mb)."""
    text = options.get(TARGET_SIZE_OPTION)
    return DEFAULT_TARGET_SIZE if text is None else parse_memory_size(text, f"table option {TARGET_SIZE_OPTION}")


# ----------------------------------------------------------------------------------------
# The index manifest of a snapshot
# ----------------------------------------------------------------------------------------
@dataclass
class IndexFiles:
    """The index manifest of a snapshot: its records (kept verbatim), schema and codec."""

    schema: dict
    codec: str
    records: list[dict]

    def deletion_files(self) -> list[dict]:
        return [r for r in self.records if r.get("_INDEX_TYPE") == DV_INDEX]


def read_index_files(fs: pafs.FileSystem, table: str, snapshot: dict, generation: str, codec: str) -> IndexFiles:
    """The snapshot's index manifest (ADD records; a manifest holding DELETE records is
    merged as Java reads it), or an empty one with the generation's schema and ``codec``."""
    name = snapshot.get("indexManifest")
    if not name:
        return IndexFiles(index_manifest_schema(generation), codec, [])
    path = posixpath.join(table, "manifest", plain_name(name, table, "index manifest"))
    found: AvroFile = read_avro_file(fs, path)
    live: dict[str, dict] = {}
    for rec in found.records:
        key = plain_name(rec.get("_FILE_NAME"), path, "index file")
        if rec.get("_KIND") == DELETE:
            live.pop(key, None)
        else:
            live[key] = rec
    return IndexFiles(found.schema, found.codec, list(live.values()))


def _ranges(rec: dict) -> dict[str, tuple[int, int, int | None]]:
    out = {}
    for r in rec.get("_DELETIONS_VECTORS_RANGES") or []:
        if r is not None:
            out[r["f0"]] = (int(r["f1"]), int(r["f2"]), r.get("_CARDINALITY"))
    return out


def index_path(table: str, rec: dict) -> str:
    """Where an index file of the manifest is (its external path, else ``<table>/index/``)."""
    return rec.get("_EXTERNAL_PATH") or posixpath.join(table, "index", plain_name(rec["_FILE_NAME"], table, "index file"))


# ----------------------------------------------------------------------------------------
# Writing index files
# ----------------------------------------------------------------------------------------
@dataclass
class IndexFileWriter:
    """Writes new deletion-vectors index files as Java's ``DeletionFileWriter`` does: named
    ``index-<uuid>-<n>`` (one uuid per commit attempt, ``n`` counting up) in ``<table>/index``,
    created only if absent; remembers them so a refused commit can remove them."""

    fs: pafs.FileSystem
    table: str
    bitmap64: bool
    written: list[str] = field(default_factory=list)
    token: str = field(default_factory=lambda: str(uuid.uuid4()))
    on_write: Callable[[], None] | None = None

    def write(self, vectors: list[tuple[str, DeletionVector]], partition: bytes, bucket: int) -> dict:
        """One index file holding ``vectors`` in this order; its ADD record."""
        name = f"index-{self.token}-{len(self.written)}"
        data, ranges = write_deletion_vectors(dict(vectors), bitmap64=self.bitmap64)
        path = posixpath.join(self.table, "index", name)
        write_new_file(self.fs, path, data)
        self.written.append(path)
        if self.on_write is not None:
            self.on_write()
        cards = {n: dv.cardinality for n, dv in vectors}
        return {
            "_VERSION": 1, "_KIND": ADD, "_PARTITION": partition, "_BUCKET": bucket, "_INDEX_TYPE": DV_INDEX,
            "_FILE_NAME": name, "_FILE_SIZE": len(data), "_ROW_COUNT": len(ranges),
            "_DELETIONS_VECTORS_RANGES": [{"f0": n, "f1": o, "f2": ln, "_CARDINALITY": cards[n]} for n, (o, ln) in ranges.items()],
            "_EXTERNAL_PATH": None, "_GLOBAL_INDEX": None,
        }  # fmt: skip

    def write_rolling(self, vectors: list[tuple[str, DeletionVector]], partition: bytes, bucket: int, target: int) -> list[dict]:
        """``vectors`` in index files of about ``target`` bytes (Java starts a new file after
        the vector that took the file past the target)."""
        out: list[dict] = []
        group: list[tuple[str, DeletionVector]] = []
        size = 1  # the version byte
        for name, dv in vectors:
            group.append((name, dv))
            size += len(dv.serialize())
            if size > target:
                out.append(self.write(group, partition, bucket))
                group, size = [], 1
        if group:
            out.append(self.write(group, partition, bucket))
        return out

    def remove_all(self) -> None:
        for path in self.written:
            delete_quietly(self.fs, path)
        self.written.clear()


# ----------------------------------------------------------------------------------------
# Changing vectors: the new index manifest
# ----------------------------------------------------------------------------------------
def _in_java_order(vectors: Mapping[str, DeletionVector], inserted: list[str] | None = None) -> list[tuple[str, DeletionVector]]:
    """``vectors`` in the order a Java ``HashMap`` iterates them after inserting ``inserted``
    (default: the names sorted; the order matters only within a hash bucket)."""
    return [(name, vectors[name]) for name in java_hashmap_order(inserted if inserted is not None else sorted(vectors))]


def read_vectors(fs: pafs.FileSystem, table: str, rec: dict, names: list[str] | None = None) -> dict[str, DeletionVector]:
    """The vectors an index file holds for ``names`` (None: all), by the manifest's ranges."""
    ranges = _ranges(rec)
    if names is not None:
        ranges = {n: ranges[n] for n in names}
    if not ranges:
        return {}
    return read_deletion_vectors(read_bytes(fs, index_path(table, rec)), ranges=ranges)


def apply_changes(
    fs: pafs.FileSystem,
    table: str,
    index: IndexFiles,
    changed: Mapping[tuple[bytes, int], Mapping[str, DeletionVector]],
    *,
    unaware: bool,
    writer: IndexFileWriter,
    target: int,
) -> IndexManifest:
    """Write the index files for ``changed`` (``{(partition, bucket): {data file: its whole
    new vector}}``) and return the new index manifest. ``unaware``: the table is an
    unaware-bucket append table (see the module docstring for both layouts)."""
    records = list(index.records)
    dv_records = index.deletion_files()
    added: list[dict] = []
    removed: set[str] = set()
    for (partition, bucket), vectors in changed.items():
        mine = [r for r in dv_records if bytes(r["_PARTITION"]) == partition and int(r["_BUCKET"]) == bucket]
        if unaware:
            holder = {n: r["_FILE_NAME"] for r in mine for n in _ranges(r)}
            touched = {holder[n] for n in vectors if n in holder}
            by_name = {r["_FILE_NAME"]: r for r in mine}
            for old_name in java_hashmap_order(sorted(touched)):
                old = by_name[old_name]
                keep = [n for n in _ranges(old) if n not in vectors]
                if keep:
                    added += writer.write_rolling(_in_java_order(read_vectors(fs, table, old, keep)), partition, bucket, target)
                removed.add(old_name)
            added += writer.write_rolling(_in_java_order(vectors), partition, bucket, target)
        else:
            whole: dict[str, DeletionVector] = {}
            for r in mine:  # (the maintainer Java restores: the bucket's vectors, in file order)
                whole.update(read_vectors(fs, table, r))
            order = [*whole, *sorted(n for n in vectors if n not in whole)]
            whole.update(vectors)
            removed.update(r["_FILE_NAME"] for r in mine)
            added.append(writer.write(_in_java_order(whole, order), partition, bucket))
    records = [r for r in records if not (r.get("_INDEX_TYPE") == DV_INDEX and r["_FILE_NAME"] in removed)]
    schema = index.schema
    return IndexManifest(schema, index.codec, [_conform(schema, r) for r in records + added])


def _conform(schema: dict, rec: dict) -> dict:
    """``rec`` with exactly the fields of ``schema`` (nested range records too)."""
    fields = {f["name"]: f for f in schema["fields"]}
    out = {name: rec.get(name) for name in fields}
    ranges = out.get("_DELETIONS_VECTORS_RANGES")
    if ranges:
        range_names = _range_field_names(fields["_DELETIONS_VECTORS_RANGES"]["type"])
        out["_DELETIONS_VECTORS_RANGES"] = [None if r is None else {k: r.get(k) for k in range_names} for r in ranges]
    return out


def _range_field_names(avro_type: Any) -> list[str]:
    """The field names of the range record inside ``["null", {"type": "array", ...}]``."""
    for branch in avro_type if isinstance(avro_type, list) else [avro_type]:
        if isinstance(branch, dict) and branch.get("type") == "array":
            for item in branch["items"] if isinstance(branch["items"], list) else [branch["items"]]:
                if isinstance(item, dict) and item.get("type") == "record":
                    return [f["name"] for f in item["fields"]]
    return ["f0", "f1", "f2"]
