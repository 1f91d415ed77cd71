"""``arrowidx.paimon.rewrite_file_index``: add, change or drop the file indexes of an existing
Paimon table, committed as Java Paimon's ``rewrite_file_index`` procedure commits them.

Specification: Java Paimon's ``FileIndexProcessor`` and the Spark/Flink
``RewriteFileIndexProcedure`` (apache/paimon pull requests 3391, 6562, 8596 and 9085), read,
not copied. Per live data file of the latest snapshot (of the partitions asked for):

1. the index the table's *latest* options call for is built from the file's own columns (a
   column renamed since the file was written is indexed under the file's name for it, one
   added since is skipped), with the index type's options, every row of the file;
2. the container is laid out as Java lays it out (its ``HashMap`` orders, including the
   columns of the file's old ``.index`` file Java loads first); above
   ``file-index.in-manifest-threshold`` bytes it goes to a new ``.index`` extra file (``<data
   file>.index``, or the old one's name numbered ``-1``, ``-2``, ... as Java names it), else it
   is embedded in the manifest entry; old ``.index`` extra files leave the entry and an
   embedded index is cleared when the new one goes to a file (both places are cleaned: index
   types the options no longer name are dropped, pull request 9085);
3. a file whose index comes out the same as it has (same bytes, same place) is left alone, so
   a second run with the same options commits nothing (Java would write a new ``-N.index``);
4. the changed entries are committed in one ``COMPACT`` snapshot (:mod:`.commit`). If another
   writer commits first, the plan is made again on the new snapshot: files compacted away are
   skipped (never added back), new files are indexed, work already done is reused.

Java's bitmap index format depends on the Paimon version: tables whose manifest lists lack
``_MIN_BUCKET`` were written by Paimon < 1.1, which writes and reads bitmap version 1 only, so
their bitmaps are written in version 1 (unless the options say otherwise); index types a
table's Paimon version cannot read (bsi before 1.0, range-bitmap before 1.3) are refused.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import posixpath
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .._faults import fault_point
from ..errors import (
    ArrowIdxError,
    OptionError,
    PaimonTableError,
    UnsupportedTableError,
)
from ..index import INDEX_TYPES
from ..index.container import write_container
from ..lake.commit import retry_on_conflict
from ..options import (
    GLOBAL_KEYS,
    IN_MANIFEST_THRESHOLD,
    PREFIX,
    in_manifest_threshold,
    parse_index_options,
)
from ..passes import ParquetColumns, index_columns
from ..types import paimon_type
from .commit import (
    ADD,
    DELETE,
    ManifestLists,
    commit_schema,
    commit_snapshot,
    create_if_absent,
    read_file,
)
from .javalayout import INDEX_SUFFIX, java_layout, next_index_name, old_header
from .metadata import (
    AvroFile,
    DataFile,
    TableSchema,
    arrow_type,
    decode_binary_row,
    escape_partition_text,
    latest_schema_id,
    latest_snapshot_id,
    manifest_entry,
    plain_name,
    read_avro_file,
    read_schema,
    read_snapshot,
)

POSTPONE_BUCKET = -2


# ----------------------------------------------------------------------------------------
# Per data file: what to build (a task, picklable for Spark executors) and what came out
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FileTask:
    """One data file to index: everything the work needs, nothing of the driver."""

    name: str
    data_path: str  # the Parquet data file; its .index file goes beside it
    rows: int
    columns: tuple[tuple[str, str], ...]  # (the file's column name, its Paimon type) to index
    options: tuple[tuple[str, str], ...]  # file-index.* keys, under the file's column names
    threshold: int  # file-index.in-manifest-threshold in bytes
    old_extra: tuple[str, ...]
    old_embedded: bytes | None

    @property
    def key(self) -> str:
        """Identity of the work: the same key gives the same result."""
        h = hashlib.sha1()
        for part in (self.data_path, str(self.rows), repr(self.columns), repr(self.options), str(self.threshold), repr(self.old_extra)):
            h.update(part.encode())
            h.update(b"\0")
        h.update(self.old_embedded if self.old_embedded is not None else b"<none>")
        return h.hexdigest()


@dataclass(frozen=True)
class FileResult:
    """A data file's new index fields (``changed=False``: the entry stays as it is)."""

    key: str
    name: str
    changed: bool
    extra_files: tuple[str, ...]
    embedded: bytes | None
    written: str | None = None  # the .index file this work created (or found identical)
    kind: str = "none"  # none | embedded | file
    size: int = 0


def build_container(fs: pafs.FileSystem, task: FileTask) -> bytes:
    """The file-index container Java writes for the task's data file (b"" for no index)."""
    options = dict(task.options)
    specs = parse_index_options(options)
    if not specs:
        return b""
    types = dict(task.columns)
    writers = {}
    for spec in specs:
        ptype = paimon_type(arrow_type(types[spec.column]))
        writers[(spec.column, spec.index_type)] = (ptype, INDEX_TYPES[spec.index_type].writer(ptype, spec.options))
    names = list(dict.fromkeys(spec.column for spec in specs))
    targets = {c: arrow_type(types[c]) for c in names}
    with fs.open_input_file(task.data_path) as source:
        parquet = pq.ParquetFile(source)
        missing = [c for c in names if parquet.schema_arrow.get_field_index(c) < 0]
        if missing:
            raise PaimonTableError(f"{task.data_path}: data file has no column {missing[0]!r} (its schema names it)")
        # column by column, row group by row group (a range bitmap's column twice): bounded memory
        built, rows = index_columns(ParquetColumns(parquet, cast=targets), writers)
    if rows != task.rows:
        raise PaimonTableError(f"{task.data_path}: data file holds {rows} rows, its manifest entry says {task.rows}")
    old_files = [e for e in task.old_extra if e.endswith(INDEX_SUFFIX)]
    old = old_header(fs, _beside(task.data_path, old_files[0])) if old_files else None
    return write_container(java_layout(built, old))


def _beside(data_path: str, name: str) -> str:
    return posixpath.join(posixpath.dirname(data_path), name)


def index_file(fs: pafs.FileSystem, task: FileTask, write: bool = True) -> FileResult:
    """Build one data file's index and, when it goes to a file, write that file (created
    only if absent, never overwritten; ``write=False``: only say what would be written):
    the work of a local thread or a Spark task."""
    container = build_container(fs, task)
    old_files = [e for e in task.old_extra if e.endswith(INDEX_SUFFIX)]
    others = tuple(e for e in task.old_extra if not e.endswith(INDEX_SUFFIX))
    old_embedded = task.old_embedded or None
    if not container:
        changed = bool(old_files) or old_embedded is not None
        return FileResult(task.key, task.name, changed, others, None)
    if len(container) <= task.threshold:
        changed = bool(old_files) or old_embedded != container
        return FileResult(task.key, task.name, changed, others, container, kind="embedded", size=len(container))
    if len(old_files) == 1 and old_embedded is None and read_file(fs, _beside(task.data_path, old_files[0])) == container:
        return FileResult(task.key, task.name, False, task.old_extra, None, kind="file", size=len(container))
    name = next_index_name(old_files[0]) if old_files else task.name + INDEX_SUFFIX
    if not write:
        return FileResult(task.key, task.name, True, (*others, name), None, written=name, kind="file", size=len(container))
    for _ in range(1000):
        path = _beside(task.data_path, name)
        if create_if_absent(fs, path, container) or read_file(fs, path) == container:
            break  # (an identical file left by an earlier run that never committed is reused)
        name = next_index_name(name)
    else:
        raise PaimonTableError(f"{task.data_path}: no free index file name after {name}")
    fault_point("paimon-index-written")
    return FileResult(task.key, task.name, True, (*others, name), None, written=name, kind="file", size=len(container))


# ----------------------------------------------------------------------------------------
# Options: validated as the user gave them, merged as ALTER TABLE SET / UNSET does
# ----------------------------------------------------------------------------------------
def _option_candidates(schema: TableSchema) -> list[str]:
    out = list(GLOBAL_KEYS)
    for t, index_type in INDEX_TYPES.items():
        out.append(f"{PREFIX}{t}.columns")
        for f in schema.fields:
            out.extend(f"{PREFIX}{t}.{f.name}.{o}" for o in sorted(index_type.options))
    return out


def _hint(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def check_options(updates: Mapping[str, Any], schema: TableSchema) -> dict[str, str | None]:
    """``updates`` as strings (None: unset the key), every key a known ``file-index.*`` key
    and every column named one of the table's (else OptionError with a "did you mean")."""
    out: dict[str, str | None] = {}
    candidates = _option_candidates(schema)
    names = [f.name for f in schema.fields]
    for key, value in updates.items():
        if not isinstance(key, str) or not key.startswith(PREFIX):
            raise OptionError(f"option {key!r}: only {PREFIX}* keys can be set here{_hint(str(key), candidates)}")
        if key not in GLOBAL_KEYS:
            rest = key[len(PREFIX) :]
            type_name = next((t for t in sorted(INDEX_TYPES, key=len, reverse=True) if rest.startswith(t + ".")), None)
            tail = rest[len(type_name) + 1 :] if type_name else ""
            if type_name is None or (tail != "columns" and tail.rpartition(".")[2] not in INDEX_TYPES[type_name].options):
                raise OptionError(f"unknown option {key!r}{_hint(key, candidates)}")
            if tail == "columns" and value is not None:
                for column in (c.strip() for c in str(value).split(",")):
                    if "[" in column:
                        raise UnsupportedTableError(f"option {key!r}: indexes on map keys ({column!r}) are not supported")
                    if column not in names:
                        raise OptionError(
                            f"option {key!r} names column {column!r}, which is not a column of the table"
                            f" (columns: {', '.join(names)}){_hint(column, names)}"
                        )
            elif tail != "columns" and tail.rpartition(".")[0] not in names:
                column = tail.rpartition(".")[0]
                raise OptionError(f"option {key!r}: {column!r} is not a column of the table{_hint(column, names)}")
        out[key] = None if value is None else str(value)
    return out


def merge_options(current: Mapping[str, str], updates: Mapping[str, str | None]) -> dict[str, str]:
    """The table options after ``ALTER TABLE SET`` (values) and ``UNSET`` (None)."""
    merged = dict(current)
    for key, value in updates.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def index_options(options: Mapping[str, str]) -> dict[str, str]:
    """The ``file-index.<type>...`` keys of table options (what builds indexes)."""
    return {k: v for k, v in options.items() if k.startswith(PREFIX) and k not in GLOBAL_KEYS}


def table_options(path: Any, *, filesystem: Any = None, storage_options: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The options of the latest schema of the Paimon table at ``path``."""
    fs, table = resolve_table(path, filesystem, storage_options)
    return dict(read_schema(fs, table, latest_schema_id(fs, table)).options)


# ----------------------------------------------------------------------------------------
# Planning one attempt on the latest snapshot
# ----------------------------------------------------------------------------------------
#: Index types each generation of Paimon reads (a reader meeting another type fails).
_GENERATIONS = [  # (marker, what it means, index types, bitmap versions)
    ("_FIRST_ROW_ID", "Paimon >= 1.3", {"bloom-filter", "bitmap", "bsi", "range-bitmap"}, {1, 2}),
    ("_MIN_BUCKET", "Paimon 1.1-1.2", {"bloom-filter", "bitmap", "bsi"}, {1, 2}),
    ("_VALUE_STATS_COLS", "Paimon 1.0", {"bloom-filter", "bitmap", "bsi"}, {1}),
    ("", "Paimon 0.9", {"bloom-filter", "bitmap"}, {1}),
]


@dataclass
class _Plan:
    snapshot: dict | None
    schema: TableSchema
    schema_doc: dict
    options: dict[str, str]
    tasks: list[FileTask]
    records: dict[str, dict]  # file name -> its live ADD record (raw)
    lists: ManifestLists | None
    entry_file: AvroFile | None
    generation: str
    considered: list[str]


def _read_json(fs: pafs.FileSystem, path: str) -> dict:
    data = read_file(fs, path)
    if data is None:
        raise PaimonTableError(f"{path}: file not found")
    try:
        return json.loads(data)
    except ValueError as e:
        raise PaimonTableError(f"{path}: not a valid JSON document ({e})") from None


def _generation(entry_schema: dict | None, list_schema: dict | None) -> tuple[str, set[str], set[int]]:
    fields = {f["name"] for s in (entry_schema, list_schema) if s for f in s["fields"]}
    for f in entry_schema["fields"] if entry_schema else []:
        if f["name"] == "_FILE":
            fields |= {x["name"] for x in f["type"]["fields"]}
    for marker, what, types, versions in _GENERATIONS:
        if not marker or marker in fields:
            return what, types, versions
    raise AssertionError("unreachable")


def _check_table(table: str, options: Mapping[str, str]) -> None:
    def on(key: str) -> bool:
        return str(options.get(key, "false")).strip().lower() == "true"

    for key in ("data-evolution.enabled", "row-tracking.enabled"):
        if on(key):
            raise UnsupportedTableError(f"{table}: {key}=true tables are not supported by rewrite_file_index")
    if options.get("manifest.format", "avro").lower() != "avro":
        raise UnsupportedTableError(f"{table}: manifest.format={options['manifest.format']!r} is not supported (only avro)")


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if value is True or value is False:
        return "true" if value else "false"
    return str(value)


def _partition_filter(partitions: Any, keys: list[str]) -> list[dict[str, str | None]] | None:
    if partitions is None:
        return None
    specs = [partitions] if isinstance(partitions, Mapping) else list(partitions)
    out = []
    for spec in specs:
        if not isinstance(spec, Mapping):
            raise OptionError(f"partitions: expected a dict like {{'{keys[0] if keys else 'p'}': 'x'}} or a list of them, got {spec!r}")
        for k in spec:
            if k not in keys:
                raise OptionError(f"partitions: {k!r} is not a partition key (keys: {', '.join(keys) or 'none'}){_hint(str(k), keys)}")
        out.append({k: _text(v) for k, v in spec.items()})
    return out


def _file_fields(schema: dict) -> int:
    """How many fields the ``_FILE`` record of a manifest schema has."""
    for f in schema["fields"]:
        if f["name"] == "_FILE":
            return len(f["type"]["fields"])
    return 0


def _plan(fs: pafs.FileSystem, table: str, updates: dict[str, str | None], partitions: Any, dry_run: bool, report: RewriteReport) -> _Plan:
    """Plan every live file of the latest snapshot under the options ``updates`` give the
    latest schema; when they change it, commit that schema first (unless ``dry_run``), once
    the plan shows the table can be rewritten (another writer changed it first: a
    :class:`~arrowidx.errors.CommitConflictError`, and :func:`rewrite` plans again)."""
    schema_id = latest_schema_id(fs, table)
    schema_doc = _read_json(fs, posixpath.join(table, "schema", f"schema-{schema_id}"))
    schema = read_schema(fs, table, schema_id)
    options = merge_options(schema.options, updates)
    plan = _plan_files(fs, table, schema, schema_doc, options, partitions, report)
    if options != schema.options and not dry_run:
        commit_schema(fs, table, schema_doc, options)  # (a conflict: planned again on the writer's schema)
        report.schema_committed = True
        return _plan(fs, table, updates, partitions, dry_run, report)  # on the schema just committed
    return plan


def _plan_files(fs: pafs.FileSystem, table: str, schema: TableSchema, schema_doc: dict, options: dict[str, str], partitions: Any, report: RewriteReport) -> _Plan:
    report.schema_id = schema.id
    _check_table(table, options)
    keys = list(schema.partition_keys)
    wanted = _partition_filter(partitions, keys)
    try:  # a per-column option of a column no longer listed: Java keeps and ignores it
        specs = parse_index_options(index_options(options), unlisted="warn")
    except OptionError as e:
        if options != schema.options:  # made so by this call's options
            raise OptionError(
                f"{table}: with these options the table's file-index options would be inconsistent: {e}"
                " (unset it too: options={key: None}, or --unset KEY)"
            ) from None
        raise UnsupportedTableError(f"{table}: the table's file-index options are not supported: {e}") from None
    for spec in specs:
        if "[" in spec.column:
            raise UnsupportedTableError(f"{table}: indexes on map keys ({spec.column!r}) are not supported")
    sid = latest_snapshot_id(fs, table)
    if sid is None:
        return _Plan(None, schema, schema_doc, options, [], {}, None, None, "", [])
    snapshot = read_snapshot(fs, table, sid)
    manifest_dir = posixpath.join(table, "manifest")

    def avro_list(name: str | None) -> AvroFile | None:
        return None if not name else read_avro_file(fs, posixpath.join(manifest_dir, plain_name(name, table, "manifest list")))

    lists = ManifestLists(avro_list(snapshot.get("baseManifestList")), avro_list(snapshot.get("deltaManifestList")))
    live: dict[tuple, tuple[dict, DataFile]] = {}
    entry_file: AvroFile | None = None
    for meta in lists.data_manifests():
        name = plain_name(meta["_FILE_NAME"], table, "manifest")
        path = posixpath.join(manifest_dir, name)
        manifest = read_avro_file(fs, path)
        if entry_file is None or _file_fields(manifest.schema) >= _file_fields(entry_file.schema):
            entry_file = manifest  # the newest kind of manifest: its schema has every field
        for rec in manifest.records:
            kind, f = manifest_entry(rec, path, name)
            key = (f.partition, f.bucket, f.level, f.name)
            if kind == ADD:
                live[key] = (rec, f)
            elif kind == DELETE:
                live.pop(key, None)
            else:
                raise PaimonTableError(f"{path}: unknown entry kind {kind}")
    list_schema = (lists.delta or lists.base).schema if (lists.delta or lists.base) else None
    generation, known_types, bitmap_versions = _generation(entry_file.schema if entry_file else None, list_schema)
    for spec in specs:
        if spec.index_type not in known_types:
            raise UnsupportedTableError(
                f"{table}: the table was written by {generation}, which cannot read {spec.index_type} indexes"
                f" (it reads {', '.join(sorted(known_types))}); a Java reader of the table would fail"
            )
        if spec.index_type == "bitmap" and "version" in spec.options and int(spec.options["version"]) not in bitmap_versions:
            raise UnsupportedTableError(f"{table}: the table was written by {generation}, which reads bitmap version 1 only")
    threshold = in_manifest_threshold(options)
    schemas: dict[int, TableSchema] = {schema.id: schema}
    default = options.get("partition.default-name", "__DEFAULT_PARTITION__")
    tasks: list[FileTask] = []
    records: dict[str, dict] = {}
    considered: list[str] = []
    ptypes = [schema.field(k).type for k in keys]
    for rec, f in live.values():
        values = decode_binary_row(f.partition, ptypes) if keys else []
        if values is None:
            raise PaimonTableError(f"{table}: partition of {f.name} does not decode ({len(keys)} keys expected)")
        texts = dict(zip(keys, (_text(v) for v in values)))
        if wanted is not None and not any(all(texts[k] == v for k, v in w.items()) for w in wanted):
            continue
        if f.write_cols is not None:
            raise UnsupportedTableError(f"{table}: {f.name} holds only columns {f.write_cols} (data-evolution tables are not supported)")
        if f.external_path:
            raise UnsupportedTableError(f"{table}: data file {f.name} is at an external path ({f.external_path}); not supported")
        if not f.name.endswith(".parquet"):
            raise UnsupportedTableError(f"{table}: data file {f.name} is not Parquet (only file.format=parquet is indexed)")
        file_schema = schemas.get(f.schema_id)
        if file_schema is None:
            file_schema = schemas[f.schema_id] = read_schema(fs, table, f.schema_id)
        file_options, columns = _file_options(table, specs, schema, file_schema, bitmap_versions, f.rows)
        parts = [f"{escape_partition_text(k)}={escape_partition_text(default if texts[k] is None else texts[k])}" for k in keys]
        bucket = "bucket-postpone" if f.bucket == POSTPONE_BUCKET else f"bucket-{f.bucket}"
        data_path = posixpath.join(table, *parts, bucket, f.name)
        tasks.append(FileTask(f.name, data_path, f.rows, columns, file_options, threshold, tuple(f.extra_files), f.embedded_index))
        records[f.name] = rec
        considered.append(f.name)
    return _Plan(snapshot, schema, schema_doc, options, tasks, records, lists, entry_file, generation, considered)


def _file_options(table: str, specs, schema: TableSchema, file_schema: TableSchema, bitmap_versions: set[int], rows: int):
    """The index options for a file written under ``file_schema``: columns under the file's
    names (matched by field id), those the file lacks left out; bitmap version 1 by default
    where the table's Paimon reads only that; a bloom filter without ``items`` sized for the
    file's ``rows`` (Java's default, 1,000,000 items, makes a 600 KB filter of a 1,000-row
    file; Java reads a filter of any size: it takes the size from the bytes)."""
    by_type: dict[str, list[str]] = {}
    out: dict[str, str] = {}
    columns: dict[str, str] = {}
    for spec in specs:
        latest = schema.field(spec.column) if spec.column in [x.name for x in schema.fields] else None
        if latest is None:
            raise OptionError(f"{table}: file-index.{spec.index_type}.columns names {spec.column!r}, which is not a column")
        old = file_schema.field_by_id(latest.id)
        if old is None:
            continue  # added after the file was written: Java skips it too
        if isinstance(old.type, dict):
            raise UnsupportedTableError(f"{table}: column {spec.column!r} of type {old.type.get('type')} cannot be indexed")
        try:
            INDEX_TYPES[spec.index_type].check_type(paimon_type(arrow_type(old.type, file_schema.path)))
        except ArrowIdxError as e:
            raise OptionError(f"{table}: {spec.index_type} index on column {spec.column!r} ({old.type}): {e}") from None
        by_type.setdefault(spec.index_type, []).append(old.name)
        columns[old.name] = str(old.type)
        opts = dict(spec.options)
        if spec.index_type == "bitmap" and "version" not in opts and 2 not in bitmap_versions:
            opts["version"] = "1"
        if spec.index_type == "bloom-filter" and "items" not in opts:
            opts["items"] = str(max(rows, 1))
        for k, v in opts.items():
            out[f"{PREFIX}{spec.index_type}.{old.name}.{k}"] = v
    for t, names in by_type.items():
        out[f"{PREFIX}{t}.columns"] = ",".join(names)
    return tuple(sorted(out.items())), tuple(sorted(columns.items()))


# ----------------------------------------------------------------------------------------
# The report and the driver
# ----------------------------------------------------------------------------------------
@dataclass
class RewriteReport:
    """What :func:`rewrite_file_index` did. ``print()`` it."""

    table: str
    snapshot_id: int | None = None  # the snapshot committed (or, when nothing changed, the latest)
    base_snapshot_id: int | None = None  # the snapshot the commit replaced entries of
    schema_id: int | None = None
    schema_committed: bool = False  # a new schema version carries the options
    committed: bool = False  # a new snapshot was committed
    dry_run: bool = False
    generation: str = ""
    options: dict[str, str] = field(default_factory=dict)  # the table's file-index options
    files: int = 0  # live data files considered
    rewritten: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # indexed, then compacted away by another writer
    index_files: list[str] = field(default_factory=list)  # .index files written
    embedded: int = 0  # files whose new index is embedded in the manifest
    dropped: int = 0  # files left with no index
    index_bytes: int = 0
    attempts: int = 0
    seconds: float = 0.0

    def __str__(self) -> str:
        opts = ", ".join(f"{k}={v}" for k, v in sorted(self.options.items())) or "none"
        head = f"{self.table}: file-index options {opts}"
        if self.dry_run:
            return (
                f"{head}\ndry run: {len(self.rewritten)} of {self.files} data file(s) would get a new index"
                f" ({len(self.index_files)} .index file(s), {self.embedded} embedded, {self.dropped} without index),"
                f" {len(self.unchanged)} unchanged; nothing written"
            )
        schema = f"schema {self.schema_id} committed" if self.schema_committed else f"schema {self.schema_id}"
        if not self.committed:
            return f"{head}\n{schema}; all {self.files} data file(s) already indexed so: nothing committed (snapshot {self.snapshot_id})"
        retries = f", {self.attempts} attempts" if self.attempts > 1 else ""
        skipped = f", {len(self.skipped)} compacted away meanwhile (skipped)" if self.skipped else ""
        return (
            f"{head}\n{schema}; snapshot {self.snapshot_id} committed (COMPACT, on snapshot {self.base_snapshot_id}):"
            f" {len(self.rewritten)} data file(s) re-indexed ({len(self.index_files)} .index file(s), {self.embedded} embedded,"
            f" {self.dropped} without index, {self.index_bytes:,} index bytes), {len(self.unchanged)} unchanged{skipped},"
            f" in {self.seconds:.2f}s{retries}"
        )


Runner = Callable[[pafs.FileSystem, list[FileTask], bool], list[FileResult]]


def default_threads() -> int:
    """Files indexed at once by default: two per core (at most 8), so that one file's reading,
    writing and Python steps (which hold the GIL) overlap another's numpy and Arrow work."""
    return min(8, 2 * (os.cpu_count() or 1))


def index_files(fs: pafs.FileSystem, tasks: list[FileTask], write: bool, threads: int, tick: Callable[[], None] | None = None) -> list[FileResult]:
    """:func:`index_file` of every task, ``threads`` files at a time (pyarrow and numpy
    release the GIL); results in the tasks' order."""

    def work(task: FileTask) -> FileResult:
        result = index_file(fs, task, write)
        if tick is not None:
            tick()
        return result

    workers = max(1, min(len(tasks), threads))
    if workers == 1:
        return [work(t) for t in tasks]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(work, tasks))


def run_local(threads: int | None = None, progress: bool | None = None) -> Runner:
    """Index tasks on a thread pool of this process (:func:`default_threads` unless given)."""

    def run(fs: pafs.FileSystem, tasks: list[FileTask], write: bool) -> list[FileResult]:
        from ..progress import progress_bar

        return index_files(fs, tasks, write, threads or default_threads(), progress_bar(len(tasks), progress, "indexing"))

    return run


def resolve_table(path: Any, filesystem: Any = None, storage_options: Mapping[str, Any] | None = None) -> tuple[pafs.FileSystem, str]:
    """``(filesystem, table directory)`` for a path, URI or (path, pyarrow filesystem)."""
    from ..arrow_input import as_filesystem
    from ..objectstore import is_object_store_uri

    path = os.fspath(path)
    if is_object_store_uri(path) or storage_options:  # object stores are named in one place
        from ..lake.source import resolve

        store, path, _ = resolve(path, filesystem, storage_options)
        return store.fs, path.rstrip("/")  # (its Store is registered for it: storage.as_store)
    fs = as_filesystem(filesystem)
    if fs is None:
        if "://" in path:
            fs, path = pafs.FileSystem.from_uri(path)
        else:
            fs, path = pafs.LocalFileSystem(), os.path.abspath(path)
    return fs, path.rstrip("/")


def _statistics(fs: pafs.FileSystem, table: str, snapshot: dict, schema_id: int) -> str | None:
    """The previous snapshot's statistics file, kept when it was made for ``schema_id``."""
    name = snapshot.get("statistics")
    if not name:
        return None
    try:
        doc = _read_json(fs, posixpath.join(table, "statistics", plain_name(name, table, "statistics file")))
    except PaimonTableError:
        return None
    return name if doc.get("schemaId") == schema_id else None


def rewrite(
    path: Any,
    options: Mapping[str, Any] | None,
    *,
    partitions: Any,
    filesystem: Any,
    storage_options: Mapping[str, Any] | None,
    dry_run: bool,
    runner: Runner,
) -> RewriteReport:
    """:func:`rewrite_file_index` with the per-file work done by ``runner`` (local threads, or
    Spark executors in :func:`arrowidx.spark.paimon_rewrite_file_index`)."""
    start = time.perf_counter()
    fs, table = resolve_table(path, filesystem, storage_options)
    report = RewriteReport(table, dry_run=dry_run)
    latest = read_schema(fs, table, latest_schema_id(fs, table))
    updates = check_options(options or {}, latest)
    done: dict[str, FileResult] = {}
    indexed_names: set[str] = set()
    def attempt(n: int) -> None:
        report.attempts = n
        plan = _plan(fs, table, updates, partitions, dry_run, report)
        report.options = index_options(plan.options) | {k: v for k, v in plan.options.items() if k == IN_MANIFEST_THRESHOLD}
        report.generation = plan.generation
        report.files = len(plan.tasks)
        report.snapshot_id = report.base_snapshot_id = None if plan.snapshot is None else int(plan.snapshot["id"])
        todo = [t for t in plan.tasks if t.key not in done]
        for result in runner(fs, todo, not dry_run) if todo else []:
            done[result.key] = result
        results = [done[t.key] for t in plan.tasks]
        indexed_names.update(t.name for t in todo)
        report.skipped = sorted(indexed_names - {t.name for t in plan.tasks})
        changed = [r for r in results if r.changed]
        report.rewritten = sorted(r.name for r in changed)
        report.unchanged = sorted(r.name for r in results if not r.changed)
        report.index_files = sorted(r.written for r in changed if r.written)
        report.embedded = sum(r.kind == "embedded" for r in changed)
        report.dropped = sum(r.kind == "none" for r in changed)
        report.index_bytes = sum(r.size for r in changed)
        if dry_run or not changed or plan.snapshot is None:
            return
        entries: list[dict] = []
        for r in changed:
            old = plan.records[r.name]
            entries.append({**old, "_KIND": DELETE})
            new_file = {**old["_FILE"], "_EXTRA_FILES": list(r.extra_files), "_EMBEDDED_FILE_INDEX": r.embedded}
            entries.append({**old, "_KIND": ADD, "_FILE": new_file})
        ptypes = [plan.schema.field(k).type for k in plan.schema.partition_keys]
        report.snapshot_id, _ = commit_snapshot(
            fs, table, plan.snapshot, plan.lists, entries, plan.entry_file, plan.schema.id, ptypes,
            _statistics(fs, table, plan.snapshot, plan.schema.id),
        )  # fmt: skip (another writer committed first: planned again on the new snapshot)
        report.committed = True

    retry_on_conflict(attempt)
    report.seconds = time.perf_counter() - start
    return report


def rewrite_file_index(
    path: Any,
    options: Mapping[str, Any] | None = None,
    *,
    partitions: Mapping[str, Any] | Iterable[Mapping[str, Any]] | None = None,
    filesystem: Any = None,
    storage_options: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    threads: int | None = None,
    progress: bool | None = None,
) -> RewriteReport:
    """Add, change or drop the file indexes of the Paimon table at ``path`` and commit them.

    ``options``: ``file-index.*`` keys to set on the table first, as ``ALTER TABLE SET``
    does (a new schema version; a value of None unsets the key, as ``ALTER TABLE UNSET``);
    None or ``{}`` rewrites with the options the table has. ``partitions``: a dict of
    partition values (``{"dt": "2024-01-01"}``) or a list of them; only those partitions'
    files are rewritten. ``dry_run``: plan and build the indexes in memory, write nothing.
    ``threads``: files indexed at once (default two per core, at most 8). ``progress``: a bar
    on a terminal (None: when stderr is one).

    Every live data file (of the partitions) gets the index the table's options call for,
    exactly as Java's ``rewrite_file_index`` procedure writes it, and the changed manifest
    entries are committed in one snapshot with Paimon's commit protocol (retrying on a new
    snapshot when another writer commits first). Files whose index is already right are left
    alone: a second call commits nothing. Tables it cannot rewrite exactly raise
    :class:`~arrowidx.errors.UnsupportedTableError` saying why (see docs/paimon.md).
    """
    return rewrite(
        path, options, partitions=partitions, filesystem=filesystem, storage_options=storage_options,
        dry_run=dry_run, runner=run_local(threads, progress),
    )  # fmt: skip
