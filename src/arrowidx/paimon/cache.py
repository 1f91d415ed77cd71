"""What is parsed from a Paimon table's immutable files, shared by every table object of
the process.

Paimon names manifests, data files and their index files by UUID and never rewrites one:
a name, with the size the metadata records for it, always means the same bytes. So a
table opened again (a service that opens the table per request, a notebook that reopens it
after a commit) need not parse again what an earlier table object parsed: manifest lists
and manifests (keyed by path and the size the snapshot or manifest list records), data
files' footers (by path and the size the manifest records) and their file indexes (by
index path, data file size and schema id).
On a local filesystem each key also holds the file's size and modification time as a stat
finds them, so a file damaged or replaced in place is parsed again. Each data file's Polars
scan is shared the same way (Polars keeps the file's metadata in it). Each cache is bounded
by an approximate byte budget, the least recently used entries dropped first;
:func:`clear_caches` empties them.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pyarrow.fs as pafs


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
        if weight > self.budget:
            return value  # larger than the whole budget: not kept
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (value, weight)
                self._weight += weight
                while self._weight > self.budget:
                    _, (_, dropped) = self._entries.popitem(last=False)
                    self._weight -= dropped
        return value

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


def file_key(fs: pafs.FileSystem, path: str, *recorded: Any) -> tuple | None:
    """The key of the file at ``path`` with what the metadata records of it (``recorded``):
    on a local filesystem also its size and modification time (None if it is missing: it
    is then not cached, and reading it says what is wrong)."""
    if not isinstance(fs, pafs.LocalFileSystem):
        return (fs.type_name, path, *recorded)
    try:
        st = os.stat(path)
    except OSError:
        return None
    return ("local", path, *recorded, st.st_size, st.st_mtime_ns)


MANIFESTS = SharedCache("manifests", 64 << 20)  # weight: a manifest file's size x 8 (decoded)
FOOTERS = SharedCache("footers", 64 << 20)  # weight: the footer's serialized size
INDEXES = SharedCache("file indexes", 256 << 20)  # weight: the container's size
# each data file's pl.scan_parquet: Polars reads the file's metadata when the scan first
# runs and keeps it in the scan (weight: the footer's serialized size)
POLARS_SCANS = SharedCache("polars scans", 64 << 20)


def clear_caches() -> None:
    """Forget every parsed manifest, footer, file index and Polars scan (made again on use)."""
    for cache in (MANIFESTS, FOOTERS, INDEXES, POLARS_SCANS):
        cache.clear()
