"""What is parsed from a Paimon table's immutable files, shared by every table object of
the process: the caches of :mod:`arrowidx.facts`, which the lake's readers share.

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
from typing import Any

import pyarrow.fs as pafs

from .. import facts
from ..facts import FOOTERS, MANIFESTS, POLARS_SCANS, SharedCache

INDEXES = facts.INDEXES

__all__ = ["FOOTERS", "INDEXES", "MANIFESTS", "POLARS_SCANS", "SharedCache", "clear_caches", "file_key"]


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


def clear_caches() -> None:
    """Forget every parsed manifest, footer, file index and Polars scan of the process (the
    same store of facts every arrowidx reader shares: :mod:`arrowidx.facts`)."""
    facts.clear()
