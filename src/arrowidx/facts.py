"""The process-wide store of facts about immutable files: the one place every reader
(``arrowidx.dataset``, ``arrowidx.polars``, the CLI, ``arrowidx.paimon``) keeps what it
parsed, so that a dataset or table object is a cheap view and a second object, or a second
query, never reads or parses a file again.

A fact is keyed by the file's identity: the store (:attr:`arrowidx.storage.Store.key`), the
path, and what proves the bytes are the same: for a data file its size, modification time
and change stamp (local disks: inode and change time; object stores: the ETag), for
arrowidx's own index files the XXH64 their name and manifest carry, for a deletion vector
its file, range and checksum, for a manifest its version (created once, never rewritten).
A file replaced in place gets another identity and is read again; where a store gives no
change stamp, a reader scopes its data-file facts to itself (:func:`identity_token`).

Each kind of fact has its own least-recently-used budget in approximate bytes
(``ARROWIDX_CACHE_MB`` scales them all; 0 keeps nothing); :func:`clear` empties them.

One thread pool per process (:func:`executor`), created on first use, does the parallel
reads of cold queries (index ranges, footers, deletion vectors of many files).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


class SharedCache:
    """A thread-safe least-recently-used map bounded by the total ``weight`` of its entries."""

    def __init__(self, name: str, budget: int):
        self.name = name
        self.budget = budget
        self._entries: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, key: Any, make: Callable[[], tuple[Any, int]]) -> Any:
        """The value for ``key``, made by ``make() -> (value, weight)`` on a miss (outside
        the lock: two threads missing at once both make it, and one is kept); a key of
        None is never kept."""
        if key is None:
            return make()[0]
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found[0]
        value, weight = make()
        self.put(key, value, weight)
        return value

    def peek(self, key: Any) -> Any:
        """The value for ``key`` if kept, else None (nothing is made)."""
        if key is None:
            return None
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def put(self, key: Any, value: Any, weight: int) -> None:
        budget = _scaled(self.budget)
        if key is None or weight > budget:
            return  # larger than the whole budget: not kept
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (value, weight)
                self._weight += weight
                while self._weight > budget and self._entries:
                    _, (_, dropped) = self._entries.popitem(last=False)
                    self._weight -= dropped

    def holds(self, key: Any) -> bool:
        """Whether ``key`` is kept (a key of None never is)."""
        with self._lock:
            return key is not None and key in self._entries

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._weight = 0

    def __len__(self) -> int:
        return len(self._entries)


def _scaled(budget: int) -> int:
    text = os.environ.get("ARROWIDX_CACHE_MB")
    if not text:
        return budget
    try:
        return int(budget * float(text) / 512)
    except ValueError:
        return budget


MANIFESTS = SharedCache("manifests", 64 << 20)  # arrowidx manifests and Paimon manifests (decoded, x8)
FOOTERS = SharedCache("footers", 64 << 20)  # parsed Parquet footers (their serialized size)
INDEXES = SharedCache("file indexes", 256 << 20)  # file-index containers (the bytes held)
DELETIONS = SharedCache("deletion vectors", 64 << 20)  # decoded deletion vectors (their serialized size)
FRAGMENTS = SharedCache("fragments", 64 << 20)  # pyarrow fragments with their footer loaded
POLARS_SCANS = SharedCache("polars scans", 64 << 20)  # a data file's pl.scan_parquet (Polars keeps its metadata)
DERIVED = SharedCache("derived", 64 << 20)  # what is computed from the above (decoded statistics, schemas)
OPEN = SharedCache("open datasets", 64 << 20)  # datasets and tables kept open between queries (cheap views on the above)

ALL = (MANIFESTS, FOOTERS, INDEXES, DELETIONS, FRAGMENTS, POLARS_SCANS, DERIVED, OPEN)


def clear() -> None:
    """Forget every fact (read and parsed again on use)."""
    for cache in ALL:
        cache.clear()
    for memo in MEMOS:
        memo.clear()


class Recent:
    """The results of the last few computations on an expression (a query asks several times
    whether its filter is valid, what statistics may judge of it, its Polars translation):
    pure functions of their key, remembered most recent first, found again by a test on the
    key (``is``, then ``equals``: an Expression has no hash worth its cost)."""

    def __init__(self, name: str, size: int):
        self.name = name
        self.size = size
        self._items: list[tuple[Any, Any]] = []
        self._lock = threading.Lock()

    def find(self, matches: Callable[[Any], bool]) -> Any:
        """The value of the most recent key ``matches`` accepts (None: none)."""
        for key, value in self._items:  # (a snapshot: add() replaces the list)
            if matches(key):
                return value
        return None

    def add(self, key: Any, value: Any) -> None:
        if _scaled(1 << 20) <= 0:
            return  # ARROWIDX_CACHE_MB=0: nothing kept
        with self._lock:
            self._items = [(key, value), *self._items[: self.size - 1]]

    def clear(self) -> None:
        with self._lock:
            self._items = []

    def __len__(self) -> int:
        return len(self._items)


#: the last parsed expression (one query asks its tree several times)
PARSED = Recent("parsed expressions", 1)
#: filters pyarrow accepted on a schema (whole, and by their shape: functions, fields, types)
VALID_FILTERS = Recent("valid filters", 8)
VALID_SHAPES = Recent("valid filter shapes", 32)
#: what row-group statistics may judge of a filter (arrowidx.statistics)
STATISTICS_FILTERS = Recent("statistics filters", 16)
#: Polars predicates translated (arrowidx.polars.translate) and found valid on a schema
POLARS_TRANSLATIONS = Recent("polars translations", 16)
POLARS_VALID = Recent("valid polars predicates", 16)

#: pyarrow filters as Polars predicates of the same meaning (arrowidx.lake.polars_filter)
POLARS_FILTERS = Recent("polars forms of filters", 4)

MEMOS = (PARSED, VALID_FILTERS, VALID_SHAPES, STATISTICS_FILTERS, POLARS_TRANSLATIONS, POLARS_VALID, POLARS_FILTERS)


_INTERNED: dict[Any, Any] = {}
_INTERNED_LOCK = threading.Lock()


def interned(key: Any, make: Callable[[], Any]) -> Any:
    """One object per ``key`` for the life of the process, made by ``make()`` on first use:
    objects whose identity other facts are keyed by (the Parquet formats fragments are made
    with), so they are never dropped (a few per process)."""
    found = _INTERNED.get(key)
    if found is None:
        made = make()  # (outside the lock: making one may intern another)
        with _INTERNED_LOCK:
            found = _INTERNED.setdefault(key, made)
    return found


def interned_peek(key: Any) -> Any:
    """The object :func:`interned` holds for ``key`` (None: none)."""
    return _INTERNED.get(key)


_TOKENS = itertools.count(1)


def identity_token() -> int:
    """A token private to one reader: part of the keys of data-file facts on a store that
    gives no change stamp, so that those facts are not shared with other readers (which
    could not tell a file rewritten with the same size and time)."""
    return next(_TOKENS)


_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()
#: Threads of the process's I/O pool: reads are waits (local disks, object stores), so
#: more threads than cores pay; pyarrow's own scans use their own pool.
IO_THREADS = int(os.environ.get("ARROWIDX_IO_THREADS", "16"))


def executor() -> ThreadPoolExecutor:
    """The process's one I/O thread pool (created on first use; a forked child makes its own)."""
    if not _POOL:
        with _POOL_LOCK:
            if not _POOL:
                _POOL.append(ThreadPoolExecutor(max_workers=IO_THREADS, thread_name_prefix="arrowidx-io"))
    return _POOL[0]


os.register_at_fork(after_in_child=_POOL.clear)  # a forked child has none of the parent's threads


def parallel(fn: Callable[[Any], Any], items: list, *, inline_below: int = 2, inline: bool = False) -> list:
    """``[fn(x) for x in items]``, on the I/O pool when there are at least ``inline_below``
    items and not ``inline`` (results in order; the first exception raised)."""
    if inline or len(items) < inline_below:
        return [fn(x) for x in items]
    return list(executor().map(fn, items))
