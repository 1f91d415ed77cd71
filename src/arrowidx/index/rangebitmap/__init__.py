"""Building blocks of the ``range-bitmap`` index (and of the deprecated ``bsi``).

* :mod:`.bitslice`: bitmaps from boolean masks, bit-sliced index bitmaps (answering ``<``,
  ``=`` and top-k over them, one Roaring operation per slice);
* :mod:`.writing`: bit-sliced bitmaps built block by block, and their bytes;
* :mod:`.dictionary`: the chunked, sorted dictionary of keys (fixed- and variable-length
  chunks) and the key encodings Java uses.

The index type itself lives in :mod:`arrowidx.index.range_bitmap`.
"""
