"""Test helpers: a manifest's entries as JSON, whatever its format.

A format-4 manifest names file-table segments instead of listing its entries
(:mod:`arrowidx.lake.filetable`); tests that edit an entry's JSON field by field (to see the
reader name the field) edit the same manifest written as format 3, which lists them inline:
both formats validate an entry with the same function (``manifest.entry_from_dict``)."""

from __future__ import annotations

import json

from arrowidx.lake.filetable import FileTable, Segment, SegmentRef
from arrowidx.lake.manifest import entry_from_dict

from .conftest import index_dir


def entries_of(d: dict, root: str) -> list[dict]:
    """The stored entries (dicts, in path order) of manifest JSON ``d`` of the lake at ``root``."""
    if "segments" not in d:
        return d["files"]
    refs = [SegmentRef.from_json(r, "test", "segments") for r in d["segments"]]
    segments = [Segment(open(index_dir(root, ref.file.split("/", 1)[1]), "rb").read(), ref.file) for ref in refs]  # (_arrowidx/...: the index root's)
    table = FileTable(segments, lambda row: entry_from_dict(row, "test", "files").to_dict())
    return [table[path] for path in table]


def as_format3(d: dict, root: str) -> dict:
    """Manifest JSON ``d`` with its entries listed inline, as format 3 writes them (its
    checksum is then stale: reseal it)."""
    if "segments" not in d:
        return d
    out = {k: v for k, v in d.items() if k != "segments"}
    out["files"] = entries_of(d, root)
    out["format_version"] = 3
    return out


def manifest_entries(path: str, root: str) -> list[dict]:
    """The stored entries of the manifest file ``path`` of the lake at ``root``."""
    return entries_of(json.load(open(path)), root)
