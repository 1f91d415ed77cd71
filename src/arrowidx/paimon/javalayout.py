"""How Java Paimon lays out what ``rewrite_file_index`` writes, so arrowidx writes the same
bytes: the order of a container's columns and index types (a ``java.util.HashMap``'s
iteration order, :func:`java_layout`) and the names of successive index files
(:func:`next_index_name`)."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow.fs as pafs

from ..errors import ArrowIdxError
from ..index.container import Container, java_string_hash
from .commit import read_file

INDEX_SUFFIX = ".index"  # a data file's index file: <data file>.index, then -1, -2, ...


class _JavaMapOrder:
    """The iteration order of a ``java.util.HashMap<String, ...>``: by bucket at the capacity
    its largest size needed, then, within a bucket, ``put`` keys after and ``computeIfAbsent``
    keys before the ones already there (removals and resizes keep the order)."""

    def __init__(self) -> None:
        self.pos: dict[str, int] = {}
        self.count = 0
        self.peak = 0

    def put(self, key: str, head: bool = False) -> None:
        if key not in self.pos:
            self.count += 1
            self.pos[key] = -self.count if head else self.count
            self.peak = max(self.peak, len(self.pos))

    def remove(self, key: str) -> None:
        self.pos.pop(key, None)

    def keys(self) -> list[str]:
        capacity = 16
        while self.peak > capacity * 3 // 4:
            capacity *= 2

        def bucket(key: str) -> int:
            h = java_string_hash(key) & 0xFFFFFFFF
            return (h ^ (h >> 16)) & (capacity - 1)

        return sorted(self.pos, key=lambda k: (bucket(k), self.pos[k]))


def _java_order(keys: Iterable[str], head: bool = False) -> list[str]:
    m = _JavaMapOrder()
    for k in keys:
        m.put(k, head)
    return m.keys()


def java_layout(built: dict[tuple[str, str], bytes | None], old: dict[str, list[str]] | None) -> dict[str, dict[str, bytes | None]]:
    """``{column: {type: bytes}}`` in the order Java's ``FileIndexProcessor`` serializes it.

    ``DataFileIndexWriter`` keeps type -> column -> writer maps (types added with
    ``computeIfAbsent``, columns with ``put``, in the options' order) and serializes into a
    column -> type map (``computeIfAbsent`` / ``put``); the processor then merges that into the
    map it loaded from the file's old ``.index`` file (``old``: header columns and types, read
    into a map with ``computeIfAbsent``), after removing what is not configured."""
    types = _java_order([t for _, t in built], head=True)
    by_type = {t: _java_order([c for c, tt in built if tt == t]) for t in types}
    serial = _JavaMapOrder()
    serial_types: dict[str, _JavaMapOrder] = {}
    for t in types:
        for c in by_type[t]:
            serial.put(c, head=True)
            serial_types.setdefault(c, _JavaMapOrder()).put(t)
    new = {c: serial_types[c].keys() for c in serial.keys()}
    outer = _JavaMapOrder()
    inner: dict[str, _JavaMapOrder] = {}
    if old:
        header = _java_order(old, head=True)
        for column in header:  # readAll: computeIfAbsent(column).put(type)
            outer.put(column, head=True)
            inner[column] = _JavaMapOrder()
            for t in _java_order(old[column]):
                inner[column].put(t)
        for column in header:  # remove what is not configured
            if column not in new:
                outer.remove(column)
                continue
            for t in old[column]:
                if t not in new[column]:
                    inner[column].remove(t)
    for column, column_types in new.items():  # computeIfAbsent(column).putAll(types)
        outer.put(column, head=True)
        order = inner.setdefault(column, _JavaMapOrder())
        for t in column_types:
            order.put(t)
    return {c: {t: built[(c, t)] for t in inner[c].keys()} for c in outer.keys()}


def next_index_name(name: str) -> str:
    """The name Java gives a data file's next index file (``DataFilePathFactory
    .createNewFileIndexFilePath``): ``x.parquet.index`` -> ``x.parquet-1.index`` ->
    ``x.parquet-2.index``."""
    dot = name.rfind(".")
    dash = name.rfind("-")
    if dash != -1 and dot > dash:
        try:
            return f"{name[: dash + 1]}{int(name[dash + 1 : dot]) + 1}{INDEX_SUFFIX}"
        except ValueError:
            pass
    return f"{name[:dot]}-1{INDEX_SUFFIX}"


def old_header(fs: pafs.FileSystem, path: str) -> dict[str, list[str]] | None:
    data = read_file(fs, path)
    if data is None:
        return None
    try:
        container = Container(memoryview(data), path)
    except ArrowIdxError:
        return None  # Java could not load it either: it only decides an order
    return {c: list(by_type) for c, by_type in container.entries.items()}
