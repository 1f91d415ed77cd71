"""The file table: every data file a manifest version names, kept in columnar segments.

Up to format 3 a manifest lists each data file as a JSON object (its size, stamp,
fingerprint, index and deletion references): 1.1 KB a file, 23 MB and ~0.7 s of parsing
and checking for a lake of 20,000 small files, rewritten whole by every commit. From format
4 the manifest names *segments*: Arrow IPC files ``_arrowidx/segments/<xxh64>-<writer>.arrow``
(named by their content and by the writer that made them, each checked against the size and
XXH64 the manifest records). A commit writes one segment holding the entries it changed and
the paths it removed (:func:`arrowidx.lake.commit.commit_segments`); a reader takes, per
path, its row in the newest segment that has it. Segments are merged like the lake index's
runs (a newer one holding a quarter of the rows of the one before it, or more than
:data:`MAX_SEGMENTS`), planned in memory, so a commit writes *one* segment and a reader
reads at most :data:`MAX_SEGMENTS` (one GET each on an object store). The sizes stay
geometric, oldest first: the build's large base, a middle segment under a quarter of it, and
a small tail under a quarter of the middle, which each small commit (a delete) rewrites with
its changes folded in; the tail folds into the middle when it reaches a quarter of it, the
middle into the base when it reaches a quarter of that. A commit that changes a few files
thus writes about the tail (a few entries after a build, at most ~1/16 of the lake), never
the base.

Columns (one row per entry; the vector columns are what planning reads for every file at
once, the rest is materialised only for the files a query reads):

=================  ======================================================================
``path``           the data file, relative to the root
``fid``            the file id the lake index keys it under (null: not keyed)
``removed``        a tombstone: the path left the lake in this segment's commit
``size`` ``rows``  bytes and rows of the data file when indexed
``mtime_ns``       its modification time (null: unknown)
``stamp``          the store's change stamp (inode and change time, ETag), or null
``deleted``        rows deleted from it (0: none)
``entry``          the rest of the entry, JSON
``index_schema``   the index's Arrow schema, base64 (dictionary-encoded: shared)
``index_options``  the index options, JSON (dictionary-encoded: shared)
=================  ======================================================================

Small index containers stay embedded in the entry (base64, as format 3 embeds them), so a
segment is ~500 bytes a file with a bloom filter of 500 keys; what planning reads of every
file is the vector columns, the ``entry`` column is decoded for the files a query uses.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from ..errors import CorruptIndexError, CorruptManifestError

SEGMENT_DIR = "_arrowidx/segments"
#: Segments kept at most: a reader reads each (one GET on an object store: a needle's and a
#: delete's request counts depend on it, docs/object-stores.md).
MAX_SEGMENTS = 3
#: A segment is merged into the one before it when it holds at least 1/MERGE_FACTOR as many rows.
MERGE_FACTOR = 4

_DICT = pa.dictionary(pa.int32(), pa.string())
SCHEMA = pa.schema([
    ("path", pa.string()), ("fid", pa.int64()), ("removed", pa.bool_()), ("size", pa.int64()),
    ("rows", pa.int64()), ("mtime_ns", pa.int64()), ("stamp", pa.string()), ("deleted", pa.int64()),
    ("entry", pa.string()), ("index_schema", _DICT), ("index_options", _DICT),
])  # fmt: skip
_REQUIRED = ("path", "removed", "size", "rows", "deleted", "entry")  # (fid: null for a file the lake index does not key)
#: The columns planning reads for every file at once; the rest is decoded per batch.
VECTORS = ("path", "fid", "removed", "size", "rows", "mtime_ns", "stamp", "deleted", "index_schema")
#: Rows per record batch of a segment: an entry asked for decodes its batch alone.
BATCH_ROWS = 1024


# --------------------------------------------------------------------------------------
# one segment: entries (as the manifest's dicts) <-> an Arrow IPC file
# --------------------------------------------------------------------------------------


def encode_segment(entries: list[dict], removed: list[str] = ()) -> bytes:
    """A segment of ``entries`` (dicts as the manifest stores an entry, with its ``fid``
    when it has one) and the ``removed`` paths, sorted by path."""
    return _ipc(segment_table(entries, removed))


def segment_table(entries: list[dict], removed: list[str] = ()) -> pa.Table:
    """The rows of :func:`encode_segment`, not encoded yet."""
    rows = sorted(entries, key=lambda d: d["path"])
    index = [d.get("index") or {} for d in rows]
    rest = []
    for d in rows:  # per entry: a commit writes what it changed
        e = {k: v for k, v in d.items() if k not in ("path", "fid", "size", "rows", "mtime_ns", "stamp") and v is not None}
        if e.get("index"):
            e["index"] = {k: v for k, v in e["index"].items() if k not in ("schema", "options") and v is not None}
        rest.append(json.dumps(e, sort_keys=True, separators=(",", ":")))
    gone = sorted(removed)
    n, m = len(rows), len(gone)
    columns = {
        "path": [d["path"] for d in rows] + gone,
        "fid": [d.get("fid") for d in rows] + [None] * m,
        "removed": [False] * n + [True] * m,
        "size": [d["size"] for d in rows] + [0] * m,
        "rows": [d["rows"] for d in rows] + [0] * m,
        "mtime_ns": [d.get("mtime_ns") for d in rows] + [None] * m,
        "stamp": [d.get("stamp") for d in rows] + [None] * m,
        "deleted": [(d.get("deletion") or {}).get("cardinality", 0) for d in rows] + [0] * m,
        "entry": rest + ["{}"] * m,
        "index_schema": [i.get("schema") for i in index] + [None] * m,
        "index_options": [json.dumps(i["options"], sort_keys=True) if "options" in i else None for i in index] + [None] * m,
    }
    return pa.table({name: pa.array(values, SCHEMA.field(name).type) for name, values in columns.items()}, schema=SCHEMA)


def _ipc(table: pa.Table) -> bytes:
    """An Arrow IPC file of ``table``, LZ4-compressed (the JSON column shrinks ~4x; LZ4
    decodes at GB/s)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, SCHEMA, options=pa.ipc.IpcWriteOptions(compression="lz4")) as writer:
        writer.write_table(table, max_chunksize=BATCH_ROWS)
    return sink.getvalue().to_pybytes()


class Segment:
    """One segment, opened: its vector columns decoded at once (every file's path, fid,
    size, rows, stamp, deletions), the rest of its entries per batch of
    :data:`BATCH_ROWS`, when an entry of that batch is asked for. A segment that is not
    one is a :class:`CorruptIndexError` naming ``source``."""

    def __init__(self, data: bytes | pa.Buffer, source: str):
        self.source = source
        self._buffer = data if isinstance(data, pa.Buffer) else pa.py_buffer(data)
        try:
            full = pa.ipc.open_file(self._buffer)
            if not full.schema.equals(SCHEMA):
                raise CorruptIndexError(f"a file-table segment with columns {full.schema.names}, expected {SCHEMA.names}",
                                        source=source)  # fmt: skip
            options = pa.ipc.IpcReadOptions(included_fields=[SCHEMA.get_field_index(n) for n in VECTORS])
            self.vectors = pa.ipc.open_file(self._buffer, options=options).read_all()
        except (pa.ArrowException, OSError, ValueError) as e:
            raise CorruptIndexError(f"not an arrowidx file-table segment (Arrow IPC file): {e}", source=source) from None
        self._full = full
        for name in _REQUIRED:
            if name in VECTORS and self.vectors.column(name).null_count:
                raise CorruptIndexError(f"column {name!r} of a file-table segment holds nulls", source=source)
        lengths = [len(c) for c in self.vectors.column(0).chunks]
        self._starts = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        self._batches: dict[int, pa.RecordBatch] = {}
        self._lock = threading.Lock()  # (an IPC file reader is not shared between threads)

    @property
    def num_rows(self) -> int:
        return self.vectors.num_rows

    def row(self, i: int) -> dict:
        """Every column of row ``i``, as Python values."""
        b = int(np.searchsorted(self._starts, i, side="right")) - 1
        batch = self._batches.get(b)
        if batch is None:
            try:
                with self._lock:
                    batch = self._batches[b] = self._full.get_batch(b)
            except (pa.ArrowException, OSError, ValueError) as e:
                raise CorruptIndexError(f"file-table segment batch {b} does not decode: {e}", source=self.source) from None
            if batch.column("entry").null_count:
                raise CorruptIndexError("column 'entry' of a file-table segment holds nulls", source=self.source)
        at = i - int(self._starts[b])
        return {name: batch.column(name)[at].as_py() for name in SCHEMA.names}

    def table(self) -> pa.Table:
        """Every row and column (merges rewrite whole segments)."""
        try:
            with self._lock:
                table = self._full.read_all()
        except (pa.ArrowException, OSError, ValueError) as e:
            raise CorruptIndexError(f"file-table segment does not decode: {e}", source=self.source) from None
        if table.column("entry").null_count:
            raise CorruptIndexError("column 'entry' of a file-table segment holds nulls", source=self.source)
        return table


def decode_segment(data: bytes, source: str) -> pa.Table:
    """Every row of a segment (:class:`CorruptIndexError` naming ``source`` when it is not one)."""
    return Segment(data, source).table()


@dataclass(frozen=True)
class SegmentRef:
    """What a manifest records of one segment."""

    file: str  # relative to the root, under SEGMENT_DIR
    size: int
    xxh64: str
    rows: int  # entries and tombstones

    def to_json(self) -> dict:
        return {"file": self.file, "size": self.size, "xxh64": self.xxh64, "rows": self.rows}

    @classmethod
    def from_json(cls, d: Any, source: str, where: str) -> SegmentRef:
        def fail(message: str, at: str = "") -> CorruptManifestError:
            return CorruptManifestError(message, source=source, field=f"{where}{at}")

        if not isinstance(d, dict):
            raise fail("expected an object")
        file = d.get("file")
        bad = (not isinstance(file, str) or not file.startswith(SEGMENT_DIR + "/") or "/" in file[len(SEGMENT_DIR) + 1 :]
               or "\x00" in file or "\\" in file or file.endswith("/..") or not file.endswith(".arrow"))  # fmt: skip
        if bad:
            raise fail(f"expected a file {SEGMENT_DIR}/<name>.arrow, got {file!r}"[:160], ".file")
        for key in ("size", "rows"):
            if type(d.get(key)) is not int or not 0 <= d[key] < 2**63:
                raise fail(f"expected an integer >= 0, got {d.get(key)!r}"[:120], f".{key}")
        digest = d.get("xxh64")
        if not isinstance(digest, str) or len(digest) != 16 or any(c not in "0123456789abcdef" for c in digest):
            raise fail(f"expected 16 hex digits (XXH64), got {digest!r}"[:120], ".xxh64")
        return cls(file, d["size"], digest, d["rows"])


def segment_ref(data: bytes, writer: str, rows: int) -> SegmentRef:
    digest = xxhash.xxh64_hexdigest(data)
    return SegmentRef(f"{SEGMENT_DIR}/{digest}-{writer}.arrow", len(data), digest, rows)


def check_segment(data: bytes, ref: SegmentRef, source: str) -> None:
    """The bytes read for ``ref`` are the segment the manifest names (size and XXH64)."""
    if len(data) != ref.size:
        raise CorruptIndexError(f"file-table segment holds {len(data)} bytes, the manifest says {ref.size};"
                                " restore it from a backup", source=source)  # fmt: skip
    if xxhash.xxh64_hexdigest(data) != ref.xxh64:
        raise CorruptIndexError("file-table segment does not match its checksum in the manifest (damaged);"
                                " restore it from a backup", source=source)  # fmt: skip


# --------------------------------------------------------------------------------------
# the live view: newest row per path, tombstones dropped
# --------------------------------------------------------------------------------------


def live_rows(segments: list[pa.Table], *, keep_removed: bool = False) -> pa.Table:
    """Per path, its row in the newest of ``segments`` (oldest first) that has it, without
    tombstones (``keep_removed``: with them, for merges that leave older segments out)."""
    if not segments:
        return SCHEMA.empty_table()
    parts = []
    seen: pa.Array | None = None
    for table in reversed(segments):  # per segment (a few), never per row
        paths = table.column("path")
        part = table if seen is None else table.filter(pc.invert(pc.is_in(paths, value_set=seen)))
        parts.append(part)
        seen = paths.combine_chunks() if seen is None else pa.concat_arrays([seen, *paths.chunks])
    out = pa.concat_tables(parts[::-1]).combine_chunks() if len(parts) > 1 else parts[0]
    if not keep_removed:
        removed = out.column("removed")
        if pc.any(removed).as_py():
            out = out.filter(pc.invert(removed))
    return out


def live_view(segments: list[Segment]) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The live rows of opened segments (oldest first): their vector columns, and for each
    its segment and its row there."""
    tagged = [
        seg.vectors.append_column("_seg", _array(np.full(seg.num_rows, k, np.int32)))
        .append_column("_row", _array(np.arange(seg.num_rows, dtype=np.int64)))
        for k, seg in enumerate(segments)
    ]  # fmt: skip
    table = live_rows(tagged) if tagged else pa.table({n: pa.array([], SCHEMA.field(n).type) for n in VECTORS})
    if not tagged:
        return table, np.empty(0, np.int32), np.empty(0, np.int64)
    seg = _ints(table.column("_seg"), np.int32)
    row = _ints(table.column("_row"), np.int64)
    return table.drop_columns(["_seg", "_row"]), seg, row


class FileTable(Mapping):
    """The live entries of one manifest version: vector columns for every file at once, and
    a ``Mapping`` from path to entry that materialises an entry (``entry_of(dict)``, the
    manifest's validation) only when it is asked for, once."""

    def __init__(self, segments: list[Segment], entry_of: Callable[[dict], Any]):
        self.segments = segments
        self.table, self._seg, self._row = live_view(segments)
        self._entry_of = entry_of
        self._entries: dict[int, Any] = {}
        self._rows: dict[str, int] | None = None
        self._paths: list[str] | None = None
        self._sorted: list[str] | None = None
        self._fids: np.ndarray | None = None
        self._by_fid: np.ndarray | None = None

    # -- vectors -------------------------------------------------------------------------
    @property
    def paths(self) -> list[str]:
        if self._paths is None:
            self._paths = self.table.column("path").to_pylist()
        return self._paths

    @property
    def fids(self) -> np.ndarray:
        if self._fids is None:
            self._fids = self.column("fid")
        return self._fids

    def column(self, name: str) -> np.ndarray:
        """An int64 column for every file at once (``fid``: -1 where null, ``size``,
        ``rows``, ``deleted``), from its buffers (``to_numpy`` would import pandas)."""
        column = self.table.column(name)
        if column.null_count:
            column = pc.fill_null(column, -1)
        return _ints(column, np.int64)

    def rows_of(self, paths: list[str]) -> np.ndarray:
        """The row of each of ``paths`` (-1: not in the table)."""
        if self._rows is None:
            self._rows = {p: i for i, p in enumerate(self.paths)}
        return np.fromiter(map(self._rows.get, paths, [-1] * len(paths)), np.int64, len(paths))

    def valid(self, name: str) -> np.ndarray:
        """Where column ``name`` is not null, for every file at once (``index_schema``: the
        file has an index; ``stamp``: the store stamped it when it was indexed)."""
        column = self.table.column(name)
        if not column.null_count:
            return np.ones(len(self), bool)
        return _bools(pc.is_valid(column))

    def distinct(self, name: str) -> list:
        """The distinct non-null values of column ``name`` over every file."""
        return [v for v in pc.unique(self.table.column(name).combine_chunks()).to_pylist() if v is not None]

    def identities(self, rows: np.ndarray) -> list[tuple]:
        """``(path, size, mtime_ns, stamp)`` of ``rows``: the data files as indexed."""
        taken = self.table.select(["path", "size", "mtime_ns", "stamp"]).take(_array(np.asarray(rows, np.int64)))
        return list(zip(*(taken.column(n).to_pylist() for n in ("path", "size", "mtime_ns", "stamp"))))

    def rows_of_fids(self, fids: np.ndarray) -> np.ndarray:
        """The rows of the live files among ``fids`` (others, no longer live, are left out)."""
        if self._by_fid is None:
            self._by_fid = np.argsort(self.fids, kind="stable")
        order = self._by_fid
        ordered = self.fids[order]
        fids = np.asarray(fids, np.int64)
        if not len(ordered):
            return np.empty(0, np.int64)
        at = np.searchsorted(ordered, fids)
        ok = (at < len(ordered)) & (ordered[np.minimum(at, len(ordered) - 1)] == fids)
        return order[at[ok]]

    # -- entries -------------------------------------------------------------------------
    def entry_at(self, row: int) -> Any:
        found = self._entries.get(row)
        if found is None:
            found = self._entries[row] = self._entry_of(self.row_dict(row))
        return found

    def row_dict(self, row: int) -> dict:
        """The entry of ``row`` as the manifest's dict (``dataclasses.asdict`` form, with ``fid``)."""
        segment = self.segments[int(self._seg[row])]
        r = segment.row(int(self._row[row]))
        try:
            d = json.loads(r["entry"])
        except ValueError as e:
            raise CorruptIndexError(f"the entry of {r['path']!r} is not JSON: {e}", source=segment.source) from None
        if not isinstance(d, dict):
            raise CorruptIndexError(f"the entry of {r['path']!r} is not a JSON object", source=segment.source)
        d.update(path=r["path"], fid=r["fid"], size=r["size"], rows=r["rows"], mtime_ns=r["mtime_ns"], stamp=r["stamp"])
        if isinstance(d.get("index"), dict):
            d["index"]["schema"] = r["index_schema"]
            try:
                d["index"]["options"] = json.loads(r["index_options"]) if r["index_options"] is not None else None
            except ValueError as e:
                raise CorruptIndexError(f"the index options of {r['path']!r} are not JSON: {e}", source=segment.source) from None
        return d

    def __getitem__(self, path: str) -> Any:
        if self._rows is None:
            self._rows = {p: i for i, p in enumerate(self.paths)}
        return self.entry_at(self._rows[path])

    def __contains__(self, path: object) -> bool:
        if self._rows is None:
            self._rows = {p: i for i, p in enumerate(self.paths)}
        return path in self._rows

    def __iter__(self) -> Iterator[str]:
        if self._sorted is None:
            self._sorted = sorted(self.paths)
        return iter(self._sorted)

    def __len__(self) -> int:
        return self.table.num_rows


def _array(values: np.ndarray) -> pa.Array:
    """An int32/int64 numpy array as Arrow, from its buffer (``pa.array`` imports pandas)."""
    type = pa.int32() if values.dtype == np.int32 else pa.int64()
    return pa.Array.from_buffers(type, len(values), [None, pa.py_buffer(np.ascontiguousarray(values))])


def _bools(column: pa.ChunkedArray) -> np.ndarray:
    """A null-free boolean column as numpy, from its bit buffers."""
    parts = [np.unpackbits(np.frombuffer(c.buffers()[1], np.uint8), bitorder="little")[c.offset : c.offset + len(c)]
             for c in column.chunks if len(c)]  # fmt: skip
    if not parts:
        return np.empty(0, bool)
    return (parts[0] if len(parts) == 1 else np.concatenate(parts)).astype(bool)


def _ints(column: pa.ChunkedArray, dtype) -> np.ndarray:
    """A null-free integer column as numpy, from its buffers."""
    parts = [np.frombuffer(c.buffers()[1], dtype)[c.offset : c.offset + len(c)] for c in column.chunks if len(c)]
    if not parts:
        return np.empty(0, dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


class FileOverlay(MutableMapping):
    """A writer's view of a :class:`FileTable`: entries read are copies (``copy(entry)``),
    so that changing them never changes the table other readers share; entries set and
    paths deleted are kept aside. :meth:`changes` gives what a commit writes."""

    def __init__(self, base: Mapping, copy: Callable[[Any], Any]):
        self.base = base
        self._copy = copy
        self._set: dict[str, Any] = {}
        self._deleted: set[str] = set()

    def __getitem__(self, path: str) -> Any:
        if path in self._set:
            return self._set[path]
        if path in self._deleted or path not in self.base:
            raise KeyError(path)
        entry = self._set[path] = self._copy(self.base[path])  # a copy: the caller may change it
        return entry

    def __setitem__(self, path: str, entry: Any) -> None:
        self._deleted.discard(path)
        self._set[path] = entry

    def __delitem__(self, path: str) -> None:
        if path not in self:
            raise KeyError(path)
        self._set.pop(path, None)
        self._deleted.add(path)

    def __contains__(self, path: object) -> bool:
        return path in self._set or (path not in self._deleted and path in self.base)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({*(p for p in self.base if p not in self._deleted), *self._set}))

    def __len__(self) -> int:
        return len({*(p for p in self.base if p not in self._deleted), *self._set})

    def touched(self) -> set[str]:
        """Paths read, set or deleted through this overlay."""
        return set(self._set) | self._deleted

    def set_entries(self) -> dict[str, Any]:
        """The entries read or set through this overlay (copies of the table's, or new)."""
        return self._set

    def changes(self, same: Callable[[Any, Any], bool]) -> tuple[list[Any], list[str]]:
        """``(entries set that differ from the table's, paths removed from the table)``."""
        changed = [e for p, e in sorted(self._set.items()) if p not in self.base or not same(self.base[p], e)]
        removed = sorted(p for p in self._deleted if p in self.base)
        return changed, removed


# --------------------------------------------------------------------------------------
# commits: a segment of what changed, then merges
# --------------------------------------------------------------------------------------


def plan_merge(rows: list[int]) -> tuple[int, int] | None:
    """Which consecutive segments (by their row counts, oldest first) to merge next: the
    newest two when the newer holds a quarter of the older's rows or more, or when there
    are more than :data:`MAX_SEGMENTS`; None: none."""
    if len(rows) >= 2 and rows[-1] * MERGE_FACTOR >= rows[-2]:
        return (len(rows) - 2, len(rows) - 1)
    if len(rows) > MAX_SEGMENTS:
        return (len(rows) - 2, len(rows) - 1)
    return None


def encode_table(table: pa.Table) -> bytes:
    """A segment of rows already in the segment schema (merges), sorted by path."""
    return _ipc(table.sort_by("path").cast(SCHEMA))


@dataclass
class SegmentsUpdate:
    """The segments after a commit (refs and opened segments, oldest first) and the files written."""

    refs: list[SegmentRef]
    segments: list[Segment]
    written: list[str]
    bytes_written: int = 0


def update_segments(refs: list[SegmentRef], segments: list[Segment], changed: list[dict], removed: list[str],
                    writer: str, write: Callable[[str, bytes], None]) -> SegmentsUpdate:  # fmt: skip
    """The segments after a commit that changed ``changed`` (entry dicts with their fid) and
    removed ``removed``: the base segments (``refs``, opened) plus one of the changes,
    merged as the module says (a merge decodes the segments it merges). Merges are planned
    in memory, so a commit writes one segment: its changes, or the merge they fold into
    (never a segment that a merge of the same commit replaces). ``write(rel, data)`` writes
    a complete object (relative to the root)."""
    parts: list[tuple[SegmentRef | None, Segment | None, pa.Table | None]] = list(zip(refs, segments, [None] * len(refs)))
    if changed or removed:
        parts.append((None, None, segment_table(changed, removed)))

    def rows(part) -> int:
        return part[1].num_rows if part[1] is not None else part[2].num_rows

    while (pick := plan_merge([rows(p) for p in parts])) is not None:
        first, last = pick
        tables = [p[2] if p[2] is not None else p[1].table() for p in parts[first : last + 1]]
        merged = live_rows(tables, keep_removed=first > 0)  # (tombstones go when merged into the oldest)
        parts[first : last + 1] = [(None, None, merged)] if merged.num_rows else []
    out = SegmentsUpdate([], [], [])
    for ref, segment, table in parts:
        if table is None:
            out.refs.append(ref)
            out.segments.append(segment)
            continue
        data = encode_table(table)
        segment = Segment(data, "<new segment>")
        ref = segment_ref(data, writer, segment.num_rows)
        write(ref.file, data)
        out.written.append(ref.file)
        out.bytes_written += len(data)
        out.refs.append(ref)
        out.segments.append(segment)
    return out
