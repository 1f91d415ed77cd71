"""What a reader trusts: whether a data file is still the one its manifest entry describes,
and the verified bytes of its index and deletion vector.

The seam between the manifest (:mod:`.manifest`, :mod:`.commit`) and reading: a reader asks
only these functions; how freshness and integrity are decided lives here.

* A file is the one indexed when the store's change stamp is the one recorded
  (:func:`same_by_stamp`: nothing read), else when its content hash matches
  (:func:`entry_is_fresh`; its footer's fingerprint for entries indexed before content hashes). A changed file is read in full; if rows were
  deleted from it, :class:`~arrowidx.errors.StaleDeletionError` unless
  ``on_stale_deletions="read-full"``.
* Files a lake-level structure rules out are checked all at once (:func:`still_indexed`):
  this query's stats of them (columns: the listing's, or one stat per file) against the
  manifest's file table, with numpy and Arrow, no object per file. The stat of each file is
  what a check needs at the least: a file rewritten in place (truncated and written, no
  rename) changes no folder, only its own size, times and change stamp.
* Index bytes (:func:`load_index_bytes`) and deletion-vector records
  (:func:`deletion_vector_of`) are checked against the size and XXH64 the manifest records;
  a mismatch is a :class:`~arrowidx.errors.CorruptIndexError` naming the file.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from ..deletion import DeletionVector, read_deletion_vectors
from ..errors import CorruptIndexError, CorruptManifestError, OptionError, StaleDeletionError
from ..storage import FileStats, ObjectInfo, Store
from .footer import Footer
from .layout import ensure_inside, join, read_bytes
from .manifest import DeletionRef, FileEntry, checksum

STALE_DELETIONS = ("raise", "read-full")


def check_stale_option(value: str) -> str:
    if value not in STALE_DELETIONS:
        raise OptionError(f"on_stale_deletions must be one of {', '.join(STALE_DELETIONS)}, got {value!r}")
    return value


def same_by_stamp(entry: FileEntry, info: ObjectInfo | None) -> bool:
    """The store says the file was not written or replaced since it was indexed: the same
    size, modification time and change stamp (local disks: inode and change time, which
    ``cp -p`` and ``rsync -t`` cannot set back; object stores: the ETag, a hash of the
    content). No byte of the file needs reading."""
    return (
        info is not None and entry.stamp is not None and info.stamp == entry.stamp and info.size == entry.size
        and (entry.mtime_ns is None or info.mtime_ns is None or info.mtime_ns == entry.mtime_ns)
    )  # fmt: skip


def still_indexed(stats: FileStats, positions: np.ndarray, table: Any, rows: np.ndarray) -> np.ndarray:
    """Whether each file at ``positions`` of ``stats`` is still the data file row ``rows``
    of the manifest's file table (:class:`~arrowidx.lake.filetable.FileTable`) describes: its
    identity as indexed, the same size, modification time and change stamp (what
    :meth:`~arrowidx.lake.files.LakeFiles.identity_of` compares one file at a time), for
    every file at once. A file gone, or indexed without a time or stamp, is not."""
    import pyarrow.compute as pc

    from ..literals import scalar  # (a Python value given to pyarrow would import pandas)

    if not len(positions):
        return np.zeros(0, bool)
    same = stats.size[positions] == table.column("size")[rows]
    same &= (stats.mtime_ns[positions] == table.column("mtime_ns")[rows]) & table.valid("mtime_ns")[rows]
    at = pa.Array.from_buffers(pa.int64(), len(rows), [None, pa.py_buffer(np.ascontiguousarray(rows, np.int64))])
    equal = pc.fill_null(pc.equal(stats.stamps(positions), table.table.column("stamp").take(at)), scalar(False, pa.bool_()))
    if isinstance(equal, pa.ChunkedArray):
        equal = equal.combine_chunks()
    bits = np.unpackbits(np.frombuffer(equal.buffers()[1], np.uint8), bitorder="little")[equal.offset : equal.offset + len(equal)]
    return same & bits.astype(bool)


def by_tail(entry: FileEntry, info: ObjectInfo) -> bool:
    """Whether :func:`entry_is_fresh` decides by the file's tail fingerprint (its footer)
    rather than its whole content: for an entry indexed before content hashes existed, and on
    a store without change stamps when the modification time is the one indexed (a copy
    changes it, and then the content decides)."""
    if entry.fingerprint is None:
        return False
    if entry.content_xxh64 is None:
        return True
    return entry.stamp is None and info.stamp is None and entry.mtime_ns is not None and info.mtime_ns == entry.mtime_ns


def entry_is_fresh(entry: FileEntry, info: ObjectInfo | None, footer: Footer | Callable[[], Footer] | None = None, *,
                   content: Callable[[], str] | None = None, on_stale_deletions: str = "raise") -> bool:  # fmt: skip
    """True when the data file is still the one ``entry`` describes (its index and deletion
    vector apply); False when it changed (read it in full, ignore its index).

    Identity is the content: the store's change stamp when it is the one recorded
    (:func:`same_by_stamp`: nothing read); else the XXH64 of the whole file (``content``, a
    function computing it, called only then: a copied lake is hashed once per process), so a
    rewrite is caught whatever it keeps (size, mtime, footer). Two cases use the file's tail
    fingerprint instead (``footer``: the footer or a function reading it; :func:`by_tail`):
    an entry indexed before content hashes existed (``build`` re-indexes those), and a store
    without change stamps whose modification time is the one indexed (the limit written in
    docs/reliability.md). Entries without any fingerprint fall back to size + mtime. A
    changed file that has deletions raises :class:`StaleDeletionError` unless
    ``on_stale_deletions="read-full"``.
    """
    where = info.path if info is not None else entry.path
    if info is None or info.size != entry.size:
        fresh = False  # gone, or another size: nothing to read to see it
    elif same_by_stamp(entry, info):
        fresh = True
    elif by_tail(entry, info):
        if footer is None:
            raise ValueError("entry_is_fresh: this entry's identity is its fingerprint: pass the footer")
        footer = footer() if callable(footer) else footer
        fresh = footer.fingerprint == entry.fingerprint
        if fresh and footer.num_rows != entry.rows:
            raise CorruptIndexError(
                f"the manifest says {entry.rows} rows but the file has {footer.num_rows}; rebuild with arrowidx build",
                source=where,
            )
    elif entry.content_xxh64 is not None:
        if content is None:
            raise ValueError("entry_is_fresh: this entry's identity is its content: pass content=")
        fresh = content() == entry.content_xxh64
    else:
        fresh = entry.matches(info)
    if not fresh and entry.deletion is not None and on_stale_deletions != "read-full":
        raise StaleDeletionError(
            f"changed since {entry.deletion.cardinality} row(s) were deleted from it (its content no longer"
            " matches the manifest's), so its deletion vector no longer applies. Restore the file,"
            " or pass on_stale_deletions='read-full' to read it in full (the deleted rows come back), or"
            " rebuild with build(..., on_stale_deletions='read-full') to forget those deletions",
            path=where,
        )
    return fresh


def same_content(old: FileEntry, new: FileEntry) -> bool:
    """Whether two entries describe the same content: by their content hashes, or (``old``
    indexed before content hashes existed) by their tail fingerprints, else size + mtime."""
    if old.content_xxh64 is not None and new.content_xxh64 is not None:
        return old.size == new.size and old.content_xxh64 == new.content_xxh64
    if old.fingerprint is not None:
        return old.fingerprint == new.fingerprint
    return old.size == new.size and (old.mtime_ns is None or new.mtime_ns is None or old.mtime_ns == new.mtime_ns)


def load_index_bytes(store: Store, root: str, entry: FileEntry) -> bytes | None:
    """The verified container bytes of ``entry``'s index (None if it has none).

    Raises :class:`CorruptIndexError` naming the index file when it is missing, outside the
    root, of another size or fails its checksum.
    """
    ref = entry.index
    if ref is None:
        return None
    if ref.embedded is not None:
        source = f"{join(root, entry.path)} (embedded index)"
        try:
            data = base64.b64decode(ref.embedded, validate=True)
        except (binascii.Error, ValueError) as e:
            raise CorruptIndexError(f"embedded index is not base64: {e}", source=source) from None
    else:
        source = join(root, ref.file)
        ensure_inside(store, root, source, "index file")
        data = read_bytes(store, source, "index file")
    if len(data) != ref.size:
        raise CorruptIndexError(f"index holds {len(data)} bytes, the manifest says {ref.size}{entry.where_listed()};"
                                " rebuild with arrowidx build", source=source)  # fmt: skip
    if ref.xxh64 is not None and checksum(data) != ref.xxh64:
        raise CorruptIndexError(f"index bytes do not match their checksum in the manifest{entry.where_listed()} (damaged);"
                                " rebuild with arrowidx build", source=source)  # fmt: skip
    return data


def deletion_record_length(ref: DeletionRef) -> int:
    """Bytes of the deletion file holding ``ref``'s vector: a 32-bit record is its length
    field, that many bytes and a CRC (the range's length is the length field's value, as
    Paimon's index manifest records it); a 64-bit record is the range."""
    return ref.length if ref.bitmap64 else ref.length + 8


def deletion_vector_of(entry: FileEntry, path: str, record: bytes) -> DeletionVector:
    """``entry``'s deletion vector from the bytes of its record (read alone from the
    deletion file ``path``), verified: the range must lie in the file and match its
    checksum in the manifest, and the record must parse. Errors name the deletion file (or
    the manifest, when its range is what is wrong)."""
    ref = entry.deletion
    end = ref.offset + ref.length
    if len(record) != deletion_record_length(ref):
        message = f"deletion vector of {entry.path} at bytes [{ref.offset}, {ref.offset + deletion_record_length(ref)}) is past the end of {path}"
        if entry.listed:  # the manifest's range is what is wrong
            raise CorruptManifestError(message, source=entry.listed[0], field=f"{entry.listed[1]}.deletion.offset")
        raise CorruptIndexError(message, source=path, offset=ref.offset)
    if ref.xxh64 is not None and checksum(record[: ref.length]) != ref.xxh64:
        raise CorruptIndexError(
            f"deletion vector of {entry.path} at bytes [{ref.offset}, {end}) does not match its checksum in the"
            f" manifest{entry.where_listed()} (the file is damaged, or the manifest points at another vector);"
            " restore them from a backup",
            source=path, offset=ref.offset,
        )  # fmt: skip
    try:  # the record alone, behind a deletion file's version byte
        vectors = read_deletion_vectors(b"\x01" + record, ranges={entry.path: (1, ref.length, ref.cardinality)}, bitmap64=ref.bitmap64)
    except CorruptIndexError as e:
        raise CorruptIndexError(e.detail, source=path, offset=ref.offset + max(0, (e.offset or 1) - 1)) from None
    return vectors[entry.path]
