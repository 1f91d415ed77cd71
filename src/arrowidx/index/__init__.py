"""The one registry of index types: option name -> format class.

The container and the predicate code never name a concrete index; they look it up here.
An index type missing from this registry reads as "cannot answer" (REMAIN).

Each format's module is imported the first time its class is looked up: a needle on a
bloom-filter column never loads the bitmap, BSI and range-bitmap code (a few ms of a new
process's first query, issue 51).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from .base import EmptyIndexReader, IndexReader, IndexType, IndexWriter

#: option name -> (module of this package, class): every index type arrowidx knows.
_FORMATS: dict[str, tuple[str, str]] = {
    "bloom-filter": ("bloom", "BloomFilterIndex"),
    "bitmap": ("bitmap", "BitmapIndex"),
    "range-bitmap": ("range_bitmap", "RangeBitmapIndex"),
    "bsi": ("bsi", "BsiIndex"),
}


class IndexTypes(Mapping[str, type[IndexType]]):
    """The registry: a read-only mapping whose format classes are imported on first lookup."""

    def __init__(self, formats: dict[str, tuple[str, str]]):
        self._formats = formats
        self._loaded: dict[str, type[IndexType]] = {}

    def __getitem__(self, name: str) -> type[IndexType]:
        found = self._loaded.get(name)
        if found is None:
            module, cls = self._formats[name]  # (a KeyError for an unknown type, as a dict)
            found = self._loaded[name] = getattr(importlib.import_module(f"{__name__}.{module}"), cls)
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._formats

    def __iter__(self) -> Iterator[str]:
        return iter(self._formats)

    def __len__(self) -> int:
        return len(self._formats)

    def __repr__(self) -> str:
        return f"IndexTypes({sorted(self._formats)})"


INDEX_TYPES: Mapping[str, type[IndexType]] = IndexTypes(_FORMATS)

__all__ = ["INDEX_TYPES", "EmptyIndexReader", "IndexReader", "IndexType", "IndexWriter"]
