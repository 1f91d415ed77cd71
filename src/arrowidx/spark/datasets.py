"""Datasets pinned to a manifest version, cached per worker process (reader and row filter)."""

from __future__ import annotations

import threading

import pyarrow.fs as pafs

from ..lake.layout import (
    Manifest,
    read_manifest,
)
from ..lake.scan import IndexedDataset

# --------------------------------------------------------------------------------------
# datasets pinned to a manifest version (shared by the reader and the mapInArrow filter)
# --------------------------------------------------------------------------------------

_DATASETS: dict[tuple, IndexedDataset] = {}
_DATASETS_LOCK = threading.Lock()


def _dataset_at(fs: pafs.FileSystem, root: str, version: int, on_corrupt: str = "raise") -> IndexedDataset:
    """An :class:`IndexedDataset` showing manifest ``version`` (cached per worker process).

    Its indexes, footers and deletion vectors are cached by (file, size, mtime), so a cached
    dataset is reused across tasks and queries; each task stats the files it reads again
    (``IndexedDataset.restat``), so staleness is still detected.
    """
    key = (fs.type_name, root, version, on_corrupt)
    with _DATASETS_LOCK:
        data = _DATASETS.get(key)
    if data is None:
        data = IndexedDataset(fs, root, on_corrupt=on_corrupt, threads=1)
        if data.manifest.version != version:
            # validated, errors name the file; files that returned get their deletions (tombstones)
            data._use_manifest(Manifest() if version == 0 else read_manifest(fs, root, version))
        with _DATASETS_LOCK:
            if len(_DATASETS) > 16:
                _DATASETS.clear()
            _DATASETS[key] = data
    return data
