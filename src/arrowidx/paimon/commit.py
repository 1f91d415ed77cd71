"""Committing to a Paimon table as Java Paimon does: a new schema version (``ALTER TABLE
SET``) and a new snapshot replacing manifest entries (a ``COMPACT`` commit).

Every file written here goes through four small storage functions (:func:`create_if_absent`,
:func:`write_new_file`, :func:`write_hint`, :func:`delete_quietly`) on the one storage layer
(:mod:`arrowidx.storage`: local disks, and object stores by URI with ``storage_options``). A
version exists exactly when its file was created only-if-absent:

* ``schema/schema-N`` and ``snapshot/snapshot-N`` are created whole only if the name is free
  (a hard link of a complete file on local disks, put-if-absent on object stores), which fails
  if another writer won: the caller plans again on the new latest snapshot. On stores without
  an atomic create the commit is refused (:class:`~arrowidx.errors.CommitUnsupportedError`),
  unless ``ARROWIDX_SINGLE_WRITER=1`` says there is exactly one writer;
* manifests and manifest lists get fresh names (``manifest-<uuid>-0``, ``manifest-list-<uuid>-0``
  and ``-1``, as Java names them) and are written before the snapshot that references them;
  a crash leaves them unreferenced, as an aborted Java commit does;
* ``snapshot/LATEST`` is only a hint (readers look past it), rewritten after each commit.

The new snapshot's manifest lists are the previous snapshot's base and delta manifests (the
base list, unmerged) and one new delta manifest holding, per rewritten data file, a DELETE of
its old entry followed by an ADD of the new one: the order Paimon's own compaction commits use,
which its snapshot expiration relies on (an ADD after a DELETE of the same data file keeps the
file). The index manifest (deletion vectors, hash index) is carried over unchanged.

A writer that loses the race plans again on the new snapshot through the one retry loop every
arrowidx writer shares (:func:`arrowidx.lake.commit.retry_on_conflict`).
"""

from __future__ import annotations

import json
import posixpath
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs

from .._faults import fault_point
from ..errors import ArrowIdxError, CommitConflictError, PaimonTableError
from ..storage import as_store
from .metadata import AvroFile, partition_stats, write_avro

ADD, DELETE = 0, 1
BATCH_COMMIT_IDENTIFIER = 2**63 - 1  # Java's BatchWriteBuilder.COMMIT_IDENTIFIER
_LOCK = threading.Lock()


# ----------------------------------------------------------------------------------------
# Storage: the only functions here that write or delete
# ----------------------------------------------------------------------------------------
def create_if_absent(fs: pafs.FileSystem, path: str, data: bytes) -> bool:
    """Create ``path`` holding ``data`` only if no file has that name; False if one has:
    the store's atomic put-if-absent (:meth:`arrowidx.storage.Store.create`: a hard link of
    a complete file on local disks, ``If-None-Match: *`` on object stores), so the file
    appears complete or not at all. :class:`~arrowidx.errors.CommitUnsupportedError` where
    the store cannot create only if absent."""
    return as_store(fs).create(path, data)


def write_new_file(fs: pafs.FileSystem, path: str, data: bytes) -> None:
    """Write a file under a fresh name nobody else uses (manifests, manifest lists)."""
    if not create_if_absent(fs, path, data):
        raise PaimonTableError(f"{path}: a file with this fresh name exists already")


def write_hint(fs: pafs.FileSystem, path: str, data: bytes) -> None:
    """Replace a hint file (``snapshot/LATEST``): the whole object at once."""
    as_store(fs).put(path, data)


def delete_quietly(fs: pafs.FileSystem, path: str) -> None:
    try:
        as_store(fs).delete(path)
    except (OSError, ArrowIdxError):
        pass


def read_file(fs: pafs.FileSystem, path: str) -> bytes | None:
    """The bytes of ``path``, or None when there is no such file."""
    try:
        return as_store(fs).get(path)
    except FileNotFoundError:
        return None


# ----------------------------------------------------------------------------------------
# Schema: ALTER TABLE ... SET / UNSET of options
# ----------------------------------------------------------------------------------------
def java_json(doc: Any) -> str:
    """JSON as Paimon's Jackson writer lays it out (two-space indent, ``" : "``)."""
    return json.dumps(doc, indent=2, separators=(",", " : "), ensure_ascii=False)


def commit_schema(fs: pafs.FileSystem, table: str, latest: dict, options: dict[str, str]) -> int:
    """Create ``schema-<latest id + 1>``: the latest schema with ``options`` as its options.
    Raises :class:`CommitConflictError` if another writer created that schema first."""
    doc = dict(latest)
    new_id = int(latest["id"]) + 1
    doc["id"] = new_id
    doc["options"] = dict(options)
    if "timeMillis" in doc:
        doc["timeMillis"] = int(time.time() * 1000)
    path = posixpath.join(table, "schema", f"schema-{new_id}")
    if not create_if_absent(fs, path, java_json(doc).encode()):
        raise CommitConflictError(f"{path}: another writer changed the schema first")
    fault_point("paimon-schema-committed")
    return new_id


# ----------------------------------------------------------------------------------------
# Snapshot: a COMPACT commit replacing manifest entries
# ----------------------------------------------------------------------------------------
@dataclass
class ManifestLists:
    """The previous snapshot's manifest lists as stored (records kept verbatim)."""

    base: AvroFile | None
    delta: AvroFile | None

    def data_manifests(self) -> list[dict]:
        return [*(self.base.records if self.base else []), *(self.delta.records if self.delta else [])]

    def schema_and_codec(self) -> tuple[dict, str]:
        newest = self.delta or self.base
        if newest is None:
            raise PaimonTableError("the previous snapshot has no manifest list")
        return newest.schema, newest.codec


def _fill(schema: dict, record: dict) -> dict:
    """``record`` with every field of ``schema`` (a record of an older schema lacks the
    nullable fields added since: None)."""
    return {f["name"]: record.get(f["name"]) for f in schema["fields"]}


def _field_names(schema: dict) -> set[str]:
    return {f["name"] for f in schema["fields"]}


@dataclass
class IndexManifest:
    """A new index manifest for the snapshot (deletion vectors, hash index): every record
    of it (``_KIND`` ADD), written with ``schema`` and ``codec`` as Java's
    ``IndexManifestFile`` writes it."""

    schema: dict
    codec: str
    records: list[dict]


def commit_snapshot(
    fs: pafs.FileSystem,
    table: str,
    previous: dict,
    lists: ManifestLists,
    entries: list[dict],
    entry_file: AvroFile | None,
    schema_id: int,
    partition_types: list[Any],
    statistics: str | None,
    *,
    index_manifest: IndexManifest | None = None,
    commit_kind: str = "COMPACT",
) -> tuple[int, dict]:
    """Commit snapshot ``previous["id"] + 1`` whose delta manifest holds ``entries`` (raw
    manifest records, written with ``entry_file``'s schema and codec; no entries: an empty
    delta manifest list, as Java writes for a commit of index files only) and whose base is
    every data manifest of ``previous``. ``index_manifest``: a new index manifest for the
    snapshot (None: the previous one's is kept); ``commit_kind``: the snapshot's
    ``commitKind``. Returns ``(snapshot id, snapshot document)``; raises
    :class:`CommitConflictError` (after removing the files it wrote) when another writer
    committed that snapshot first."""
    manifest_dir = posixpath.join(table, "manifest")
    token = str(uuid.uuid4())
    manifest_name = f"manifest-{token}-0"
    written: list[str] = []
    list_schema, list_codec = lists.schema_and_codec()
    base_bytes = write_avro(list_schema, [_fill(list_schema, r) for r in lists.data_manifests()], list_codec)
    index_name = None
    try:
        if index_manifest is not None:
            index_name = f"index-manifest-{uuid.uuid4()}-0"
            index_bytes = write_avro(index_manifest.schema, [_fill(index_manifest.schema, r) for r in index_manifest.records], index_manifest.codec)
            write_new_file(fs, posixpath.join(manifest_dir, index_name), index_bytes)
            written.append(posixpath.join(manifest_dir, index_name))
        delta_records = []
        if entries:
            if entry_file is None:
                raise PaimonTableError(f"{table}: no manifest to take the manifest entry schema from")
            delta_records = [_manifest_meta(fs, table, manifest_name, entries, entry_file, schema_id, partition_types, list_schema, written)]
        delta_bytes = write_avro(list_schema, [_fill(list_schema, m) for m in delta_records], list_codec)
    except BaseException:
        for p in written:
            delete_quietly(fs, p)
        raise
    return _commit_lists(fs, table, previous, schema_id, token, (base_bytes, delta_bytes), written, statistics, index_name, commit_kind)


def _manifest_meta(
    fs: pafs.FileSystem, table: str, manifest_name: str, entries: list[dict], entry_file: AvroFile, schema_id: int,
    partition_types: list[Any], list_schema: dict, written: list[str],
) -> dict:  # fmt: skip
    """Write the delta manifest holding ``entries``; its record for the manifest list."""
    manifest_dir = posixpath.join(table, "manifest")
    entry_schema = entry_file.schema
    records = [_fill(entry_schema, e) for e in entries]
    manifest_bytes = write_avro(entry_schema, records, entry_file.codec)
    list_fields = _field_names(list_schema)
    low, high, nulls = partition_stats([e["_PARTITION"] for e in entries], partition_types)
    meta = {
        "_VERSION": 2,
        "_FILE_NAME": manifest_name,
        "_FILE_SIZE": len(manifest_bytes),
        "_NUM_ADDED_FILES": sum(e["_KIND"] == ADD for e in entries),
        "_NUM_DELETED_FILES": sum(e["_KIND"] == DELETE for e in entries),
        "_PARTITION_STATS": {"_MIN_VALUES": low, "_MAX_VALUES": high, "_NULL_COUNTS": nulls},
        "_SCHEMA_ID": schema_id,
        "_MIN_BUCKET": min(e["_BUCKET"] for e in entries),
        "_MAX_BUCKET": max(e["_BUCKET"] for e in entries),
        "_MIN_LEVEL": min(e["_FILE"]["_LEVEL"] for e in entries),
        "_MAX_LEVEL": max(e["_FILE"]["_LEVEL"] for e in entries),
        "_MIN_ROW_ID": None,
        "_MAX_ROW_ID": None,
        # manifest lists of pypaimon >= 2.1 (as it fills them): the entries' bucket count when
        # they share one positive count (a rescaled table mixes them), and no extra files
        "_TOTAL_BUCKETS": _common_total_buckets(entries),
        "_EXTRA_FILES": None,
    }
    unknown = list_fields - set(meta)
    if unknown:
        raise PaimonTableError(f"{table}: manifest lists with fields {sorted(unknown)} are not supported")
    path = posixpath.join(manifest_dir, manifest_name)
    write_new_file(fs, path, manifest_bytes)
    written.append(path)
    return meta


def _commit_lists(
    fs: pafs.FileSystem, table: str, previous: dict, schema_id: int, token: str, lists: tuple[bytes, bytes],
    written: list[str], statistics: str | None, index_name: str | None, commit_kind: str,
) -> tuple[int, dict]:  # fmt: skip
    """Write the two manifest lists, then create the snapshot only if absent (the files in
    ``written`` are removed when it is not created)."""
    manifest_dir = posixpath.join(table, "manifest")
    base_bytes, delta_bytes = lists
    base_name, delta_name = f"manifest-list-{token}-0", f"manifest-list-{token}-1"
    try:
        for name, data in ((base_name, base_bytes), (delta_name, delta_bytes)):
            path = posixpath.join(manifest_dir, name)
            write_new_file(fs, path, data)
            written.append(path)
        fault_point("paimon-manifests-written")
        new_id = int(previous["id"]) + 1
        doc = _snapshot_document(previous, new_id, schema_id, (base_name, len(base_bytes)), (delta_name, len(delta_bytes)), statistics)
        doc["commitKind"] = commit_kind
        if index_name is not None:
            doc["indexManifest"] = index_name
        path = posixpath.join(table, "snapshot", f"snapshot-{new_id}")
        fault_point("paimon-before-commit")
        if not create_if_absent(fs, path, java_json(doc).encode()):
            raise CommitConflictError(f"{path}: another writer committed snapshot {new_id} first")
    except BaseException:
        for p in written:  # never referenced by a snapshot: nobody reads them
            delete_quietly(fs, p)
        raise
    fault_point("paimon-committed")
    try:
        write_hint(fs, posixpath.join(table, "snapshot", "LATEST"), str(new_id).encode())
    except OSError:
        pass  # only a hint: readers look past it
    fault_point("paimon-latest-written")
    return new_id, doc


def _common_total_buckets(entries: list[dict]) -> int | None:
    counts = {e.get("_TOTAL_BUCKETS") for e in entries}
    if len(counts) != 1:
        return None
    (count,) = counts
    return count if isinstance(count, int) and count > 0 else None


def _snapshot_document(previous: dict, new_id: int, schema_id: int, base: tuple[str, int], delta: tuple[str, int], statistics: str | None) -> dict:
    """The new snapshot: the previous one's fields (so a reader of the table's Paimon version
    reads it), with the values a Java ``COMPACT`` commit writes."""
    doc: dict[str, Any] = {}
    now = int(time.time() * 1000)
    for key, value in previous.items():
        if key in ("writerVersion", "operation", "properties", "changelogManifestListSize"):
            continue  # optional; not what this commit writes
        doc[key] = value
    doc["id"] = new_id
    if "uuid" in doc:
        doc["uuid"] = str(uuid.uuid4())
    doc["schemaId"] = schema_id
    doc["baseManifestList"] = base[0]
    if "baseManifestListSize" in previous or "deltaManifestListSize" in previous:
        doc["baseManifestListSize"] = base[1]
    doc["deltaManifestList"] = delta[0]
    if "baseManifestListSize" in previous or "deltaManifestListSize" in previous:
        doc["deltaManifestListSize"] = delta[1]
    if "changelogManifestList" in doc:
        doc["changelogManifestList"] = None
    doc["commitUser"] = str(uuid.uuid4())
    doc["commitIdentifier"] = BATCH_COMMIT_IDENTIFIER
    doc["commitKind"] = "COMPACT"
    doc["timeMillis"] = now
    doc["deltaRecordCount"] = 0  # every data file deleted is added back
    if "changelogRecordCount" in doc:
        doc["changelogRecordCount"] = 0
    if statistics is None:
        doc.pop("statistics", None)
    else:
        doc["statistics"] = statistics
    return doc
