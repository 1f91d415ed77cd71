"""The lake-level structure a commit writes with each manifest (format 4), and a reader opens.

Commits today write the file table through :func:`arrowidx.lake.commit.commit_segments`
(segments of the manifest's own entries, small containers embedded as before) and the lake
index through :func:`commit_lake_index`; readers open segments with :func:`open_table`.
:func:`commit_structure` (file ids given per commit, small containers packed into one index
file) is the fuller design, tested but not yet what builds commit.

Two parts, each a list of immutable files the manifest names (with their sizes and
checksums), each changed by a commit in proportion to what the commit changed:

* the **file table** (:mod:`.filetable`): every entry, in columnar segments;
* the **lake index** (:mod:`.lakeindex`): per keyed column, which files hold which keys.

:func:`commit_structure` turns a writer's manifest (its entries, changed from the version
it read) into what the new version names: the entries it changed get a file id (``fid``:
kept while a file's content is the same, a new one for new content), small index
containers are packed into one index file (never embedded), a segment of the changes is
added, a run of the keys the writer collected for its new fids is added, both merged as
they grow. Everything is returned as *artifacts* (``{path: bytes}``), written before the
manifest's exclusive create and removed when it is refused
(:func:`arrowidx.lake.commit.commit_manifest`), so a crash while writing them leaves the
previous version as it was.

:func:`open_table` reads the segments a manifest names (checked against their size and
XXH64, in parallel where reads are slow) into a :class:`~.filetable.FileTable`, once per
process.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from .. import facts
from ..errors import CorruptIndexError
from ..storage import Store
from .filetable import FileOverlay, FileTable, Segment, SegmentRef, check_segment, update_segments
from .lakeindex import Keyed, LakeIndex, new_schema
from .lakeindex import update as update_lake_index
from .layout import physical

PACKED_DIR = "_arrowidx/index"


@dataclass
class Structure:
    """What a format-4 manifest names besides its options: its segments, its lake index,
    and the next file id to give."""

    segments: list[SegmentRef] = field(default_factory=list)
    lake_index: LakeIndex | None = None
    next_fid: int = 0


@dataclass
class CommitInfo:
    """What a commit wrote for the structure (for reports and the benchmark)."""

    entries_written: int = 0
    files_removed: int = 0
    keyed: int = 0
    bytes_written: int = 0


def _join(root: str, rel: str) -> str:
    return f"{root.rstrip('/')}/{rel}" if root not in ("", ".") else rel


# --------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------


def open_segment(store: Store, root: str, ref: SegmentRef) -> Segment:
    """One segment, read, checked and opened once per process (it is named by its content)."""
    path = _join(root, ref.file)
    where = physical(store, path)  # (errors name the file where it is: the index root's)

    def make() -> tuple[Segment, int]:
        try:
            data = store.get(path, "file-table segment")
        except FileNotFoundError:
            raise CorruptIndexError("file-table segment is missing (deleted or never written)", source=where) from None
        check_segment(data, ref, where)
        return Segment(data, where), ref.size + 1024

    return facts.MANIFESTS.get(("segment", store.key, path, ref.size, ref.xxh64), make)


def open_table(store: Store, root: str, refs: list[SegmentRef], entry_of: Callable[[dict], Any]) -> FileTable:
    """The file table of a manifest's segments (read in parallel on stores whose reads are slow)."""
    segments = facts.parallel(lambda ref: open_segment(store, root, ref), list(refs), inline=store.quick_reads)
    return FileTable(segments, entry_of)


# --------------------------------------------------------------------------------------
# committing
# --------------------------------------------------------------------------------------


def same_content(old: Any, new: Any) -> bool:
    """Whether ``new`` describes the same data-file content as ``old`` (its fid, hence its
    keys in the lake index, then stays): the same path, size and content fingerprint."""
    return (
        old is not None and getattr(old, "fid", None) is not None and old.path == new.path and old.size == new.size
        and old.fingerprint is not None and old.fingerprint == new.fingerprint
    )  # fmt: skip


def stored_dict(entry: Any) -> dict:
    """An entry as its segment stores it (``dataclasses.asdict``)."""
    return dataclasses.asdict(entry)


def commit_structure(
    store: Store,
    root: str,
    base: Structure,
    base_files: Mapping[str, Any],
    files: Mapping[str, Any],
    *,
    changed: list[Any] | None = None,
    removed: list[str] | None = None,
    keys: Mapping[str, Mapping[str, np.ndarray | None]] | None = None,
    key_types: Mapping[str, pa.DataType] | None = None,
    writer: str,
) -> tuple[Structure, dict[str, bytes], CommitInfo]:
    """The structure of the version a writer commits, and the artifacts to write first.

    ``base``/``base_files``: what the version the writer read names; ``files``: the
    writer's entries (every live path). ``changed``/``removed``: the entries that differ
    from ``base_files`` and the paths that left (found by comparing when not given).
    ``keys``: per path, the distinct key hashes of each keyed column the writer collected
    for the entries it indexed (:class:`~.lakeindex.FileKeys`); ``key_types``: the keyed
    columns and their types (None: keep the base's columns; empty: no lake index).
    Entries are changed in place: their ``fid`` set, small embedded containers packed.
    """
    artifacts: dict[str, bytes] = {}
    info = CommitInfo()
    if changed is None or removed is None:
        if isinstance(files, FileOverlay):
            changed, removed = files.changes(lambda a, b: a == b)
        else:  # a plain dict of entries (a writer of a format-2 manifest): every entry compared
            changed = [e for rel, e in files.items() if rel not in base_files or base_files[rel] != e]
            removed = [rel for rel in base_files if rel not in files]
    next_fid = base.next_fid
    new_fids: dict[str, int] = {}
    for entry in changed:  # per changed entry: the writer's own work
        old = base_files.get(entry.path) if entry.path in base_files else None
        if same_content(old, entry):
            entry.fid = old.fid
        else:
            entry.fid = next_fid
            new_fids[entry.path] = next_fid
            next_fid += 1
    _pack(changed, artifacts, writer)
    write = artifacts.__setitem__
    base_segments = [open_segment(store, root, ref) for ref in base.segments]
    segments = update_segments(base.segments, base_segments, [stored_dict(e) for e in changed], removed, writer, write)
    info.entries_written, info.files_removed = len(changed), len(removed)

    lake_index = base.lake_index
    if key_types is not None or lake_index is not None:
        schema = new_schema(key_types) if key_types is not None else lake_index.schema
        if len(schema):
            added = []
            for rel, fid in new_fids.items():
                found = (keys or {}).get(rel)
                if found is not None:
                    added.append(Keyed(fid, found, {c: schema.field(c).type for c in found if schema.get_field_index(c) >= 0}))
            info.keyed = len(added)
            live = _live_fids(files)
            lake_index = update_lake_index(store, root, lake_index, schema, added, live, writer, write).index
        else:
            lake_index = None
    info.bytes_written = sum(len(b) for b in artifacts.values())
    return Structure(segments.refs, lake_index, next_fid), artifacts, info


def _live_fids(files: Mapping[str, Any]) -> np.ndarray:
    """The fids of every live entry after the commit (sorted), without materialising the
    entries a writer's overlay did not touch: the base table's fids, minus the paths it
    touched, plus the fids of the entries it read or set."""
    if isinstance(files, FileOverlay) and isinstance(files.base, FileTable):
        table, touched = files.base, files.touched()
        keep = np.fromiter((p not in touched for p in table.paths), bool, len(table))  # (a set lookup per path)
        extra = np.array([e.fid for e in files.set_entries().values()], np.int64)
        fids = np.concatenate([table.fids[keep], extra])
    else:
        fids = np.array([e.fid for e in files.values()], np.int64)
    return np.sort(fids)


def _pack(entries: list[Any], artifacts: dict[str, bytes], writer: str) -> None:
    """Move the embedded containers of ``entries`` into one index file (an artifact): each
    entry then points at its range (``index.file`` and ``index.offset``), checked by the
    container's own XXH64 as before."""
    small = [e for e in entries if e.index is not None and e.index.embedded is not None]
    if not small:
        return
    blobs, offset = [], 0
    placed = []
    for e in small:
        data = base64.b64decode(e.index.embedded)
        placed.append((e, offset))
        blobs.append(data)
        offset += len(data)
    packed = b"".join(blobs)
    name = f"{PACKED_DIR}/packed-{xxhash.xxh64_hexdigest(packed)}-{writer}.index"
    artifacts[name] = packed
    for e, at in placed:
        e.index = dataclasses.replace(e.index, embedded=None, file=name, offset=at)


# --------------------------------------------------------------------------------------
# the lake index of a manifest with inline entries (what builds commit today)
# --------------------------------------------------------------------------------------


def keyed_columns(schema: pa.Schema) -> list[str]:
    """The columns of an index schema the lake index keys (every keyable indexed column)."""
    from .lakeindex import keyable

    return [f.name for f in schema if keyable(f.type)]


def key_types_of(files: Mapping[str, Any]) -> dict[str, pa.DataType]:
    """The keyed columns of a lake and their types: each column's type in the first file
    that keyed it (a file of another type is then not covered for it)."""
    out: dict[str, pa.DataType] = {}
    for entry in files.values():
        if entry.keys is None or entry.index is None:
            continue
        schema = entry.index.arrow_schema()
        for column in entry.keys:
            if column not in out and schema.get_field_index(column) >= 0:
                out[column] = schema.field(column).type
    return out


def commit_lake_index(store: Store, root: str, manifest: Any, writer: str) -> dict[str, bytes]:
    """Give the entries a writer keyed (``entry.keys``, set by a build) new file ids, and
    the lake index of ``manifest`` (a writer's copy of the version it read) a run of their
    keys, merged as :mod:`.lakeindex` says; returns the run files to write before the
    manifest's exclusive create (``{path relative to the root: bytes}``). Entries not keyed
    keep their fid (their content is the one it was given for) or have none (not covered).
    A commit that keys a few files writes a run of about their keys."""
    files = manifest.files
    previous = manifest.lake_index
    schema = new_schema(key_types_of(files))
    if previous is not None and all(
        previous.schema.get_field_index(f.name) >= 0 and previous.schema.field(f.name).type.equals(f.type) for f in schema
    ):
        schema = previous.schema  # the same columns and types: the runs go on
    if not len(schema):
        manifest.lake_index, manifest.next_fid = None, 0
        for entry in files.values():
            entry.fid, entry.keys = None, None
        return {}
    if previous is None or not previous.schema.equals(schema):
        for entry in files.values():  # a new index: only what is keyed now is covered
            if entry.keys is None:
                entry.fid = None
    next_fid = manifest.next_fid
    added = []
    for entry in files.values():
        if entry.keys is not None:
            entry.fid, next_fid = next_fid, next_fid + 1  # a new id for each content keyed
            types = {c: entry.index.arrow_schema().field(c).type for c in entry.keys if c in schema.names}
            added.append(Keyed(entry.fid, entry.keys, types))
            entry.keys = None
    live = np.sort(np.array([e.fid for e in files.values() if e.fid is not None], np.int64))
    artifacts: dict[str, bytes] = {}
    prefix = root.rstrip("/") + "/" if root not in ("", ".") else ""

    def write(path: str, data: bytes) -> None:
        artifacts[path[len(prefix) :] if prefix and path.startswith(prefix) else path] = data

    manifest.lake_index = update_lake_index(store, root, previous, schema, added, live, writer, write).index
    manifest.next_fid = next_fid
    return artifacts
