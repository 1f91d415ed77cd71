"""The one registry of index types: option name -> format class.

The container and the predicate code never name a concrete index; they look it up here.
An index type missing from this registry reads as "cannot answer" (REMAIN).
"""

from __future__ import annotations

from .base import EmptyIndexReader, IndexReader, IndexType, IndexWriter
from .bitmap import BitmapIndex
from .bloom import BloomFilterIndex
from .bsi import BsiIndex
from .range_bitmap import RangeBitmapIndex

INDEX_TYPES: dict[str, type[IndexType]] = {
    t.name: t for t in (BloomFilterIndex, BitmapIndex, RangeBitmapIndex, BsiIndex)
}

__all__ = ["INDEX_TYPES", "EmptyIndexReader", "IndexReader", "IndexType", "IndexWriter"]
