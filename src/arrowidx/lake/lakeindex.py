"""The lake index: which files of a lake may hold a key, answered for every file at once.

Planning ``id == 42`` over 20,000 small files by asking each file's own index costs a read
and some Python per file, and a bloom filter's false positives (10 % of the files at
Paimon's default ``fpp``) are read in full. The lake index answers from one structure: per
indexed column, the 64-bit hash of every distinct key of every covered file, with the
file's id, sorted by hash (Apache Hudi's metadata table keeps the same facts per key). A
needle reads one window of it per run (below), and a binary search there gives the files
holding the key's hash: only those, and the files the structure does not cover, are
planned further.

**Keys.** A row's key is the key the per-file indexes store (:func:`arrowidx.types.column_keys`:
timestamps at the precision Java keys them, decimals unscaled, strings as UTF-8); its hash
is Thomas Wang's 64-bit hash for numbers (a bijection: no two keys share one) and XXH64 for
strings. A literal is lowered to its key exactly as the per-file indexes lower it
(:func:`arrowidx.predicate.needles`, bound to the type the lake index was keyed with).
Float columns are not keyed (their equality is not one key lookup).

**Safety.** A file with a row ``column == v`` holds ``key(v)``, hence its hash: it is never
ruled out. A file is ruled out only when it is *covered* for the column: its keys were
written under its file id (``fid``, given once to one content of one file by the commit:
a re-indexed or replaced file gets a new one) and its column had the lake index's type and
at most :data:`MAX_KEYS_PER_FILE` distinct keys. Anything else (files indexed before the
lake index existed, larger files, another column type) is not covered and is decided as
without it. A hash shared by two keys only keeps a file in.

**Runs.** The structure is a list of immutable runs, each a file ``_arrowidx/lake-index/
<xxh64>-<writer>.run`` named by its content and by the writer that made it. A commit that
indexes a few files adds a run of their keys; runs are merged (dropping the keys of files
no longer in the lake) when a newer run grows to a quarter of the one before it, or when
there are more than :data:`MAX_RUNS`, so a small commit writes about what it indexed
(amortised O(log files) rewrites per key, never O(all files) per commit). The manifest
names the runs (:meth:`LakeIndex.to_json`): a run no manifest names is never read.

**Layout of a run**: ``b"AIXLKRN1"``, then per column a *section* of its records sorted by
hash, in blocks of :data:`BLOCK` records: the block's hashes (uint64 LE), its fids
(uint32 LE), then the XXH64 of those bytes (uint64 LE). Where each section starts, how many
records it holds and its *spread* are in the manifest. Hashes are uniform, so a record of
hash ``h`` sits near position ``h / 2**64 * count``; the spread is the largest distance of
any record from that estimate (computed when the run is written), so the records of ``h``
lie within ``estimate +- (spread + 1)``: one ranged read of the blocks of that window
answers a needle, and each block is checked against its checksum before it is used.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from .._hash import thomas_wang_long_hash, xxh64_binary
from ..errors import ArrowIdxError, CorruptIndexError, CorruptManifestError
from ..storage import Store
from ..types import PaimonType, column_keys, index_arrow_type, paimon_type

RUN_DIR = "_arrowidx/lake-index"
MAGIC = b"AIXLKRN1"
FORMAT = 1
#: Records per block: the unit of a read and of a checksum (12 KiB).
BLOCK = 1024
#: A file is keyed for a column when it holds at most this many distinct keys of it (12
#: bytes each in the runs): above it the file's own index decides, as it would anyway for
#: a few large files (bench/bench_scale.py measures lakes of 500-row files).
MAX_KEYS_PER_FILE = 100_000
#: Runs kept at most: a needle reads one window per run.
MAX_RUNS = 4
#: A run is merged into the one before it when it holds at least 1/MERGE_FACTOR as many records.
MERGE_FACTOR = 4
#: An IN list of more keys than this is matched against whole sections in one pass.
SEARCHED_KEYS = 16
_FID_LIMIT = 1 << 32
_TWO64 = float(1 << 64)


def distinct(values: np.ndarray) -> np.ndarray:
    """``values`` sorted, each once (``np.unique`` imports ``numpy.ma``: ~50 ms in a new
    process, on the path of every needle)."""
    values = np.sort(values)
    if len(values) > 1:
        values = values[np.concatenate(([True], values[1:] != values[:-1]))]
    return values


# --------------------------------------------------------------------------------------
# keys and their hashes
# --------------------------------------------------------------------------------------


def keyable(arrow_type: pa.DataType) -> bool:
    """Whether a column of ``arrow_type`` can be keyed (a Paimon type, not a float)."""
    try:
        ptype = paimon_type(arrow_type)
    except ArrowIdxError:
        return False
    return not ptype.is_float


def column_hashes(arr: pa.Array | pa.ChunkedArray, ptype: PaimonType) -> np.ndarray:
    """The distinct hashes (uint64, ascending) of the non-null keys of ``arr``."""
    keys = column_keys(arr, ptype)
    values = keys.values
    if keys.nulls is not None:
        values = values.filter(pa.array(~keys.nulls)) if isinstance(values, pa.Array) else values[~keys.nulls]
    if ptype.is_string:
        hashes = xxh64_binary(values).view(np.uint64)
    else:
        hashes = thomas_wang_long_hash(np.asarray(values).astype(np.int64)).view(np.uint64)
    return distinct(hashes)


def literal_hashes(keys: Iterable[Any], ptype: PaimonType) -> np.ndarray:
    """The hashes (uint64, ascending, distinct) of literal keys as
    :func:`arrowidx.predicate.needles` gives them (ints, or UTF-8 bytes for strings): the
    same function as :func:`column_hashes`, in plain Python (no pyarrow conversion, which
    would import pandas)."""
    keys = [k for k in keys if k is not None]
    if ptype.is_string:
        out = np.array([xxhash.xxh64_intdigest(k if isinstance(k, bytes) else str(k).encode()) for k in keys], np.uint64)
    else:
        out = thomas_wang_long_hash(np.array([int(k) for k in keys], np.int64)).view(np.uint64)
    return distinct(out)


class FileKeys:
    """The distinct key hashes of one file's keyed columns, collected batch by batch
    (:meth:`add`), stopping for a column once it holds more than :data:`MAX_KEYS_PER_FILE`."""

    def __init__(self, schema: pa.Schema, columns: Iterable[str]):
        self.types = {c: paimon_type(schema.field(c).type) for c in columns}
        self._parts: dict[str, list[np.ndarray] | None] = {c: [] for c in self.types}
        self._counts = dict.fromkeys(self.types, 0)

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        for column in self._parts:
            self.add_array(column, batch.column(column))

    def add_array(self, column: str, array: pa.Array | pa.ChunkedArray) -> None:
        """One column's values (a batch of them)."""
        parts = self._parts[column]
        if parts is not None:
            found = column_hashes(array, self.types[column])
            parts.append(found)
            self._counts[column] += len(found)
            if self._counts[column] > MAX_KEYS_PER_FILE:  # an upper bound: maybe too many
                merged = distinct(np.concatenate(parts))
                if len(merged) > MAX_KEYS_PER_FILE:
                    self._parts[column] = None
                else:
                    self._parts[column] = [merged]
                    self._counts[column] = len(merged)

    def finish(self) -> dict[str, np.ndarray | None]:
        """``{column: distinct hashes, or None when the file is not keyed for it}``."""
        out: dict[str, np.ndarray | None] = {}
        for column, parts in self._parts.items():
            if parts is None:
                out[column] = None
            else:
                merged = distinct(np.concatenate(parts)) if parts else np.empty(0, np.uint64)
                out[column] = merged if len(merged) <= MAX_KEYS_PER_FILE else None
        return out


def file_hashes(table: pa.Table | pa.RecordBatch, columns: Iterable[str]) -> dict[str, np.ndarray | None]:
    """:class:`FileKeys` of one table at once."""
    keys = FileKeys(table.schema, columns)
    keys.add(table)
    return keys.finish()


# --------------------------------------------------------------------------------------
# fid ranges: which files a run covers
# --------------------------------------------------------------------------------------

Ranges = tuple[tuple[int, int], ...]


def ranges_of(fids: np.ndarray) -> Ranges:
    """Sorted distinct ``fids`` as half-open ``(start, end)`` ranges."""
    fids = distinct(np.asarray(fids, np.int64))
    if not len(fids):
        return ()
    breaks = np.flatnonzero(np.diff(fids) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [len(fids)]))
    return tuple((int(fids[s]), int(fids[e - 1]) + 1) for s, e in zip(starts, ends))


def in_ranges(fids: np.ndarray, ranges: Ranges) -> np.ndarray:
    """Per fid, whether it lies in one of ``ranges``."""
    fids = np.asarray(fids, np.int64)
    if not ranges:
        return np.zeros(len(fids), bool)
    bounds = np.array(ranges, np.int64)
    at = np.searchsorted(bounds[:, 0], fids, side="right") - 1
    ok = at >= 0
    return ok & (fids < bounds[np.maximum(at, 0), 1])


def union_ranges(*many: Ranges) -> Ranges:
    items = sorted(r for ranges in many for r in ranges)
    out: list[list[int]] = []
    for start, end in items:
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return tuple((a, b) for a, b in out)


def _count_in(ranges: Ranges, live: np.ndarray) -> int:
    return int(in_ranges(live, ranges).sum()) if len(live) else 0


# --------------------------------------------------------------------------------------
# the runs
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    """One column's records in a run: where they start, how many, their spread, and the
    covered files not keyed for this column (too many keys, another type)."""

    offset: int
    count: int
    spread: int
    missing: Ranges = ()

    @property
    def blocks(self) -> int:
        return -(-self.count // BLOCK)

    @property
    def length(self) -> int:
        return self.count * 12 + self.blocks * 8

    def block_span(self, first: int, last: int) -> tuple[int, int]:
        """``(start, length)`` in the run file of blocks ``first..last``."""
        start = self.offset + first * (BLOCK * 12 + 8)
        end = self.offset + self.length if last == self.blocks - 1 else self.offset + (last + 1) * (BLOCK * 12 + 8)
        return start, end - start


@dataclass(frozen=True)
class Run:
    """One immutable run file: the files (fids) it covers and a section per column."""

    file: str  # relative to the root, under RUN_DIR
    size: int
    fids: Ranges
    files: int  # covered files when written (for the share of dead ones later)
    columns: Mapping[str, Section]

    @property
    def records(self) -> int:
        return sum(s.count for s in self.columns.values())


def _estimate(hashes: np.ndarray, count: int) -> np.ndarray:
    """Where a record of each hash is expected in a section of ``count`` records."""
    est = np.floor(hashes.astype(np.float64) * (count / _TWO64)).astype(np.int64)
    return np.clip(est, 0, max(count - 1, 0))


def _encode_section(hashes: np.ndarray, fids: np.ndarray) -> tuple[bytes, int]:
    """The blocks of records sorted by hash, and their spread."""
    order = np.argsort(hashes)  # (deterministic; the order of one hash's files does not matter)
    hashes, fids = hashes[order].astype("<u8"), fids[order].astype("<u4")
    n = len(hashes)
    spread = int(np.abs(np.arange(n, dtype=np.int64) - _estimate(hashes, n)).max()) + 2 if n else 0
    parts = []
    for start in range(0, n, BLOCK):  # per block of 1,024 records
        body = hashes[start : start + BLOCK].tobytes() + fids[start : start + BLOCK].tobytes()
        parts += [body, xxhash.xxh64_intdigest(body).to_bytes(8, "little")]
    return b"".join(parts), spread


def encode_run(sections: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> tuple[bytes, dict[str, tuple[int, int, int]]]:
    """A run's bytes from ``{column: (hashes uint64, fids)}``, and ``{column: (offset,
    count, spread)}``."""
    out = [MAGIC]
    at = len(MAGIC)
    where = {}
    for column in sorted(sections):
        hashes, fids = sections[column]
        data, spread = _encode_section(np.asarray(hashes, np.uint64), np.asarray(fids, np.int64))
        where[column] = (at, len(hashes), spread)
        out.append(data)
        at += len(data)
    return b"".join(out), where


def decode_blocks(data: bytes | memoryview, section: Section, first: int, source: str) -> tuple[np.ndarray, np.ndarray]:
    """The records of consecutive blocks from ``first`` (their bytes ``data``), each block
    checked against its checksum: ``(hashes, fids)``."""
    view = memoryview(data).cast("B")
    hashes, fids = [], []
    at, block = 0, first
    while at < len(view):
        m = min(BLOCK, section.count - block * BLOCK)
        if m <= 0 or at + m * 12 + 8 > len(view):
            raise CorruptIndexError(f"lake index block {block} is cut short ({len(view) - at} bytes)", source=source,
                                    offset=section.offset)  # fmt: skip
        body = view[at : at + m * 12]
        stored = int.from_bytes(view[at + m * 12 : at + m * 12 + 8], "little")
        if xxhash.xxh64_intdigest(body) != stored:
            raise CorruptIndexError(f"lake index block {block} does not match its checksum (damaged);"
                                    " rebuild with arrowidx build", source=source,
                                    offset=section.offset + block * (BLOCK * 12 + 8))  # fmt: skip
        hashes.append(np.frombuffer(body[: m * 8], "<u8"))
        fids.append(np.frombuffer(body[m * 8 :], "<u4"))
        at += m * 12 + 8
        block += 1
    if not hashes:
        return np.empty(0, np.uint64), np.empty(0, np.uint32)
    return np.concatenate(hashes), np.concatenate(fids)


# --------------------------------------------------------------------------------------
# the lake index: what a manifest names
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LakeIndex:
    """The runs of one manifest version and the types their keys were made with."""

    schema: pa.Schema  # the keyed columns and their Arrow types
    runs: tuple[Run, ...] = ()
    _types: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names)

    def ptype(self, column: str) -> PaimonType:
        found = self._types.get(column)
        if found is None:
            found = self._types[column] = paimon_type(self.schema.field(column).type)
        return found

    # -- what it covers ------------------------------------------------------------------
    def covered(self, column: str, fids: np.ndarray) -> np.ndarray:
        """Per fid, whether a run holds its keys of ``column`` (then a needle on ``column``
        may rule it out)."""
        fids = np.asarray(fids, np.int64)
        out = np.zeros(len(fids), bool)
        for run in self.runs:
            section = run.columns.get(column)
            if section is not None:
                out |= in_ranges(fids, run.fids) & ~in_ranges(fids, section.missing)
        return out

    # -- lookups -------------------------------------------------------------------------
    def holding(self, store: Store, root: str, column: str, keys: Iterable[Any]) -> np.ndarray:
        """The fids (sorted, distinct) whose keys of ``column`` include one of ``keys``'s
        hashes: one ranged read per run (a window per key; whole sections for long lists)."""
        if self.schema.get_field_index(column) < 0:
            raise ArrowIdxError(f"lake index: no column {column!r}")
        hashes = literal_hashes(keys, self.ptype(column))
        found = [self._holding_in(store, root, run, column, hashes) for run in self.runs if column in run.columns]
        return distinct(np.concatenate(found)) if found else np.empty(0, np.int64)

    def _holding_in(self, store: Store, root: str, run: Run, column: str, hashes: np.ndarray) -> np.ndarray:
        section = run.columns[column]
        if not section.count or not len(hashes):
            return np.empty(0, np.int64)
        path = posixpath.join(root, run.file) if root not in ("", ".") else run.file
        if len(hashes) > SEARCHED_KEYS:
            windows = [(0, section.blocks - 1)]
        else:
            est = _estimate(hashes, section.count)
            lo = np.maximum(est - section.spread - 1, 0) // BLOCK
            hi = np.minimum(est + section.spread + 1, section.count - 1) // BLOCK
            windows = _merge_windows(zip(lo.tolist(), hi.tolist()))
            if sum(b - a + 1 for a, b in windows) * 2 > section.blocks:
                windows = [(0, section.blocks - 1)]
        spans = [section.block_span(a, b) for a, b in windows]
        try:
            blobs = store.get_ranges(path, spans, "lake index")
        except FileNotFoundError:
            raise CorruptIndexError("lake index run is missing (deleted or never written)", source=path) from None
        out = []
        for (first, _), blob, (_, length) in zip(windows, blobs, spans):
            if len(blob) != length:
                raise CorruptIndexError(f"lake index run ends early ({len(blob)} of {length} bytes read)", source=path)
            keys, fids = decode_blocks(blob, section, first, path)
            lo = np.searchsorted(keys, hashes, side="left")
            hi = np.searchsorted(keys, hashes, side="right")
            hit = hi > lo
            if hit.any():
                out.extend(fids[a:b] for a, b in zip(lo[hit].tolist(), hi[hit].tolist()))
        return np.concatenate(out).astype(np.int64) if out else np.empty(0, np.int64)

    def may_hold(self, expr: Any, schema: pa.Schema, fids: np.ndarray, store: Store, root: str) -> np.ndarray | None:
        """Per file (``fids``), whether it may hold a row matching ``expr`` as far as the lake
        index knows: False only for a file covered for a column of an equality / IN
        conjunct (:func:`~arrowidx.predicate.needles`) whose keys hold none of its values.
        None when no conjunct is such a lookup on a keyed column (then it rules out
        nothing). ``schema``: the dataset's; its keyed columns are bound with the types the
        index was keyed with."""
        from ..predicate import bind, needles

        fields = [self.schema.field(f.name) if self.schema.get_field_index(f.name) >= 0 else f for f in schema]
        bound_schema = pa.schema(fields)
        try:
            found = [(c, keys) for c, keys in needles(bind(expr, bound_schema), bound_schema) if c in self.schema.names]
        except (ArrowIdxError, pa.ArrowException, TypeError, ValueError):
            return None  # planned file by file, where a bad filter meets its error
        if not found:
            return None
        fids = np.asarray(fids, np.int64)
        keep = np.ones(len(fids), bool)
        for column, keys in found:
            held = self.holding(store, root, column, keys)
            keep &= ~self.covered(column, fids) | np.isin(fids, held)
        return keep

    def read_section(self, store: Store, root: str, run: Run, column: str,
                     pending: Mapping[str, bytes] | None = None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """Every record of one run's column (merges read whole runs; ``pending``: runs this
        commit wrote but has not stored yet, by file)."""
        section = run.columns[column]
        if not section.count:
            return np.empty(0, np.uint64), np.empty(0, np.uint32)
        path = posixpath.join(root, run.file) if root not in ("", ".") else run.file
        start, length = section.block_span(0, section.blocks - 1)
        try:
            if pending is not None and run.file in pending:
                blob = pending[run.file][start : start + length]
            else:
                (blob,) = store.get_ranges(path, [(start, length)], "lake index")
        except FileNotFoundError:
            raise CorruptIndexError("lake index run is missing (deleted or never written)", source=path) from None
        if len(blob) != length:
            raise CorruptIndexError(f"lake index run ends early ({len(blob)} of {length} bytes read)", source=path)
        return decode_blocks(blob, section, 0, path)

    # -- the manifest's reference --------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "schema": base64.b64encode(self.schema.serialize().to_pybytes()).decode(),
            "runs": [
                {
                    "file": run.file, "size": run.size, "files": run.files, "fids": [list(r) for r in run.fids],
                    "columns": {c: {"offset": s.offset, "count": s.count, "spread": s.spread,
                                    "missing": [list(r) for r in s.missing]} for c, s in sorted(run.columns.items())},
                }  # fmt: skip
                for run in self.runs
            ],
        }

    @classmethod
    def from_json(cls, d: Any, source: str, where: str = "lake_index") -> LakeIndex:
        """Validate a manifest's ``lake_index``; a problem is a :class:`CorruptManifestError`
        naming ``source`` and the field."""

        def fail(message: str, at: str = "") -> CorruptManifestError:
            return CorruptManifestError(message, source=source, field=f"{where}{at}")

        if not isinstance(d, dict):
            raise fail(f"expected an object, got {type(d).__name__}")
        if d.get("format") != FORMAT:
            raise fail(f"lake index format {d.get('format')!r} is not one this arrowidx reads ({FORMAT}): upgrade arrowidx",
                       ".format")  # fmt: skip
        try:
            schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(d.get("schema", ""), validate=True)))
        except (binascii.Error, ValueError, TypeError, OSError, pa.ArrowException) as e:
            raise fail(f"not a base64 Arrow IPC schema: {e}", ".schema") from None
        raw_runs = d.get("runs")
        if not isinstance(raw_runs, list):
            raise fail("expected a list", ".runs")
        runs = []
        for i, raw in enumerate(raw_runs):
            at = f".runs[{i}]"
            if not isinstance(raw, dict):
                raise fail("expected an object", at)
            file = raw.get("file")
            if not isinstance(file, str) or posixpath.normpath(file) != file or not file.startswith(RUN_DIR + "/") \
                    or "\x00" in file or "\\" in file or ".." in file.split("/"):  # fmt: skip
                raise fail(f"path {file!r} must be a normalised path below {RUN_DIR}/", f"{at}.file")
            size = _int(raw.get("size"), fail, f"{at}.size")
            files = _int(raw.get("files"), fail, f"{at}.files")
            fids = _ranges(raw.get("fids"), fail, f"{at}.fids")
            columns_raw = raw.get("columns")
            if not isinstance(columns_raw, dict):
                raise fail("expected an object", f"{at}.columns")
            columns = {}
            end = len(MAGIC)
            for column, s in sorted(columns_raw.items()):
                w = f"{at}.columns.{column}"
                if schema.get_field_index(column) < 0:
                    raise fail(f"column {column!r} is not in the lake index schema", w)
                if not isinstance(s, dict):
                    raise fail("expected an object", w)
                section = Section(_int(s.get("offset"), fail, f"{w}.offset"), _int(s.get("count"), fail, f"{w}.count"),
                                  _int(s.get("spread"), fail, f"{w}.spread"), _ranges(s.get("missing", []), fail, f"{w}.missing"))  # fmt: skip
                if section.offset < end or section.offset + section.length > size:
                    raise fail(f"section [{section.offset}, {section.offset + section.length}) does not lie in the"
                               f" {size} bytes of the run after the sections before it", w)  # fmt: skip
                end = section.offset + section.length
                columns[column] = section
            runs.append(Run(file, size, fids, files, columns))
        return cls(schema, tuple(runs))


def _merge_windows(windows: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(windows):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _int(value: Any, fail, at: str) -> int:
    if type(value) is not int or not 0 <= value < 2**63:
        raise fail(f"expected an integer >= 0, got {value!r}"[:120], at)
    return value


def _ranges(value: Any, fail, at: str) -> Ranges:
    if not isinstance(value, list):
        raise fail("expected a list of [start, end] pairs", at)
    out = []
    last = -1
    for pair in value:
        ok = isinstance(pair, list) and len(pair) == 2 and all(type(x) is int for x in pair)
        if not ok or not last <= pair[0] < pair[1] <= _FID_LIMIT:
            raise fail(f"expected ascending, disjoint [start, end) pairs of file ids, got {pair!r}"[:160], at)
        out.append((pair[0], pair[1]))
        last = pair[1]
    return tuple(out)


# --------------------------------------------------------------------------------------
# commits: a run of what a commit indexed, then merges
# --------------------------------------------------------------------------------------


@dataclass
class Keyed:
    """What a commit indexed of one file for the lake index: its fid, and per keyed column
    the distinct hashes (None: not keyed for that column), with the column's Arrow type."""

    fid: int
    hashes: Mapping[str, np.ndarray | None]
    types: Mapping[str, pa.DataType]


@dataclass
class Update:
    """A new lake index and the run files written for it (to remove if the commit fails)."""

    index: LakeIndex
    written: list[str]
    bytes_written: int = 0


def new_schema(columns: Mapping[str, pa.DataType]) -> pa.Schema:
    """The schema of a new lake index over ``columns`` (keyable ones only), each with the
    type its keys are made from (:func:`~arrowidx.types.index_arrow_type`: a dictionary as
    its values)."""
    return pa.schema([pa.field(c, index_arrow_type(t)) for c, t in sorted(columns.items()) if keyable(t)])


def update(store: Store, root: str, previous: LakeIndex | None, schema: pa.Schema, added: list[Keyed],
           live: np.ndarray, writer: str, write) -> Update:  # fmt: skip
    """The lake index after a commit: ``previous`` (None: none yet; a different ``schema``
    starts over) plus a run of the files ``added`` (their fids are new), merged as the
    module says, keys of files not ``live`` (sorted fids of the lake after the commit)
    dropped by merges. ``write(path, data)`` writes a complete object (the caller's
    atomic write); runs are named ``<xxh64>-<writer>.run``."""
    live = np.asarray(live, np.int64)
    runs = list(previous.runs) if previous is not None and previous.schema.equals(schema) else []
    written: list[str] = []
    pending: dict[str, bytes] = {}  # runs written here, which a merge below may read again
    nbytes = 0
    if added:
        sections, fids = _sections_of(schema, added)
        run, data = _make_run(sections, fids, writer)
        write(posixpath.join(root, run.file) if root not in ("", ".") else run.file, data)
        written.append(run.file)
        pending[run.file] = data
        nbytes += len(data)
        runs.append(run)
    runs = [r for r in runs if _count_in(r.fids, live)]  # runs of no live file: gone
    while True:
        pick = _to_merge(runs, live)
        if pick is None:
            break
        first, last = pick
        merged, data = _merge(store, root, LakeIndex(schema, tuple(runs)), runs[first : last + 1], live, writer, pending)
        if merged is None:
            runs[first : last + 1] = []
            continue
        write(posixpath.join(root, merged.file) if root not in ("", ".") else merged.file, data)
        written.append(merged.file)
        pending[merged.file] = data
        nbytes += len(data)
        runs[first : last + 1] = [merged]
    return Update(LakeIndex(schema, tuple(runs)), written, nbytes)


def _sections_of(schema: pa.Schema, added: list[Keyed]) -> tuple[dict, np.ndarray]:
    fids = np.array([k.fid for k in added], np.int64)
    if len(fids) and (fids.min() < 0 or fids.max() >= _FID_LIMIT):
        raise ArrowIdxError(f"lake index: file ids must lie in [0, 2**32), got {int(fids.min())}..{int(fids.max())}")
    sections = {}
    for f in schema:
        hashes, owners, missing = [], [], []
        for k in added:
            found = k.hashes.get(f.name)
            kind = k.types.get(f.name)
            if found is None or kind is None or not index_arrow_type(kind).equals(f.type):
                missing.append(k.fid)
                continue
            hashes.append(np.asarray(found, np.uint64))
            owners.append(np.full(len(found), k.fid, np.int64))
        h = np.concatenate(hashes) if hashes else np.empty(0, np.uint64)
        o = np.concatenate(owners) if owners else np.empty(0, np.int64)
        sections[f.name] = (h, o, ranges_of(np.array(missing, np.int64)))
    return sections, fids


def _make_run(sections: Mapping[str, tuple[np.ndarray, np.ndarray, Ranges]], fids: np.ndarray, writer: str) -> tuple[Run, bytes]:
    data, where = encode_run({c: (h, o) for c, (h, o, _) in sections.items()})
    name = f"{RUN_DIR}/{xxhash.xxh64_hexdigest(data)}-{writer}.run"
    columns = {c: Section(at, count, spread, sections[c][2]) for c, (at, count, spread) in where.items()}
    return Run(name, len(data), ranges_of(fids), len(distinct(fids)), columns), data


def _to_merge(runs: list[Run], live: np.ndarray) -> tuple[int, int] | None:
    """Which consecutive runs to merge next (None: none): a run holding most dead files
    alone; the newest two when the newer holds a quarter of the older's records or more;
    the newest two when there are more than :data:`MAX_RUNS`."""
    for i, run in enumerate(runs):
        if run.files and _count_in(run.fids, live) * 2 < run.files:
            return (i, i)
    if len(runs) >= 2 and runs[-1].records * MERGE_FACTOR >= runs[-2].records and runs[-2].records:
        return (len(runs) - 2, len(runs) - 1)
    if len(runs) > MAX_RUNS:
        return (len(runs) - 2, len(runs) - 1)
    return None


def _merge(store: Store, root: str, index: LakeIndex, runs: list[Run], live: np.ndarray, writer: str,
           pending: Mapping[str, bytes]) -> tuple[Run | None, bytes]:  # fmt: skip
    """One run of the live files' records of ``runs`` (None when no live file is left)."""
    covered = union_ranges(*(r.fids for r in runs))
    live_here = live[in_ranges(live, covered)]
    if not len(live_here):
        return None, b""
    sections = {}
    for column in index.columns:
        hashes, owners, missing = [], [], []
        for run in runs:
            section = run.columns.get(column)
            if section is None:  # (a run always has every column of its schema; defensive)
                missing.append(run.fids)
                continue
            h, f = index.read_section(store, root, run, column, pending)
            keep = np.isin(f.astype(np.int64), live_here)
            hashes.append(h[keep])
            owners.append(f[keep].astype(np.int64))
            missing.append(section.missing)
        h = np.concatenate(hashes) if hashes else np.empty(0, np.uint64)
        o = np.concatenate(owners) if owners else np.empty(0, np.int64)
        gone = union_ranges(*missing)
        sections[column] = (h, o, ranges_of(live_here[in_ranges(live_here, gone)]))
    return _make_run(sections, live_here, writer)
