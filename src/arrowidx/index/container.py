"""The file-index container (seed 003, "Index File"): one file, many column indexes.

Layout, all integers big-endian::

    magic (int64 1493475289347502) | version (int32 1) | head length (int32)
    column count (int32)
      per column: name (Java writeUTF) | index count (int32)
        per index: type name (writeUTF) | start (int32, absolute; -1 = empty index) | length
    redundant length (int32 0) | redundant bytes
    body: the index bytes, in header order

:func:`write_container` writes it; :class:`Container` reads the header once and hands out
each index's byte window on demand, so a reader touches only the columns it is asked about.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .._bytes import ByteReader, write_utf
from ..errors import CorruptIndexError

MAGIC = 1493475289347502
VERSION = 1
EMPTY_INDEX_FLAG = -1


class UnsupportedVersionError(CorruptIndexError):
    """A container (or index) written by a newer format version than arrowidx reads."""


def write_container(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """Serialise ``{column: {index type: bytes or None}}`` in the mapping's order.

    ``None`` writes the empty-index flag (start -1, length 0), which readers treat as an
    index over a column with no values.
    """
    head_entries = []
    bodies: list[bytes] = []  # joined once at the end: an index can be tens of MB
    body_size = 0
    for column, by_type in indexes.items():
        entries = []
        for index_type, data in by_type.items():
            if data is None:
                entries.append((index_type, EMPTY_INDEX_FLAG, 0))
            else:
                entries.append((index_type, body_size, len(data)))
                bodies.append(data)
                body_size += len(data)
        head_entries.append((column, entries))
    names = b"".join(write_utf(c) + b"".join(write_utf(t) for t, _, _ in e) for c, e in head_entries)
    n_indexes = sum(len(e) for _, e in head_entries)
    head_length = 8 + 4 + 4 + 4 + 8 * n_indexes + 4 * len(head_entries) + 4 + len(names)
    out = bytearray()
    out += MAGIC.to_bytes(8, "big") + VERSION.to_bytes(4, "big") + head_length.to_bytes(4, "big")
    out += len(head_entries).to_bytes(4, "big")
    for column, entries in head_entries:
        out += write_utf(column) + len(entries).to_bytes(4, "big")
        for index_type, start, length in entries:
            start = start if start == EMPTY_INDEX_FLAG else start + head_length
            out += write_utf(index_type) + start.to_bytes(4, "big", signed=True) + length.to_bytes(4, "big")
    out += (0).to_bytes(4, "big")  # redundant length
    assert len(out) == head_length
    return b"".join([out, *bodies])


@dataclass(frozen=True)
class Entry:
    """Where one index's bytes are: absolute ``start`` and ``length`` (start -1: empty)."""

    column: str
    index_type: str
    start: int
    length: int

    @property
    def empty(self) -> bool:
        return self.start == EMPTY_INDEX_FLAG


class Container:
    """A parsed container header over the container's bytes."""

    def __init__(self, data, source: str = "<bytes>"):
        self.data = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
        self.source = source
        self.entries: dict[str, dict[str, Entry]] = {}
        self._parse()

    def _parse(self) -> None:
        r = ByteReader(self.data, self.source)
        magic = r.i64("magic")
        if magic != MAGIC:
            raise r.fail(f"not a Paimon file-index container (magic {magic}, expected {MAGIC})", 0)
        version = r.i32("version")
        if version != VERSION:
            raise UnsupportedVersionError(
                f"file-index container version {version}; arrowidx reads version {VERSION}"
                " (upgrade arrowidx to read it)",
                source=self.source,
                offset=8,
            )
        head_length = r.i32("head length")
        if head_length < 24 or head_length > len(self.data):
            raise r.fail(f"head length {head_length} is outside [24, {len(self.data)}]", 12)
        head = ByteReader(self.data, self.source, r.pos, head_length)
        columns = head.count("column count", 6)
        for _ in range(columns):
            column = head.utf("column name")
            n = head.count(f"index count of column {column!r}", 10)
            by_type = self.entries.setdefault(column, {})
            for _ in range(n):
                at = head.pos
                index_type = head.utf("index type name")
                start = head.i32("index start")
                length = head.i32("index length")
                if start == EMPTY_INDEX_FLAG:
                    if length != 0:
                        raise head.fail(f"empty index {column}/{index_type} has length {length}", at)
                elif start < head_length or length < 0 or start + length > len(self.data):
                    raise head.fail(
                        f"index {column}/{index_type} at [{start}, {start + length}) lies outside"
                        f" the body [{head_length}, {len(self.data)})",
                        at,
                    )
                by_type[index_type] = Entry(column, index_type, start, length)
        redundant = head.i32("redundant length")
        if redundant < 0 or redundant > head.remaining:
            raise head.fail(f"redundant length {redundant} with {head.remaining} bytes left")

    def window(self, entry: Entry) -> ByteReader:
        """A bounds-checked reader over exactly one index's bytes."""
        return ByteReader(self.data, self.source, entry.start, entry.start + entry.length)

    def all_entries(self) -> Iterable[Entry]:
        for by_type in self.entries.values():
            yield from by_type.values()

    def load(self, columns: Iterable[str]) -> None:
        """Make sure the bytes of ``columns``' indexes are at hand (all of them are here)."""

    def layout(self) -> dict[str, dict[str, list]]:
        """``{column: {index type: [start, length, xxh64 of those bytes]}}``: what a manifest
        records so that a reader fetches one column's index alone (:class:`SparseContainer`)."""
        import xxhash

        return {
            column: {
                t: [e.start, e.length, "" if e.empty else xxhash.xxh64_hexdigest(self.data[e.start : e.start + e.length])]
                for t, e in by_type.items()
            }
            for column, by_type in self.entries.items()
        }


#: Index windows of one container closer than this are fetched in one read.
COALESCE_GAP = 64 * 1024


class SparseContainer(Container):
    """A container known from the layout its manifest recorded (:meth:`Container.layout`),
    whose index bytes are fetched only for the columns asked about: ``fetch(ranges)``
    returns the bytes of ``[(start, length), ...]`` of the container file. Each window is
    checked against its XXH64 before any reader sees it (a damaged window is a
    :class:`~arrowidx.errors.CorruptIndexError` naming the file), so no byte is trusted
    that the whole-file checksum would have refused."""

    def __init__(self, layout: dict[str, dict[str, list]], size: int, fetch, source: str = "<bytes>", listed: str = ""):
        self.data = None
        self.source = source
        self.listed = listed  # " (listed in <manifest> as files[i])": what referenced it, for errors
        self.size = size
        self._fetch = fetch
        self._windows: dict[tuple[str, str], memoryview] = {}
        self._digests: dict[tuple[str, str], str] = {}
        self.entries = {}
        for column, by_type in layout.items():
            for index_type, (start, length, digest) in by_type.items():
                if start != EMPTY_INDEX_FLAG and (start < 0 or length < 0 or start + length > size):
                    raise CorruptIndexError(f"index {column}/{index_type} at [{start}, {start + length}) lies outside"
                                            f" the {size} bytes of the container", source=source)  # fmt: skip
                self.entries.setdefault(column, {})[index_type] = Entry(column, index_type, start, length)
                self._digests[(column, index_type)] = digest

    def load(self, columns: Iterable[str]) -> None:
        wanted = [
            e for c in columns for e in self.entries.get(c, {}).values()
            if not e.empty and (e.column, e.index_type) not in self._windows
        ]  # fmt: skip
        if not wanted:
            return
        wanted.sort(key=lambda e: e.start)
        spans: list[list] = []  # [start, end, entries]
        for e in wanted:
            if spans and e.start - spans[-1][1] <= COALESCE_GAP:
                spans[-1][1] = max(spans[-1][1], e.start + e.length)
                spans[-1][2].append(e)
            else:
                spans.append([e.start, e.start + e.length, [e]])
        blobs = self._fetch([(a, b - a) for a, b, _ in spans])
        import xxhash

        for (a, b, entries), blob in zip(spans, blobs):
            if len(blob) != b - a:
                raise CorruptIndexError(f"the container ends before byte {b} (read {len(blob)} of {b - a} bytes"
                                        f" from {a}){self.listed}; rebuild with arrowidx build", source=self.source, offset=a)  # fmt: skip
            view = memoryview(blob).cast("B")
            for e in entries:
                window = view[e.start - a : e.start - a + e.length]
                if xxhash.xxh64_hexdigest(window) != self._digests[(e.column, e.index_type)]:
                    raise CorruptIndexError(
                        f"index {e.column}/{e.index_type} at [{e.start}, {e.start + e.length}) does not match its"
                        f" checksum in the manifest{self.listed} (damaged); rebuild with arrowidx build",
                        source=self.source, offset=e.start,
                    )  # fmt: skip
                self._windows[(e.column, e.index_type)] = window

    def window(self, entry: Entry) -> ByteReader:
        key = (entry.column, entry.index_type)
        if key not in self._windows:
            self.load([entry.column])
        return ByteReader(self._windows[key], self.source, 0, entry.length)

    def held_bytes(self) -> int:
        return sum(len(w) for w in self._windows.values())


def java_string_hash(text: str) -> int:
    """``String.hashCode()``: 31-multiplier over UTF-16 code units, as a signed int32."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_hashmap_order(keys: list[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap`` after inserting ``keys`` in this order.

    Buckets are ``(h ^ (h >>> 16)) & (capacity - 1)`` with the default capacity 16 doubled
    while size exceeds 3/4 of it; within a bucket, insertion order. (Treeified buckets, which
    need more than 8 collisions, are not modelled.) Used so multi-index containers come out
    byte-identical to Java's ``DataFileIndexWriter``.
    """
    unique = list(dict.fromkeys(keys))
    capacity = 16
    while len(unique) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(unique, key=bucket)  # sorted() is stable: insertion order within a bucket
