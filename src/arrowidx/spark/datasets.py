"""Datasets pinned to a manifest version, cached per worker process (reader and row filter)."""

from __future__ import annotations

from .. import facts
from ..lake.commit import read_manifest
from ..lake.manifest import Manifest
from ..lake.scan import IndexedDataset
from ..storage import Store


def dataset_at(store: Store, root: str, version: int, on_corrupt: str = "raise") -> IndexedDataset:
    """An :class:`IndexedDataset` showing manifest ``version``, kept open per worker process
    (:data:`arrowidx.facts.OPEN`: shared by the reader and the mapInArrow filter).

    Its indexes, footers and deletion vectors are cached by file identity, so a kept
    dataset is reused across tasks and queries; each task stats the files it reads again
    (``IndexedDataset.restat``), so staleness is still detected.
    """

    def make() -> tuple[IndexedDataset, int]:
        data = IndexedDataset(store, root, on_corrupt=on_corrupt, threads=1)
        if data.manifest.version != version:
            # validated, errors name the file; files that returned get their deletions (tombstones)
            data.lake.use_manifest(Manifest() if version == 0 else read_manifest(store, root, version))
        return data, 4 << 20

    return facts.OPEN.get(("spark dataset at", store.key, root, version, on_corrupt), make)
